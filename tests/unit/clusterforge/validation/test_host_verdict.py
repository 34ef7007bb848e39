"""One host-verdict rule after the bisection, applied by the playbook's filter and by the report."""

from __future__ import annotations

import json

import pytest

from clusterforge.validation import report
from clusterforge.validation.host_verdict import host_verdict, record_status, verdicts
from tests.paths import filters as filters_of


def check(status: str, name: str = "x") -> dict:
    return {"check": name, "status": status, "measured": None, "expected": None, "message": status}


def run_record(statuses: list[str], scope: str | None = None, msg: str = "a message") -> dict:
    record = {"module": "nccl_check", "checks": [check(s) for s in statuses], "msg": msg}
    if scope:
        record["scope"] = scope
    record["status"] = verdicts.worst(statuses)
    return record


@pytest.fixture(scope="module")
def filter_verdict():
    return filters_of("plugins/filter/validation.py")["clusterforge_validation_host_verdict"]


def test_verdict_order_is_the_node_checks_own():
    assert verdicts.STATUSES == ("fail", "warn", "pass", "skipped")
    assert report.STATUSES is verdicts.STATUSES
    assert verdicts.worst(["skipped", "pass", "warn"]) == "warn"
    assert verdicts.worst([]) == "skipped"
    assert verdicts.worst(["pass", "bogus"]) == "fail"  # a status nobody knows never passes


def test_record_status():
    assert record_status(run_record(["pass", "warn"])) == "warn"
    assert record_status(run_record([])) == "skipped"
    assert record_status({"module": "cabling_check", "error": "MODULE FAILURE"}) == "fail"
    assert record_status({"module": "gpu_check", "status": "pass"}) == "fail"  # no checks: no verdict


# (records, cleared, expected status, expected failure messages)
CASES = {
    "worst of the checks": ([run_record(["pass"]), run_record(["warn"])], [], "warn", []),
    "all skipped stays skipped": ([run_record(["skipped"])], [], "skipped", []),
    "own failed check fails": ([run_record(["pass", "fail"], msg="gpu down")], [], "fail", ["gpu down"]),
    "failed pair of a cleared node is not counted": (
        [run_record(["pass"]), run_record(["fail"], scope="pair", msg="pair slow")],
        ["h1"],
        "pass",
        [],
    ),
    "failed pair of a node not cleared fails it": (
        [run_record(["pass"]), run_record(["fail"], scope="pair", msg="pair slow")],
        ["other"],
        "fail",
        ["pair slow"],
    ),
    "failed group run led by a node the bisection cleared is not counted": (
        [run_record(["pass"]), run_record(["fail"], scope="group", msg="8 nodes failed")],
        ["h1"],
        "pass",
        [],
    ),
    "the culprit's failed group runs count": (
        [run_record(["fail"], scope="group", msg="with a good partner failed")],
        ["other"],
        "fail",
        ["with a good partner failed"],
    ),
    "a cleared node's failed probe still counts": (
        [run_record(["fail"], scope="probe", msg="probe slow")],
        ["h1"],
        "fail",
        ["probe slow"],
    ),
    "a crashed module fails": (
        [{"module": "cabling_check", "error": "MODULE FAILURE"}],
        [],
        "fail",
        ["MODULE FAILURE"],
    ),
}


@pytest.mark.parametrize("records,cleared,status,failures", CASES.values(), ids=list(CASES))
def test_host_verdict(records, cleared, status, failures):
    assert host_verdict("h1", records, cleared) == {"status": status, "failures": failures}


@pytest.mark.parametrize("records,cleared,status,failures", CASES.values(), ids=list(CASES))
def test_playbook_filter_and_report_agree(records, cleared, status, failures, filter_verdict, tmp_path):
    assert filter_verdict(records, "h1", cleared) == {"status": status, "failures": failures}
    host = {"schema": report.HOST_SCHEMA, "host": "h1", "results": records}
    (tmp_path / "h1.json").write_text(json.dumps(host))
    (tmp_path / "_run.json").write_text(json.dumps({"schema": report.RUN_SCHEMA, "verdict": {"cleared": cleared}}))
    (node,) = report.load_run(tmp_path).nodes
    assert node.status == status
