"""What `clusterforge run` costs over plain `ansible-playbook` for the same idempotent re-run.

Brings up a lab of its own, converges it once with ansible-playbook, then re-runs the playbook
--repeat times each way, alternating (plain, clusterforge run, plain, ...) so that a machine
shared with other work weighs on both alike; prints the best wall and controller CPU of each and
their ratio. Both read and write the same fact cache (ANSIBLE_CACHE_PLUGIN_CONNECTION, in the
bench's own state directory), as a user's two ways of running would; every re-run must change
nothing.

--also PYTHON adds a third series: `PYTHON -m clusterforge.cli run` (another install of
clusterforge, e.g. a checkout from before a change), timed in the same rounds.

    flock /tmp/cf-docker.lock python bench/runner_overhead.py [--playbook site.yml] [--size small]
        [--repeat 2] [--also /path/to/other/.venv/bin/python] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ansible_cfg import BIN, PROJECT

LAB = "cfrunner"


def clusterforge(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], env=env, check=True, stdout=subprocess.DEVNULL)


def timed(command: list[str], env: dict) -> tuple[float, float, str, int]:
    """Wall and CPU seconds (the process and the children it waited for: ansible-playbook's
    workers), its output (stdout, then stderr) and exit code."""
    with tempfile.TemporaryFile("w+") as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        output = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        errors.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, output + errors.read(), os.waitstatus_to_exitcode(status)


def plain(env: dict, inventory: Path, playbook: str, idempotent: bool = True) -> tuple[float, float]:
    wall, cpu, output, code = timed([str(BIN / "ansible-playbook"), "-i", str(inventory), playbook], env)
    if code != 0:
        raise SystemExit(f"ansible-playbook {playbook} failed:\n{output[-3000:]}")
    if idempotent and ("changed=0" not in output or re.search(r"changed=[1-9]", output)):
        raise SystemExit(f"the plain re-run changed something: not idempotent\n{output[-2000:]}")
    return wall, cpu


def through_runner(python: str, env: dict, inventory: Path, playbook: str) -> tuple[float, float]:
    command = [python, "-m", "clusterforge.cli", "run", playbook, "-i", str(inventory), "--json"]
    wall, cpu, output, code = timed(command, env)
    if code != 0:
        raise SystemExit(f"{python} -m clusterforge.cli run {playbook} failed (rc {code}):\n{output[-3000:]}")
    summary, _ = json.JSONDecoder().raw_decode(output)  # stdout's JSON; stderr follows it
    changed = {host: counts["changed"] for host, counts in summary["hosts"].items() if counts["changed"]}
    if changed:
        raise SystemExit(f"the re-run through clusterforge run changed something: {changed}")
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--playbook", default="site.yml", help="playbook to re-run (default site.yml)")
    parser.add_argument("--size", default="small", help="lab size (default small: a head and two compute nodes)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--also", metavar="PYTHON", help="time this interpreter's clusterforge run too")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    series = {"ansible-playbook": [], "clusterforge run": []}
    if args.also:
        series[f"clusterforge run ({args.also})"] = []
    with tempfile.TemporaryDirectory() as state:
        env = {
            **os.environ,
            "CLUSTERFORGE_STATE_DIR": state,
            "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            # One fact cache for both ways, of this lab's nodes only.
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(Path(state) / "facts"),
        }
        clusterforge(env, "lab", "down", "--name", LAB)
        clusterforge(env, "lab", "up", "--size", args.size, "--name", LAB)
        try:
            inventory = Path(state) / "labs" / LAB / "lab.topology.yml"
            plain(env, inventory, args.playbook, idempotent=False)  # converge: both measure a re-run
            for _ in range(args.repeat):
                series["ansible-playbook"].append(plain(env, inventory, args.playbook))
                series["clusterforge run"].append(through_runner(sys.executable, env, inventory, args.playbook))
                if args.also:
                    series[f"clusterforge run ({args.also})"].append(
                        through_runner(args.also, env, inventory, args.playbook)
                    )
        finally:
            clusterforge(env, "lab", "down", "--name", LAB)
    best = {name: min(runs) for name, runs in series.items()}
    base = best["ansible-playbook"]
    figures = {"playbook": args.playbook, "size": args.size, "repeat": args.repeat, "series": {}}
    for name, (wall, cpu) in best.items():
        figures["series"][name] = {
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "wall_ratio": round(wall / base[0], 2),
            "all_wall_s": [round(w, 1) for w, _ in series[name]],
        }
        print(
            f"{name:40} wall {wall:6.1f} s ({wall / base[0]:.2f}x)   controller cpu {cpu:6.1f} s "
            f"(best of {len(series[name])}: {', '.join(f'{w:.1f}' for w, _ in series[name])})"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
