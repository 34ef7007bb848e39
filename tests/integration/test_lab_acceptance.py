"""Burn-in acceptance and the idle-node checks on the lab's real Slurm (Debian 13, Slurm 24.11).

acceptance.yml runs on node01 and node02 of the shared lab: the lab has no GPU, DCGM, nccl-tests,
InfiniBand or torch, so those steps say so ("skipped: no hardware", "skipped: ... not found");
node02 judges two REAL perfquery captures replayed from its own disk (labelled replayed) between
which port error counters grew, so node02 fails on its ib_counters step and node01 does not.

The idle checks (roles/slurm_idle_checks, installed by the lab's slurm stage) run with a job on
node01: node02 is reserved and checked, node01 is not taken and its job keeps running.
"""

from __future__ import annotations

import argparse
import json
import time

import pytest

from clusterforge.cli import check as check_cli
from tests.integration.conftest import TEST_LAB, clusterforge, put_files
from tests.unit.plugins.module_utils.samples import fixture

pytestmark = pytest.mark.lab
REPLAY_DIR = "/var/tmp/clusterforge-burnin-replay"


def _container(docker_client, node: str):
    return docker_client.containers.get(f"clusterforge-{TEST_LAB}-{node}")


def _run(container, *argv: str) -> tuple[int, str]:
    done = container.exec_run(list(argv))
    return done.exit_code, done.output.decode(errors="replace")


def test_acceptance_on_the_lab_skips_hardware_steps_and_names_the_failed_step(lab, docker_client, tmp_path):
    put_files(
        _container(docker_client, "node02"),
        REPLAY_DIR,
        {
            "perfquery-before.txt": fixture("perfquery", "hca-2port-extended-clean-osc.txt").read_bytes(),
            "perfquery-after.txt": fixture(
                "perfquery", "hca-1port-extended-link-downed-xmit-discards-osc.txt"
            ).read_bytes(),
        },
    )
    reports = tmp_path / "reports"
    done = clusterforge(
        "run",
        "acceptance",
        "-i",
        str(lab["inventory"]),
        "-l",
        "node01,node02",
        "-e",
        f"clusterforge_validation_replay_dir={{{{ '{REPLAY_DIR}' if inventory_hostname == 'node02' else '' }}}}",
        "-e",
        f"clusterforge_report_dir={reports}",
        "-e",
        "clusterforge_validation_run_id=lab",
        "-e",
        "clusterforge_acceptance_training_seconds=10",
        env=lab["env"],
        check=False,
    )
    assert done.returncode == 2, done.stdout[-4000:] + done.stderr[-2000:]
    assert "hosts: 2  failed: 1  unreachable: 0" in done.stdout
    assert "FAILED node02: Fail hosts whose checks failed: ib_counters:" in done.stdout

    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    assert check_cli.run(parser.parse_args(["report", str(reports / "lab"), "-o", str(out)])) == 0
    document = json.loads((out / "report.json").read_text())
    nodes = {node["host"]: node for node in document["nodes"]}
    assert nodes["node01"]["status"] == "skipped"  # nothing to burn in: no check passed or failed
    assert nodes["node02"]["status"] == "fail"
    checks = {host: {c["check"]: c for c in node["checks"]} for host, node in nodes.items()}
    # Live on node01: the lab node has no GPU, no InfiniBand port, no torch, and says so.
    hardware = {name: c["message"] for name, c in checks["node01"].items() if name.startswith(("dcgm", "nccl", "ib_"))}
    assert len(hardware) == 3 and set(hardware.values()) == {"skipped: no hardware"}, hardware
    assert checks["node01"]["training.burnin"]["message"].startswith("skipped: ")
    # node02: the counters that grew, judged from replayed real captures, said to be replayed.
    grown = checks["node02"]["ib_counters.hca/1"]
    assert grown["status"] == "fail" and "link_downed 0 -> 1 (+1)" in grown["message"]
    assert grown["origin"] == "replayed from recorded outputs"
    junit = (out / "junit.xml").read_text()
    assert "node02" in junit and "ib_counters" in junit


@pytest.fixture
def busy_node01(lab, docker_client):
    head = _container(docker_client, "head01")
    # The shared lab has Slurm once test_lab_site or another Slurm test ran; alone, this applies it.
    if _run(head, "sinfo", "--noheader")[0] != 0:
        clusterforge("run", "slurm", "-i", str(lab["inventory"]), env=lab["env"])
    rc, job = _run(head, "sbatch", "--parsable", "--nodelist=node01", "--time=10", "--wrap", "sleep 600")
    assert rc == 0, job
    job = job.strip().split(";")[0]
    deadline = time.monotonic() + 180
    while _run(head, "squeue", "-h", "-j", job, "-o", "%T")[1].strip() != "RUNNING":
        assert time.monotonic() < deadline, "the job on node01 did not start"
        time.sleep(1)
    # The idle checks take the nodes sinfo calls idle: node02 may still be registering with a Slurm
    # applied just now, or be marked not responding (idle*) for a ping on a loaded machine.
    deadline = time.monotonic() + 180
    while (state := _run(head, "sinfo", "-h", "-N", "-n", "node02", "-o", "%t")[1].strip()) != "idle":
        assert time.monotonic() < deadline, f"node02 is {state!r}, not idle"
        time.sleep(2)
    yield head, job
    _run(head, "scancel", job)


def test_idle_checks_take_the_idle_node_and_never_the_busy_one(busy_node01, docker_client):
    head, job = busy_node01
    # Slurm itself refuses a reservation starting now on a node with a running job: the premise.
    rc, refused = _run(
        head, "scontrol", "create", "reservation", "ReservationName=cftest-busy", "StartTime=now", "Duration=5",
        "Users=root", "Flags=MAINT", "Nodes=node01",
    )  # fmt: skip
    assert rc != 0 and "Requested nodes are busy" in refused, refused

    rc, enabled = _run(head, "systemctl", "is-enabled", "clusterforge-idle-checks.timer")
    assert enabled.strip() == "enabled"
    rc, output = _run(head, "systemctl", "start", "clusterforge-idle-checks.service")
    assert rc == 0, output + _run(head, "journalctl", "-u", "clusterforge-idle-checks", "--no-pager", "-n", "40")[1]

    report = json.loads(_run(head, "cat", "/var/lib/clusterforge/idle-checks/last.json")[1])
    assert list(report["nodes"]) == ["node02"], report
    assert report["nodes"]["node02"]["status"] == "pass"
    checked = _container(docker_client, "node02")
    rc, log = _run(checked, "sh", "-c", "cat /var/log/slurm/idle-check-node02-*.out")
    assert rc == 0 and "dcgmi diag -r 2: skipped: no hardware" in log, log
    assert "all_reduce_perf: skipped: no hardware" in log
    rc, _ = _run(_container(docker_client, "node01"), "sh", "-c", "ls /var/log/slurm/idle-check-*")
    assert rc != 0  # no check job ever ran on the busy node
    assert _run(head, "squeue", "-h", "-j", job, "-o", "%T")[1].strip() == "RUNNING"
    assert "No reservations in the system" in _run(head, "scontrol", "show", "reservation")[1]
    # node02 passed: not drained.
    assert "drain" not in _run(head, "sinfo", "-h", "-n", "node02", "-o", "%t")[1]
