"""Scale benchmark for the topology inventory (100,000 GPUs = 12,500 8-GPU nodes).

Side by side in one run, on the same machine:
  * `ansible-inventory -i <topology> --list` through the topology plugin, against
  * `ansible-inventory -i <static.yml> --list`, the same inventory rendered as static YAML
    and read by Ansible's yaml plugin (outputs are checked to be identical),
  * the same two with `--list --export` (what AWX's inventory sync runs: group variables
    once per group instead of merged into every host),
  * the same two with --graph (parsing only, without the per-host variable dump),
  * `clusterforge topology validate <topology>`.
Reports wall time, CPU time and peak memory of each, and the ratios; then the phases of
--list on each route (bench/inventory_phases.py): parsing the source, merging every host's
variables, encoding the JSON. The last two are Ansible's own work, the same on both routes,
and their share of the static route bounds the ratio any inventory source can reach.
Target: the plugin's --list within a tenth of the static route; validate under 5 seconds.

    python bench/inventory_scale.py [--repeat 2] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_scale_topology import scale_topology

from clusterforge.topology import load
from clusterforge.topology.inventory import build

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
BIN = Path(sys.executable).parent


def measure(command: list[str], stdout=subprocess.DEVNULL) -> dict:
    """Wall and CPU seconds and peak RSS of one child process (os.wait4's rusage)."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=stdout, stderr=errors, env=env, cwd=PROJECT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr}")
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
    }


def _best(runs: list[dict], key: str = "wall_s") -> dict:
    """The fastest of repeated measurements: slower runs only add this machine's noise."""
    return min(runs, key=lambda found: found[key])


def _normalised(path: Path) -> dict:
    """`ansible-inventory --list` output with member lists sorted: the order of groups
    differs between the two routes, their content must not."""
    inventory = json.loads(path.read_text())
    for group in inventory.values():
        for key in ("hosts", "children"):
            if isinstance(group, dict) and key in group:
                group[key] = sorted(group[key])
    return inventory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement, best kept (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cf-bench-") as workdir:
        work = Path(workdir)
        topology = work / "gpu100k.topology.yml"
        topology.write_text(yaml.safe_dump(scale_topology(), sort_keys=False))
        plan = load(topology, links=False)
        static = work / "gpu100k-static.yml"
        static.write_text(yaml.dump(build(plan).to_yaml_dict(), Dumper=yaml.CSafeDumper, sort_keys=False))
        gpus = sum(
            plan.topology.node_types[h.node_type].gpu.count
            for h in plan.hosts
            if plan.topology.node_types[h.node_type].gpu
        )
        results: dict = {
            "hosts": len(plan.hosts),
            "gpus": gpus,
            "static_yaml_mib": round(static.stat().st_size / 2**20, 1),
        }
        inventory = str(BIN / "ansible-inventory")
        for mode in ("--list", "--list --export", "--graph"):
            outputs, runs = {}, {"plugin": [], "static": []}
            # Interleaved repeats: this machine's speed drifts by a third over minutes, and the
            # two routes should see the same drift.
            for _ in range(args.repeat):
                for route, source in (("plugin", topology), ("static", static)):
                    outputs[route] = work / f"{route}{mode.replace(' ', '')}.out"
                    with outputs[route].open("w") as handle:
                        runs[route].append(measure([inventory, "-i", str(source), *mode.split()], stdout=handle))
            for route, found in runs.items():
                results[f"{route} {mode}"] = _best(found)
            if mode != "--graph" and _normalised(outputs["plugin"]) != _normalised(outputs["static"]):
                raise SystemExit(f"the plugin and the static YAML give different inventories ({mode})")
            results[f"ratio {mode} (plugin/static wall)"] = round(
                results[f"plugin {mode}"]["wall_s"] / results[f"static {mode}"]["wall_s"], 3
            )
        # Where --list spends its time on each route (bench/inventory_phases.py): only the
        # parse differs; merging every host's variables and encoding the JSON is the same work.
        for route, source in (("plugin", topology), ("static", static)):
            phases = work / f"{route}-phases.json"
            found = []
            for _ in range(args.repeat):
                measure([sys.executable, str(HERE / "inventory_phases.py"), str(phases), "-i", str(source), "--list"])
                found.append(json.loads(phases.read_text()))
            results[f"{route} --list phases"] = _best(found, "total_s")
        shared = results["static --list phases"]
        results["shared per-host work / static --list"] = round(
            (shared["host_vars_s"] + shared["json_s"]) / shared["total_s"], 3
        )
        validate = [str(BIN / "clusterforge"), "topology", "validate", str(topology)]
        results["validate"] = _best([measure(validate) for _ in range(args.repeat)])
    for key, value in results.items():
        print(f"{key:52} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
