"""What `clusterforge run` prints and writes after a run, from synthetic events: the summary on
screen, summary.json and --json, the run's one directory, `clusterforge report --latest`."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from clusterforge.cli import check as check_cli
from clusterforge.cli import run as run_cli
from clusterforge.errors import UsageError
from clusterforge.runner import playbook as runner
from clusterforge.runner import report, runs
from tests.unit.clusterforge.runner.events import DETAILS, recorded
from tests.unit.clusterforge.validation.test_report import host_file, record

STATS = {
    "ok": {"node01": 3, "node02": 1},
    "changed": {"node01": 1},
    "failures": {"node01": 1},
    "skipped": {"node02": 1},
    "ignored": {"node02": 1},
}


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLUSTERFORGE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / "state"


def a_result(state: Path, run_id: str = "20261203T120000Z-abcd1234", **options) -> runner.RunResult:
    run_dir = runs.runs_dir() / run_id
    run_dir.mkdir()
    recorder = recorded()
    results = run_dir / "validation" / run_id
    results.mkdir(parents=True)
    checks = [
        {"check": "gpu.count", "status": "pass", "message": "8 of 8"},
        {"check": "gpu.throttle", "status": "fail", "message": "held down"},
        {"check": "ib.present", "status": "skipped", "message": "no hardware: no HCA"},
    ]
    host_file(results, "node01", [record("gpu_check", checks)])
    recorder.validation_dir, recorder.validation_id = str(results), run_id
    return runner.RunResult(
        status="failed",
        rc=2,
        run_dir=run_dir,
        hosts=runner.summarise(STATS),
        playbook=Path("/p/site.yml"),
        inventory=Path("/p/lab.topology.yml"),
        record=recorder,
        options=runner.RunOptions(inventory="/p/lab.topology.yml", **options),
    )


def printed(result: runner.RunResult, monkeypatch, width: int = 80) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    monkeypatch.setattr(run_cli, "console", console)
    summary_path, junit_path = report.write(result)
    run_cli._print_summary(result, summary_path, junit_path)
    return console.file.getvalue().splitlines()


def test_the_summary_prints_paths_whole_with_a_tilde_and_each_failure_once(state, monkeypatch):
    result = a_result(state)
    lines = printed(result, monkeypatch)
    run_dir = f"~/state/runs/{result.run_id}"
    assert f"run {result.run_id}" in lines
    assert f"artifacts {run_dir}" in lines  # not wrapped at 80 columns, home as ~
    assert f"summary   {run_dir}/summary.json" in lines
    assert f"junit     {run_dir}/junit.xml" in lines
    assert f"results   {run_dir}/validation/{result.run_id}" in lines
    failures = [line for line in lines if line.startswith("failed ")]
    assert failures == [
        "failed node01: Fail hosts whose checks failed: gpu_check: 1 of 12 checks failed: gpu.throttle: "
        f"8/8 GPUs: clocks held down by hw_power_brake_slowdown {DETAILS}"
    ]
    assert "hosts: 2  failed: 1  unreachable: 0  changed tasks: 1" in lines
    assert not any("would change" in line for line in lines)  # only with --check or --diff


def test_validation_says_its_counts_and_the_report_command(state, monkeypatch):
    result = a_result(state)
    lines = printed(result, monkeypatch)
    run_dir = f"~/state/runs/{result.run_id}"
    assert (
        f"validation: 1 pass, 1 fail, 1 skipped (no hardware) -> clusterforge report {run_dir} -o {run_dir}/report"
        in lines
    )


def test_non_zero_failed_unreachable_and_changed_are_coloured(state, monkeypatch):
    result = a_result(state)
    console = Console(file=io.StringIO(), width=200, force_terminal=True, color_system="standard")
    monkeypatch.setattr(run_cli, "console", console)
    run_cli._print_summary(result, *report.write(result))
    out = console.file.getvalue()
    totals = next(line for line in out.splitlines() if "changed tasks:" in line)
    assert "failed: \x1b[1;31m1\x1b[0m" in totals and "changed tasks: \x1b[33m1\x1b[0m" in totals
    assert "unreachable: 0" in totals  # zero stays plain


def test_check_diff_lists_the_changes_per_host_with_item_and_diff(state, monkeypatch):
    lines = printed(a_result(state, check=True, diff=True), monkeypatch)
    at = lines.index("would change node01 (1)")
    assert lines[at + 1 : at + 7] == [
        "  Write the configuration [x]",
        "    --- /etc/x.conf",
        "    +++ /etc/x.conf",
        "    @@ -1 +1 @@",
        "    -a = 1",
        "    +a = 2",
    ]
    assert not any(line.startswith("would change node02") for line in lines)


def test_summary_json_carries_the_schema_id_paths_messages_and_validation(state):
    result = a_result(state)
    summary_path, junit_path = report.write(result)
    summary = json.loads(summary_path.read_text())
    assert summary["schema"] == report.SCHEMA
    assert summary["run_id"] == result.run_id
    assert summary["run_dir"] == str(result.run_dir)
    assert (summary["summary"], summary["junit"]) == (str(summary_path), str(junit_path))
    assert summary["ansible_artifacts"] == str(result.run_dir / "artifacts")
    validation = summary["validation"]
    assert validation["results_dir"] == str(result.run_dir / "validation" / result.run_id)
    assert validation["run_id"] == result.run_id
    assert validation["counts"] == {
        "pass": 1,
        "warn": 0,
        "fail": 1,
        "skipped": 1,
        "skipped_no_hardware": 1,
        "replayed": 0,
        "nodes": 1,
        "nodes_failed": 1,
    }
    assert validation["report_command"] == f"clusterforge report {result.run_dir} -o {result.run_dir / 'report'}"
    assert [m["kind"] for m in summary["messages"]] == ["debug", "debug", "ignored"]
    assert summary["hosts"]["node01"]["changes"][0]["item"] == "x"
    assert summary["tasks_run"] == 4 and len(summary["tasks"]) == 4
    assert summary["options"]["playbook"] == "/p/site.yml"


def test_a_run_without_validation_says_null(state):
    result = a_result(state)
    result.record.validation_dir = None
    assert report.summary(result)["validation"] is None


def test_validation_results_go_in_the_run_directory_by_default(tmp_path):
    run_dir = tmp_path / "20261203T120000Z-abcd1234"
    assert runs.validation_defaults(run_dir) == {
        "clusterforge_report_dir": str(run_dir / "validation"),
        "clusterforge_validation_run_id": run_dir.name,
    }


def test_defaults_come_first_so_that_e_overrides_them(tmp_path):
    from clusterforge.runner import extravars

    args = extravars.write(
        ["clusterforge_report_dir=/x"], {"z": 1}, tmp_path, defaults={"clusterforge_report_dir": "/d"}
    )
    files = [json.loads(Path(arg[1:]).read_text()) for arg in args[1::2]]
    assert files == [{"clusterforge_report_dir": "/d"}, {"clusterforge_report_dir": "/x"}, {"z": 1}]


def test_the_task_count_of_the_last_same_run_is_the_panels_n(state):
    key = {"playbook": "/p/site.yml", "inventory": "/i", "limit": None, "tags": None, "skip_tags": None, "check": False}
    for run_id, options, status, tasks in [
        ("20261201T000000Z-a", key, "successful", 40),
        ("20261202T000000Z-b", {**key, "check": True}, "successful", 12),
        ("20261202T000001Z-c", key, "canceled", 3),
    ]:
        (runs.runs_dir() / run_id).mkdir()
        summary = {"options": options, "status": status, "tasks_run": tasks}
        (runs.runs_dir() / run_id / "summary.json").write_text(json.dumps(summary))
    current = runs.runs_dir() / "20261203T000000Z-d"
    current.mkdir()
    assert runs.previous_task_count(current, key) == 40
    assert runs.previous_task_count(current, {**key, "check": True}) == 12
    assert runs.previous_task_count(current, {**key, "limit": "x"}) == 0


def report_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["report", *argv])


def test_report_latest_finds_the_newest_run_with_results_and_writes_beside_them(state):
    older = a_result(state, run_id="20261201T000000Z-aaaa0000")
    report.write(older)
    newest = a_result(state, run_id="20261202T000000Z-bbbb1111")
    report.write(newest)
    (runs.runs_dir() / "20261203T000000Z-cccc2222").mkdir()  # a later run that did not validate
    assert check_cli.run(report_args("--latest")) == 0
    assert (newest.run_dir / "report" / "report.html").is_file()
    assert not (older.run_dir / "report").exists()
    # The run's directory names its results as well.
    assert check_cli.run(report_args(str(older.run_dir), "-o", str(state / "out"))) == 0
    assert json.loads((state / "out" / "report.json").read_text())["run_id"]


def test_report_wants_a_directory_or_latest(state):
    with pytest.raises(UsageError, match="RESULTS_DIR or --latest"):
        check_cli.run(report_args())
    with pytest.raises(UsageError, match="no run with validation results"):
        check_cli.run(report_args("--latest"))
    elsewhere = state / "results"
    elsewhere.mkdir(parents=True)
    host_file(elsewhere, "node01", [record("gpu_check", [{"check": "gpu.count", "status": "pass"}])])
    with pytest.raises(UsageError, match="not in a `clusterforge run` directory; name the output directory with -o"):
        check_cli.run(report_args(str(elsewhere)))
    # A results directory inside a run's directory writes to the run's report/.
    result = a_result(state)
    report.write(result)
    assert check_cli.run(report_args(result.record.validation_dir)) == 0
    assert (result.run_dir / "report" / "report.json").is_file()
