"""The run directory after a run: no_log output cut, line numbers kept, private modes."""

from __future__ import annotations

import json
import stat

from clusterforge.runner import artifacts

SECRET = "hunter2-4711"
LEAK = (
    f"[ERROR]: Task failed: Action failed: bad {SECRET}\r\nOrigin: play.yml:3:7\r\n\r\n"
    "fatal: [alpha]: FAILED! => \r\n    censored: 'hidden'"
)


def write_events(artifact_dir, events):
    (artifact_dir / "job_events").mkdir(parents=True)
    for number, event in enumerate(events):
        (artifact_dir / "job_events" / f"{number}-x.json").write_text(json.dumps(event))


def read_events(artifact_dir):
    paths = sorted((artifact_dir / "job_events").iterdir(), key=lambda p: int(p.name.split("-")[0]))
    return [json.loads(path.read_text()) for path in paths]


def test_a_no_log_failure_keeps_only_the_censored_result(tmp_path):
    artifact_dir = tmp_path / "artifacts" / "ident"
    task = "TASK [Use it] ***"
    after = "PLAY RECAP ***\r\nalpha : ok=0 failed=1"
    events = [
        {"event": "playbook_on_task_start", "stdout": task, "start_line": 0, "end_line": 1},
        {
            "event": "runner_on_failed",
            "stdout": LEAK,
            "start_line": 1,
            "end_line": 6,
            "event_data": {"res": {"censored": "hidden"}},
        },
        {
            "event": "runner_on_failed",
            "stdout": "fatal: [beta]: FAILED! => msg: plain",
            "start_line": 6,
            "end_line": 7,
            "event_data": {"res": {"msg": "plain"}},
        },
        {"event": "playbook_on_stats", "stdout": after, "start_line": 7, "end_line": 9},
    ]
    write_events(artifact_dir, events)
    with (artifact_dir / "stdout").open("w", newline="") as file:
        file.write("\n".join(event["stdout"] for event in events) + "\n")

    artifacts.scrub(tmp_path)

    with (artifact_dir / "stdout").open(newline="") as file:
        stdout = file.read()
    assert SECRET not in stdout and SECRET not in json.dumps(read_events(artifact_dir))
    lines = stdout.split("\n")
    for event in read_events(artifact_dir):
        # Every event still names its own lines of the stdout file.
        assert "\n".join(lines[event["start_line"] : event["end_line"]]) == event["stdout"]
    assert read_events(artifact_dir)[1]["stdout"] == "fatal: [alpha]: FAILED! => \r\n    censored: 'hidden'"


def test_the_recorded_environment_keeps_names_only(tmp_path):
    command = tmp_path / "artifacts" / "ident" / "command"
    command.parent.mkdir(parents=True)
    command.write_text(json.dumps({"command": ["ansible-playbook"], "env": {"TOKEN": SECRET}}))
    artifacts.scrub(tmp_path)
    assert json.loads(command.read_text())["env"] == {"TOKEN": "<not recorded>"}


def test_make_private(tmp_path):
    (tmp_path / "artifacts" / "ident").mkdir(parents=True)
    (tmp_path / "artifacts" / "ident" / "stdout").write_text("x")
    artifacts.make_private(tmp_path)
    assert stat.S_IMODE((tmp_path / "artifacts").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "artifacts" / "ident" / "stdout").stat().st_mode) == 0o600
