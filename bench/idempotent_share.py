"""How much of a first site.yml run an idempotent re-run costs, on fresh lab nodes.

A re-run is what operators do every day (drift checks, rolling updates), so it must change
nothing and stay a small share of the first run: each role writes one templated file and
reloads once rather than running a module per item. Brings up its own lab (fresh containers),
runs site.yml once, then re-runs it --repeat times (best kept), and prints both and the share.

The lab is reached over SSH (its default, as a real cluster); --connection docker measures the
`docker exec` connection instead, so the two can be set side by side. Each run keeps its facts
in a cache of its own: a first run gathers them, as on fresh nodes.

    python bench/idempotent_share.py [--size small] [--repeat 2] [--connection ssh|docker] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ansible_cfg import PROJECT, run_site  # the same timing of one site.yml run

LAB = "cfbench"


def clusterforge(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="small", help="lab size (default small: a head and two compute nodes)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--connection", default="ssh", choices=("ssh", "docker"), help="how Ansible reaches the lab")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "CLUSTERFORGE_STATE_DIR": state}
        # run_site's ansible-playbook inherits it: no facts from another lab's nodes of the same names.
        os.environ["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = str(Path(state) / "facts")
        clusterforge(env, "lab", "down", "--name", LAB)
        clusterforge(env, "lab", "up", "--size", args.size, "--name", LAB, "--connection", args.connection)
        try:
            inventory = Path(state) / "labs" / LAB / "lab.topology.yml"
            config = PROJECT / "ansible.cfg"
            first = run_site(config, inventory, idempotent=False)
            rerun = min(run_site(config, inventory) for _ in range(args.repeat))
        finally:
            clusterforge(env, "lab", "down", "--name", LAB)
    figures = {
        "connection": args.connection,
        "first_wall_s": round(first[0], 1),
        "first_cpu_s": round(first[1], 1),
        "rerun_wall_s": round(rerun[0], 1),
        "rerun_cpu_s": round(rerun[1], 1),
        "share_wall": round(rerun[0] / first[0], 3),
        "share_cpu": round(rerun[1] / first[1], 3),
    }
    print(f"connection {args.connection}")
    print(f"first run  wall {first[0]:6.1f} s   controller cpu {first[1]:6.1f} s")
    print(f"re-run     wall {rerun[0]:6.1f} s   controller cpu {rerun[1]:6.1f} s   (best of {args.repeat}, 0 changed)")
    print(f"share of the first run: wall {figures['share_wall']:.2f}, cpu {figures['share_cpu']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
