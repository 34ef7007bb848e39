"""Wall time of `clusterforge run --slices N` against `--slices 1`, side by side in one run, over
many hosts reached with the local connection and tasks that run on the controller (debug,
set_fact): what is measured is mostly Ansible's main process, the per host-task cost that slicing
spreads over N processes. The ratio depends on the controller's free cores; on a busy 2-core
machine expect little.

    python bench/slices.py [--hosts 400] [--tasks 4] [--slices 4] [--repeat 1]
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

PROJECT = Path(__file__).resolve().parent.parent


def write_inputs(directory: Path, hosts: int, tasks: int) -> tuple[Path, Path]:
    local = f"ansible_connection=local ansible_python_interpreter={sys.executable} ansible_become=false"
    inventory = directory / "hosts.ini"
    names = [f"node{index:05d}" for index in range(1, hosts + 1)]
    # Units of 16 hosts, as a topology inventory's suN groups.
    lines = ["[compute]", *(f"{name} {local}" for name in names)]
    for start in range(0, hosts, 16):
        lines += [f"[su{start // 16 + 1}]", *names[start : start + 16]]
    inventory.write_text("\n".join(lines) + "\n")
    playbook = directory / "play.yml"
    steps = "".join(
        f"    - name: Step {step}\n      ansible.builtin.set_fact:\n        bench_step_{step}: {step}\n"
        for step in range(tasks)
    )
    playbook.write_text(f"---\n- name: Controller-side tasks\n  hosts: all\n  gather_facts: false\n  tasks:\n{steps}")
    return inventory, playbook


def run(inventory: Path, playbook: Path, slices: int, state: Path) -> float:
    env = {**os.environ, "CLUSTERFORGE_STATE_DIR": str(state)}
    command = [sys.executable, "-m", "clusterforge.cli", "run", str(playbook), "-i", str(inventory), "--json"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--slices", str(slices)], cwd=PROJECT, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    summary = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    if done.returncode != 0 or summary.get("totals", {}).get("failed"):
        raise SystemExit(f"--slices {slices} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--slices", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, best taken")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        inventory, playbook = write_inputs(directory, args.hosts, args.tasks)
        best = {}
        for count in (1, args.slices):
            best[count] = min(run(inventory, playbook, count, directory / "state") for _ in range(args.repeat))
    print(f"{args.hosts} hosts x {args.tasks} tasks, {os.cpu_count()} CPUs")
    for count, wall in best.items():
        print(f"--slices {count:<3} {wall:7.1f} s")
    print(f"ratio --slices {args.slices} / --slices 1: {best[args.slices] / best[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
