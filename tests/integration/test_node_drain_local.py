"""roles/node_drain against a fake scontrol and kubectl (tests/integration/fake_scontrol.py,
fake_kubectl.py) on hosts reached with the local connection: it drains and resumes only what it
drained, and waits for jobs.
tests/integration/test_rolling_update.py does the same against a real Slurm on the lab."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import ansible_playbook, local_inventory

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
OURS = "clusterforge rolling update"  # node_drain_reason's default
ADMIN = "admin: bad dimm"

NODES = {
    # An administrator drained it: it stays drained, with their reason.
    "node01": {"drain": True, "reason": ADMIN, "jobs": 0},
    # In service: drained, then resumed.
    "node02": {"drain": False, "reason": "", "jobs": 0},
    # Left drained by an earlier roll that failed: not drained again, resumed.
    "node03": {"drain": True, "reason": OURS, "jobs": 0},
    # Drained by an administrator while a job runs: the role waits for the job, then leaves it drained.
    "node04": {"drain": True, "reason": ADMIN, "jobs": 2},
}


def fake_tools(tmp: Path, nodes: dict, kube_nodes: dict | None = None) -> dict:
    """Environment for ansible-playbook with a fake scontrol over `nodes`, a fake kubectl over
    `kube_nodes` and a fake systemctl (a running system, no failed unit) first on PATH, and its own
    fact cache."""
    bindir = tmp / "bin"
    bindir.mkdir()
    scripts = {
        "scontrol": f'exec "{sys.executable}" "{HERE / "fake_scontrol.py"}" "$@"',
        "kubectl": f'exec "{sys.executable}" "{HERE / "fake_kubectl.py"}" "$@"',
        "systemctl": 'if [ "$1" = is-system-running ]; then echo running; fi',
    }
    for name, body in scripts.items():
        (bindir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bindir / name).chmod(0o755)
    (tmp / "slurm.json").write_text(json.dumps(nodes))
    (tmp / "kube.json").write_text(json.dumps(kube_nodes or {}))
    (tmp / "calls.log").touch()
    (tmp / "kubectl.log").touch()
    return {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_SLURM_STATE": str(tmp / "slurm.json"),
        "FAKE_SLURM_LOG": str(tmp / "calls.log"),
        "FAKE_KUBE_STATE": str(tmp / "kube.json"),
        "FAKE_KUBE_LOG": str(tmp / "kubectl.log"),
        "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp / "facts"),
    }


def play(tmp: Path, env: dict, inventory: Path, playbook: Path, *extra: str) -> dict:
    """Runs the playbook; its json report, the fake schedulers' node states and the calls they got."""
    done = ansible_playbook(inventory, playbook, *extra, env=env)
    calls = [json.loads(line) for line in (tmp / "calls.log").read_text().splitlines()]
    return {
        "rc": done.returncode,
        "output": done.stdout[-4000:] + done.stderr,
        "report": json_report(done.stdout),
        "state": json.loads((tmp / "slurm.json").read_text()),
        "calls": calls,
        "kube_state": json.loads((tmp / "kube.json").read_text()),
        "kube_calls": [json.loads(line) for line in (tmp / "kubectl.log").read_text().splitlines()],
    }


@pytest.fixture(scope="module")
def drained(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("node-drain")
    env = fake_tools(tmp, NODES)
    # node05 is unknown to Slurm: nothing to drain.
    inventory = local_inventory(tmp, dict.fromkeys([*NODES, "node05"], ""))
    result = play(tmp, env, inventory, HERE / "playbooks" / "node_drain.yml")
    assert result["rc"] == 0, result["output"]
    return result


def json_report(stdout: str) -> dict:
    """The json callback's document; ansible.cfg's profile_tasks prints its timing lines around it."""
    return json.JSONDecoder().raw_decode(stdout[stdout.index("{\n") :])[0]


def updates(calls: list[list[str]], node: str) -> list[str]:
    return [" ".join(call[2:]) for call in calls if call[0] == "update" and call[1] == f"nodename={node}"]


def task_results(report: dict, task: str, role: str | None = "node_drain") -> dict[str, dict]:
    """host -> result of the named task of the role (or of the play, role None)."""
    name = f"{role} : {task}" if role else task
    found: dict[str, dict] = {}
    for play in report["plays"]:
        for entry in play["tasks"]:
            if entry["task"]["name"] == name:
                found.update(entry["hosts"])
    return found


def test_an_administrators_drain_is_left_with_its_reason(drained):
    assert updates(drained["calls"], "node01") == []
    assert drained["state"]["node01"] == NODES["node01"]
    said = task_results(drained["report"], "Say the node stays out of service in Slurm")["node01"]["msg"]
    assert f"node01 stays IDLE+DRAIN in Slurm (reason: {ADMIN})" in said


def test_a_node_in_service_is_drained_and_resumed(drained):
    assert updates(drained["calls"], "node02") == [f"state=drain reason={OURS}", "state=resume"]
    assert drained["state"]["node02"] == {"drain": False, "reason": "", "jobs": 0}


def test_a_node_left_drained_by_an_earlier_roll_is_resumed(drained):
    assert updates(drained["calls"], "node03") == ["state=resume"]
    assert drained["state"]["node03"]["drain"] is False


def test_the_drain_waits_for_running_jobs_and_leaves_an_admin_drain(drained):
    shows = [call for call in drained["calls"] if call == ["show", "node", "node04"]]
    # detect (busy), the wait (busy, then idle five seconds later), resume's detect
    assert len(shows) == 4
    assert updates(drained["calls"], "node04") == []
    assert drained["state"]["node04"] == {**NODES["node04"], "jobs": 0}


def test_a_node_slurm_does_not_know_is_left_alone(drained):
    assert updates(drained["calls"], "node05") == []
    said = task_results(drained["report"], "Say that no scheduler knows the node")
    assert "neither Slurm nor Kubernetes knows this node" in said["node05"]["msg"]


def test_changed_follows_the_node_state(drained):
    mark = task_results(drained["report"], "Mark the node for draining in Slurm")
    resume = task_results(drained["report"], "Return the node to service in Slurm")
    assert {h for h, r in mark.items() if r.get("changed")} == {"node02"}
    assert {h for h, r in mark.items() if r.get("skipped")} == {"node01", "node03", "node04"}
    assert {h for h, r in resume.items() if r.get("changed")} == {"node02", "node03"}
    assert {h for h, r in resume.items() if r.get("skipped")} == {"node01", "node04", "node05"}


MARK = "clusterforge.io/node-drain"
KUBE_NODES = {
    # Schedulable, with pods: marked, drained, then uncordoned and unmarked.
    "k01": {"unschedulable": False, "annotations": {}, "pods": 2},
    # Cordoned by an administrator: its pods are evicted, but it stays cordoned.
    "k02": {"unschedulable": True, "annotations": {}, "pods": 1},
    # Left cordoned by an earlier roll that failed (it carries the mark): uncordoned.
    "k03": {"unschedulable": True, "annotations": {MARK: OURS}, "pods": 0},
}


@pytest.fixture(scope="module")
def cordoned(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("node-drain-kubernetes")
    env = fake_tools(tmp, {}, KUBE_NODES)
    # Each node runs kubectl itself (its own control host), and Slurm is not asked.
    hosts = {name: f"node_drain_kubectl_host={name} node_drain_slurm=false" for name in KUBE_NODES}
    result = play(tmp, env, local_inventory(tmp, hosts), HERE / "playbooks" / "node_drain.yml")
    assert result["rc"] == 0, result["output"]
    return result


def kubectl_changes(calls: list[list[str]], node: str) -> list[str]:
    return [" ".join(call) for call in calls if call[0] != "get" and node in call]


def test_a_schedulable_node_is_marked_drained_and_returned(cordoned):
    assert kubectl_changes(cordoned["kube_calls"], "k01") == [
        f"annotate --overwrite node k01 {MARK}={OURS}",
        "drain k01 --ignore-daemonsets --delete-emptydir-data --timeout=3600s",
        "uncordon k01",
        f"annotate node k01 {MARK}-",
    ]
    assert cordoned["kube_state"]["k01"] == {"unschedulable": False, "annotations": {}, "pods": 0}


def test_an_administrators_cordon_stays(cordoned):
    assert kubectl_changes(cordoned["kube_calls"], "k02") == [
        "drain k02 --ignore-daemonsets --delete-emptydir-data --timeout=3600s"
    ]
    assert cordoned["kube_state"]["k02"] == {"unschedulable": True, "annotations": {}, "pods": 0}
    said = task_results(cordoned["report"], "Say the node stays cordoned in Kubernetes")["k02"]["msg"]
    assert said == "k02 stays cordoned in Kubernetes: node_drain did not cordon it"


def test_a_node_cordoned_by_an_earlier_roll_is_returned(cordoned):
    assert cordoned["kube_state"]["k03"] == {"unschedulable": False, "annotations": {}, "pods": 0}


def test_kubernetes_changed_follows_the_node_state(cordoned):
    drain = task_results(cordoned["report"], "Drain the node in Kubernetes (cordon, then evict its pods)")
    # k01 cordoned and emptied, k02 emptied; k03 was cordoned and empty: nothing changed.
    assert {h for h, r in drain.items() if r.get("changed")} == {"k01", "k02"}
    mark = task_results(cordoned["report"], "Mark the node as drained by node_drain")
    assert {h for h, r in mark.items() if r.get("changed")} == {"k01"}
    uncordon = task_results(cordoned["report"], "Return the node to service in Kubernetes")
    assert {h for h, r in uncordon.items() if r.get("changed")} == {"k01", "k03"}
