"""Slices' results as one run: hosts, totals, tasks, JUnit and the worst exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge import errors
from clusterforge.runner import merge, report
from clusterforge.runner import playbook as runner
from tests.unit.clusterforge.runner.events import event, failed, ok, play, recorded, skipped, start, task

PLAY = "Set the nodes up"


def slice_events(hosts: dict[str, str]) -> list[dict]:
    """One play, two tasks, on hosts that end as given: ok, failed or unreachable."""
    events = [play(PLAY), task("Install"), *(start(host, "Install") for host in hosts)]
    for host, outcome in hosts.items():
        if outcome == "failed":
            events.append(failed(host, "Install", msg=f"no package on {host}"))
        elif outcome == "unreachable":
            events.append(event("runner_on_unreachable", host=host, task="Install", res={"msg": "no route"}))
        else:
            events.append(ok(host, "Install", changed=True))
    events += [task("Configure"), *(start(h, "Configure") for h, o in hosts.items() if o == "ok")]
    events += [skipped(h, "Configure") for h, o in hosts.items() if o == "ok"]
    return [*events, event("playbook_on_stats")]


def a_slice(tmp_path: Path, name: str, hosts: dict[str, str], status: str | None = None) -> runner.RunResult:
    stats: dict[str, dict[str, int]] = {"ok": {}, "changed": {}, "failures": {}, "dark": {}, "skipped": {}}
    for host, outcome in hosts.items():
        key = {"ok": "ok", "failed": "failures", "unreachable": "dark"}[outcome]
        stats[key][host] = 1
        if outcome == "ok":
            stats["changed"][host] = stats["skipped"][host] = 1
    bad = any(outcome != "ok" for outcome in hosts.values())
    return runner.RunResult(
        status=status or ("failed" if bad else "successful"),
        rc=2 if bad else 0,
        run_dir=tmp_path / name,
        hosts=runner.summarise(stats),
        playbook=Path("/p/site.yml"),
        inventory=Path("/p/cluster.topology.yml"),
        record=recorded(slice_events(hosts)),
    )


def merged_of(tmp_path: Path, *results: runner.RunResult) -> merge.MergedRunResult:
    (tmp_path / "merged").mkdir()
    options = runner.RunOptions(inventory="/p/cluster.topology.yml")
    return merge.merge(list(results), tmp_path / "merged", options, 1.0, [{"slice": f"{i}/2"} for i in (1, 2)])


def test_the_summary_holds_every_slice_s_hosts_totals_and_failures(tmp_path):
    first = a_slice(tmp_path, "s1", {"node01": "ok", "node02": "failed"})
    second = a_slice(tmp_path, "s2", {"node03": "ok", "node04": "ok"})
    summary = report.summary(merged_of(tmp_path, first, second))
    assert sorted(summary["hosts"]) == ["node01", "node02", "node03", "node04"]
    assert summary["totals"]["hosts"] == 4 and summary["totals"]["failed"] == 1
    assert summary["hosts"]["node02"]["failed_tasks"] == [
        {"play": PLAY, "task": "Install", "message": "no package on node02"}
    ]
    assert summary["hosts"]["node03"]["changed"] == 1
    # Each task once, with every slice's hosts counted (a task's "ok" leaves out the changed).
    assert [(t["task"], t["ok"], t["changed"], t["failed"], t["skipped"]) for t in summary["tasks"]] == [
        ("Install", 0, 3, 1, 0),
        ("Configure", 0, 0, 0, 3),
    ]
    assert summary["tasks_run"] == 2
    assert summary["status"] == "failed" and summary["exit_code"] == errors.EXIT_HOSTS_FAILED
    assert summary["slices"] == [{"slice": "1/2"}, {"slice": "2/2"}]


def test_the_junit_has_one_suite_per_play_with_every_slice_s_hosts(tmp_path):
    first = a_slice(tmp_path, "s1", {"node01": "ok", "node02": "failed"})
    second = a_slice(tmp_path, "s2", {"node03": "unreachable", "node04": "ok"})
    suites = report.junit(merged_of(tmp_path, first, second)).getroot()
    (suite,) = suites.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == (PLAY, "4", "1", "1")
    assert [case.get("name") for case in suite.findall("testcase")] == ["node01", "node02", "node03", "node04"]
    assert suite.find("testcase[@name='node02']/failure") is not None
    assert suite.find("testcase[@name='node03']/error") is not None


def test_the_merged_run_is_written_with_the_single_run_s_files(tmp_path):
    merged = merged_of(tmp_path, a_slice(tmp_path, "s1", {"a": "ok"}), a_slice(tmp_path, "s2", {"b": "ok"}))
    summary_path, junit_path = report.write(merged)
    assert summary_path == tmp_path / "merged" / "summary.json" and junit_path.is_file()
    assert merged.exit_code == errors.EXIT_OK


@pytest.mark.parametrize(
    ("codes", "worst"),
    [
        ([0, 0, 0], errors.EXIT_OK),
        ([0, 2, 0], errors.EXIT_HOSTS_FAILED),
        ([2, 3, 0], errors.EXIT_HOSTS_UNREACHABLE),
        ([3, 130, 2], errors.EXIT_INTERRUPTED),
        ([0, 5, 4], errors.EXIT_ENVIRONMENT),
        ([2, 5], errors.EXIT_HOSTS_FAILED),  # as RunResult.exit_code: failed hosts before no hosts
        ([0, 99], 99),  # an unknown code is never hidden
        ([], errors.EXIT_USAGE),
    ],
)
def test_the_worst_exit_code_wins(codes, worst):
    assert merge.worst_exit_code(codes) == worst


def test_a_slice_that_matched_no_host_of_the_play_does_not_fail_the_run(tmp_path):
    ran = a_slice(tmp_path, "s1", {"node01": "ok"})
    none = runner.RunResult(status="successful", rc=0, run_dir=tmp_path / "s2")
    assert none.exit_code == errors.EXIT_USAGE  # alone, it would
    assert merge.slices_exit_code([ran, none]) == errors.EXIT_OK
    assert merge.slices_exit_code([none, none]) == errors.EXIT_USAGE
    broken = runner.RunResult(status="failed", rc=4, run_dir=tmp_path / "s3", ansible_output="ERROR! syntax")
    # A slice whose ansible-playbook stopped with an error is not hidden.
    assert merge.slices_exit_code([ran, broken]) == errors.EXIT_USAGE


def test_a_canceled_slice_makes_the_run_canceled(tmp_path):
    merged = merged_of(
        tmp_path, a_slice(tmp_path, "s1", {"a": "ok"}), a_slice(tmp_path, "s2", {"b": "ok"}, status="canceled")
    )
    assert merged.status == "canceled" and merged.exit_code == errors.EXIT_INTERRUPTED
