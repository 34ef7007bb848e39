"""playbooks/rolling_update.yml on the lab: batch by batch, and a failed batch stops the roll."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clusterforge import errors
from tests.integration.conftest import TEST_LAB, clusterforge

pytestmark = pytest.mark.lab


def roll(lab, *extra: str):
    return clusterforge(
        "run",
        "rolling-update",
        "-i",
        str(lab["inventory"]),
        "--stage",
        "base",
        "--serial",
        "1",
        "-e",
        "rolling_update_hosts=all",
        "--json",
        *extra,
        env=lab["env"],
        check=False,
    )


def test_the_roll_goes_batch_by_batch(lab):
    # The lab runs Slurm (site.yml's slurm stage): draining and resuming a node are changes of
    # their own, so this roll leaves Slurm out (the drain is tested below).
    done = roll(lab, "-e", "node_drain_slurm=false")
    assert done.returncode == errors.EXIT_OK, done.stdout[-3000:] + done.stderr
    summary = json.loads(done.stdout)
    assert sorted(summary["hosts"]) == ["head01", "node01", "node02"]
    assert summary["totals"]["failed"] == 0
    again = json.loads(roll(lab, "-e", "node_drain_slurm=false").stdout)
    assert again["totals"]["changed_tasks"] == 0, "a second roll of the same stage changes nothing"


def test_a_failed_batch_leaves_the_rest_untouched(lab):
    # An invalid value fails the role's input check on the first batch (head01).
    done = roll(lab, "-e", "os_tuning_hugepages=-1")
    assert done.returncode == errors.EXIT_HOSTS_FAILED, done.stdout[-3000:] + done.stderr
    summary = json.loads(done.stdout)
    assert list(summary["hosts"]) == ["head01"], "node01 must not have been touched"
    failure = summary["hosts"]["head01"]["failed_tasks"][0]
    assert failure["task"] == "Validate the role's inputs"


def _slurm(docker_client, command: list[str]) -> str:
    result = docker_client.containers.get(f"clusterforge-{TEST_LAB}-node01").exec_run(command)
    assert result.exit_code == 0, result.output.decode(errors="replace")
    return result.output.decode()


def test_the_roll_drains_a_slurm_node_and_waits_for_its_job(lab, docker_client):
    """The lab's real Slurm (the slurm stage: slurmctld on head01, slurmd on the compute nodes):
    the roll drains node01, waits until its running job ends, updates it and returns it to
    service; the job is not killed."""
    clusterforge("run", "slurm", "-i", str(lab["inventory"]), env=lab["env"])
    # The job's own output says it ran to its end: Slurm forgets a finished job after MinJobAge
    # (300 s), which a roll on a loaded machine can outlast.
    output = "/var/tmp/clusterforge-roll-test-%j.out"
    job = _slurm(
        docker_client,
        ["sbatch", "--parsable", "--nodelist=node01", f"--output={output}", "--wrap", "sleep 20; echo finished"],
    ).strip()
    _wait_for(lambda: "RUNNING" in _slurm(docker_client, ["scontrol", "show", "job", job]))
    started = time.monotonic()
    done = _roll_node01(lab)
    assert done.returncode == errors.EXIT_OK, done.stdout[-3000:] + done.stderr
    assert time.monotonic() - started >= 10, "the roll must wait for the running job"
    assert _slurm(docker_client, ["cat", output.replace("%j", job)]).split() == ["finished"]
    node = _slurm(docker_client, ["scontrol", "show", "node", "node01"])
    assert "DRAIN" not in node.split("State=", 1)[1].split()[0], node
    # slurmd may be marked NOT_RESPONDING for a ping interval on a busy machine; it must come back idle.
    _wait_for(lambda: "State=IDLE " in _slurm(docker_client, ["scontrol", "show", "node", "node01"]), timeout=180)
    events = _events(lab, "Mark the node for draining in Slurm")
    assert [e["event"] for e in events] == ["runner_on_ok"] and events[0]["event_data"]["res"]["changed"]


def _roll_node01(lab):
    """The base stage rolled over node01 alone, draining it from Slurm."""
    return clusterforge(
        "run",
        "rolling-update",
        "-i",
        str(lab["inventory"]),
        "--stage",
        "base",
        "--limit",
        "node01",
        "-e",
        "node_drain_slurm=true",
        "--json",
        env=lab["env"],
        check=False,
    )


def test_the_roll_leaves_an_administrators_drain_in_place(lab, docker_client):
    """Runs after the test above, on its Slurm: node01, drained by an administrator, is rolled but
    stays drained with their reason; node_drain neither drains it again nor resumes it."""
    _slurm(docker_client, ["scontrol", "update", "nodename=node01", "state=drain", "reason=admin: bad dimm"])
    try:
        done = _roll_node01(lab)
        assert done.returncode == errors.EXIT_OK, done.stdout[-3000:] + done.stderr
        node = _slurm(docker_client, ["scontrol", "show", "node", "node01"])
        assert "DRAIN" in node.split("State=", 1)[1].split()[0], node
        assert "Reason=admin: bad dimm" in node, node
        assert [e["event"] for e in _events(lab, "Mark the node for draining in Slurm")] == ["runner_on_skipped"]
        assert [e["event"] for e in _events(lab, "Return the node to service in Slurm")] == ["runner_on_skipped"]
    finally:
        _slurm(docker_client, ["scontrol", "update", "nodename=node01", "state=resume"])


def _events(lab, task: str) -> list[dict]:
    """The newest run's events for one task, from ansible-runner's artifacts."""
    runs = Path(lab["env"]["CLUSTERFORGE_STATE_DIR"]) / "runs"
    newest = max(runs.iterdir(), key=lambda path: path.stat().st_mtime)
    found = []
    for path in sorted(newest.glob("artifacts/*/job_events/*.json")):
        event = json.loads(path.read_text())
        outcome = event.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped")
        if outcome and event["event_data"].get("task") == task:
            found.append(event)
    return found


def _wait_for(condition, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("condition not met in time")
        time.sleep(1)
