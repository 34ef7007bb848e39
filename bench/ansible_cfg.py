"""Controller time of an idempotent re-run of site.yml on the lab: clusterforge's ansible.cfg
against stock Ansible settings, side by side in one run.

The stock configuration keeps only what is needed to find the project's roles and plugins.
Each setting is measured on warm nodes (site.yml converged first), best of --repeat runs:
wall time and the controller's CPU time (ansible-playbook and its forks). The lab is reached
over SSH by default, so the SSH settings (pipelining, ControlPersist) show here with forks,
smart gathering and the fact cache; on a lab up with `--connection docker` they do not.

    clusterforge lab up --size medium && python bench/ansible_cfg.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
STOCK = """[defaults]
roles_path = {p}/roles
library = {p}/plugins/modules
module_utils = {p}/plugins/module_utils
inventory_plugins = {p}/plugins/inventory
filter_plugins = {p}/plugins/filter
[inventory]
enable_plugins = topology, host_list, script, auto, yaml, ini, toml
"""


def run_site(config: Path, inventory: Path, idempotent: bool = True) -> tuple[float, float]:
    """Wall and controller CPU seconds of one site.yml run; a re-run (idempotent) must change nothing."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(config)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(BIN / "ansible-playbook"), "-i", str(inventory), "site.yml"],
        cwd=PROJECT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"site.yml failed with {config}:\n{output[-3000:]}")
    if idempotent and ("changed=0" not in output or re.search(r"changed=[1-9]", output)):
        raise SystemExit(f"the re-run with {config} changed something: not idempotent\n{output[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--inventory", help="default: the running lab's topology")
    args = parser.parse_args()
    state = Path(os.environ.get("CLUSTERFORGE_STATE_DIR", Path.home() / ".local/state/clusterforge"))
    inventory = Path(args.inventory or state / "labs" / "lab" / "lab.topology.yml")
    if not inventory.exists():
        raise SystemExit(f"{inventory} not found: bring the lab up first (clusterforge lab up)")
    with tempfile.TemporaryDirectory() as workdir:
        stock = Path(workdir) / "stock.cfg"
        stock.write_text(STOCK.format(p=PROJECT))
        ours = PROJECT / "ansible.cfg"
        run_site(ours, inventory)  # converge once, so both sides measure a re-run
        best = {}
        for name, config in (("clusterforge", ours), ("stock", stock)):
            runs = [run_site(config, inventory) for _ in range(args.repeat)]
            best[name] = min(runs)
            print(
                f"{name:12} wall {best[name][0]:6.1f} s   controller cpu {best[name][1]:6.1f} s   (best of {len(runs)})"
            )
    print(
        f"ratio clusterforge/stock: wall {best['clusterforge'][0] / best['stock'][0]:.2f}, "
        f"cpu {best['clusterforge'][1] / best['stock'][1]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
