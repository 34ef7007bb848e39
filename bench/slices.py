"""`clusterforge run --slices N` against `--slices 1`, side by side in one run, over many hosts
reached with the local connection and tasks that run on the controller (set_fact): what is
measured is mostly Ansible's main process, the per host-task cost that slicing spreads over N
processes. Per run: wall time, and each ansible-playbook main process's own CPU (from
bench/fleet_plugins' callback in every slice): in its plays (the serial part, which should fall
as 1/N per slice) and in all (with the start: imports, and the whole inventory read by every
slice). The wall ratio depends on the controller's free cores; on a busy 2-core machine expect
little.

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

from fleet import PLUGINS, callbacks_enabled  # the same callback, enabled beside the project's

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


def run(inventory: Path, playbook: Path, slices: int, state: Path) -> tuple[float, list[dict]]:
    """Wall seconds, and per ansible-playbook process its main CPU in plays and in all."""
    processes = state / f"main-cpu-{slices}-{time.monotonic_ns()}"
    processes.mkdir(parents=True)
    env = {
        **os.environ,
        "CLUSTERFORGE_STATE_DIR": str(state),
        "ANSIBLE_CALLBACK_PLUGINS": str(PLUGINS / "callback"),
        "ANSIBLE_CALLBACKS_ENABLED": ",".join(callbacks_enabled(PROJECT / "ansible.cfg")),
        "FLEET_TASKS_OUT": str(processes),
    }
    command = [sys.executable, "-m", "clusterforge.cli", "run", str(playbook), "-i", str(inventory), "--json"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--slices", str(slices)], cwd=PROJECT, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    summary = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    if done.returncode != 0 or summary.get("totals", {}).get("failed"):
        raise SystemExit(f"--slices {slices} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    mains = []
    for path in processes.glob("*.json"):
        recorded = json.loads(path.read_text())
        mains.append({"plays": sum(play["main_cpu_s"] for play in recorded["plays"]), "all": recorded["main_cpu_s"]})
    if len(mains) != slices:
        raise SystemExit(f"--slices {slices}: {len(mains)} ansible-playbook processes recorded their CPU, not {slices}")
    return wall, mains


def first(measured: tuple[float, list[dict]]) -> float:
    return measured[0]


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
            best[count] = min(
                (run(inventory, playbook, count, directory / "state") for _ in range(args.repeat)), key=first
            )
    print(f"{args.hosts} hosts x {args.tasks} tasks, {os.cpu_count()} CPUs")
    print("main process CPU per ansible-playbook: in plays (the serial part) and in all (with its start)")
    for count, (wall, mains) in best.items():
        plays = ", ".join(f"{main['plays']:.1f}" for main in mains)
        every = ", ".join(f"{main['all']:.1f}" for main in mains)
        print(f"--slices {count:<3} wall {wall:7.1f} s   main CPU in plays [{plays}] s, in all [{every}] s")
    single = best[1][1][0]["plays"]
    widest = max(main["plays"] for main in best[args.slices][1])
    print(f"ratio --slices {args.slices} / --slices 1: wall {best[args.slices][0] / best[1][0]:.2f}")
    print(f"busiest slice's main CPU in plays / one process's: {widest / single:.2f} (1/N = {1 / args.slices:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
