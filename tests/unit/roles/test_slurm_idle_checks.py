"""roles/slurm_idle_checks/files/clusterforge-idle-checks against stand-ins for Slurm's commands.

The stand-ins (sinfo, scontrol, sbatch, written below onto PATH) are labelled as such: they print
what the test says and record what they were asked. Real Slurm's side (a reservation refused on a
busy node, the jobs really running) is the lab test's (tests/integration/test_lab_acceptance.py).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import PROJECT

SCRIPT = PROJECT / "roles" / "slurm_idle_checks" / "files" / "clusterforge-idle-checks"
_loader = importlib.machinery.SourceFileLoader("idle_checks", str(SCRIPT))
idle_checks = importlib.util.module_from_spec(importlib.util.spec_from_loader("idle_checks", _loader))
_loader.exec_module(idle_checks)

# A `sinfo -h -N -o '%N %t'` listing written for the test with the compact state names of
# sinfo(1): idle, mix, alloc, drain, idle* (not responding), idle~ (powered down), resv, and a node
# listed twice (in two partitions).
SINFO = (
    "node01 alloc\nnode02 idle\nnode03 mix\nnode04 drain\nnode05 idle*\nnode06 idle~\nnode07 resv\n"
    "node02 idle\nnode08 idle\n"
)

STAND_IN = """#!{python}
# Stand-in for Slurm's {name} (tests/unit/roles/test_slurm_idle_checks.py).
import json, os, sys
fake = os.environ["FAKE_SLURM"]
stdin = sys.stdin.read() if "{name}" == "sbatch" else ""
with open(os.path.join(fake, "calls.jsonl"), "a") as log:
    log.write(json.dumps({{"argv": ["{name}", *sys.argv[1:]], "stdin": stdin}}) + "\\n")
if "{name}" == "sinfo":
    print(open(os.path.join(fake, "sinfo.txt")).read(), end="")
elif "{name}" == "scontrol" and sys.argv[1:3] == ["create", "reservation"]:
    busy = os.path.join(fake, "busy")
    if os.path.exists(busy):  # a job started on a node since sinfo: Slurm's refusal, then the new state
        os.rename(os.path.join(fake, "sinfo-after.txt"), os.path.join(fake, "sinfo.txt"))
        os.remove(busy)
        sys.exit("Error creating the reservation: Requested nodes are busy")
    print("Reservation " + sys.argv[3].split("=", 1)[1])
elif "{name}" == "sbatch":
    node = [a for a in sys.argv if a.startswith("--nodelist=")][0].split("=", 1)[1]
    print("4242;cluster")
    sys.exit(1 if os.path.exists(os.path.join(fake, "fail-" + node)) else 0)
"""


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    fake = tmp_path / "slurm"
    fake.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sinfo", "scontrol", "sbatch"):
        path = bin_dir / name
        path.write_text(STAND_IN.format(python=sys.executable, name=name))
        path.chmod(0o755)
    config = tmp_path / "idle-checks.json"
    config.write_text(
        json.dumps(
            {
                "partition": "",
                "max_nodes": 0,
                "dcgm_level": 2,
                "nccl_test": "all_reduce",
                "nccl_bin_dirs": ["/opt/nccl-tests/build"],
                "duration_minutes": 30,
                "drain_on_failure": True,
                "state_dir": str(tmp_path / "state"),
                "job_output_dir": "/var/log/slurm",
            }
        )
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM": str(fake)}
    env["CLUSTERFORGE_IDLE_CHECKS_CONFIG"] = str(config)

    def run() -> tuple[subprocess.CompletedProcess, list[dict], dict]:
        done = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
        calls = [json.loads(line) for line in (fake / "calls.jsonl").read_text().splitlines()]
        report = json.loads((tmp_path / "state" / "last.json").read_text())
        return done, calls, report

    return fake, run


def commands(calls: list[dict], name: str) -> list[list[str]]:
    return [call["argv"] for call in calls if call["argv"][0] == name]


def test_only_idle_nodes_are_chosen_once_each():
    assert idle_checks.idle_nodes(SINFO) == ["node02", "node08"]
    assert idle_checks.idle_nodes(SINFO, max_nodes=1) == ["node02"]
    assert idle_checks.idle_nodes("") == []


def test_a_round_reserves_the_idle_nodes_checks_each_and_deletes_the_reservation(slurm):
    fake, run = slurm
    (fake / "sinfo.txt").write_text(SINFO)
    done, calls, report = run()
    assert done.returncode == 0, done.stderr
    [create] = [argv for argv in commands(calls, "scontrol") if argv[1] == "create"]
    assert "Nodes=node02,node08" in create and "Flags=MAINT" in create and "StartTime=now" in create
    assert "Duration=35" in create  # the jobs' 30 minutes and a margin: a job must end before its reservation
    assert all("--time=30" in argv for argv in commands(calls, "sbatch"))
    reservation = next(arg for arg in create if arg.startswith("ReservationName=")).split("=", 1)[1]
    jobs = commands(calls, "sbatch")
    assert sorted(next(a for a in argv if a.startswith("--nodelist=")) for argv in jobs) == [
        "--nodelist=node02",
        "--nodelist=node08",
    ]
    assert all(f"--reservation={reservation}" in argv and "--exclusive" in argv for argv in jobs)
    assert commands(calls, "scontrol")[-1] == ["scontrol", "delete", f"ReservationName={reservation}"]
    assert report["nodes"] == {
        "node02": {"job": "4242", "rc": 0, "status": "pass"},
        "node08": {"job": "4242", "rc": 0, "status": "pass"},
    }


def test_a_node_that_became_busy_before_the_reservation_is_left_out(slurm):
    fake, run = slurm
    (fake / "sinfo.txt").write_text(SINFO)
    (fake / "sinfo-after.txt").write_text(SINFO.replace("node02 idle", "node02 alloc"))
    (fake / "busy").write_text("")
    done, calls, report = run()
    assert done.returncode == 0, done.stderr
    creates = [argv for argv in commands(calls, "scontrol") if argv[1] == "create"]
    assert [next(a for a in argv if a.startswith("Nodes=")) for argv in creates] == [
        "Nodes=node02,node08",
        "Nodes=node08",
    ]
    assert [next(a for a in argv if a.startswith("--nodelist=")) for argv in commands(calls, "sbatch")] == [
        "--nodelist=node08"
    ]
    assert list(report["nodes"]) == ["node08"]


def test_a_failed_check_drains_its_node_with_the_job_in_the_reason(slurm):
    fake, run = slurm
    (fake / "sinfo.txt").write_text(SINFO)
    (fake / "fail-node08").write_text("")
    done, calls, report = run()
    assert done.returncode == 1
    [update] = [argv for argv in commands(calls, "scontrol") if argv[1] == "update"]
    assert update[2:4] == ["NodeName=node08", "State=DRAIN"]
    assert update[4].startswith("Reason=clusterforge idle check failed (job 4242, exit 1)")
    assert report["nodes"]["node08"]["status"] == "fail" and report["nodes"]["node02"]["status"] == "pass"
    assert commands(calls, "scontrol")[-1][1] == "delete"


def test_no_idle_node_creates_nothing(slurm):
    fake, run = slurm
    (fake / "sinfo.txt").write_text("node01 alloc\nnode03 mix\n")
    done, calls, report = run()
    assert done.returncode == 0
    assert commands(calls, "scontrol") == [] and commands(calls, "sbatch") == []
    assert report["skipped"] == "no idle node"


def test_the_job_script_is_bash_and_skips_without_gpus(tmp_path):
    script = idle_checks.job_script({"dcgm_level": 3, "nccl_test": "all_reduce", "nccl_bin_dirs": ["/opt/x"]})
    path = tmp_path / "job.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
    if not any(Path("/dev").glob("nvidia[0-9]*")):
        done = subprocess.run(["bash", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0
        assert "dcgmi diag -r 3: skipped: no hardware" in done.stdout
        assert "all_reduce_perf: skipped: no hardware" in done.stdout
