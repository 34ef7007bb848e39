"""A run directory after the run: private, and without the secrets ansible-runner and
ansible-core wrote into it."""

from __future__ import annotations

import json
import os
from pathlib import Path

# What replaces the output of a no_log task that has no censored result line of its own.
_CENSORED = "(output of a no_log task removed by clusterforge)"


def open_private(path: Path, mode: str, **kwargs):
    """A file of a run, created (or emptied) readable by the user alone."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), mode, **kwargs)


def make_private(run_dir: Path) -> None:
    """Only the user may read a run: its output can hold host details and secrets."""
    for root, _dirs, files in os.walk(run_dir):
        os.chmod(root, 0o700)
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(0o600)


def scrub(run_dir: Path) -> None:
    for artifact_dir in run_dir.glob("artifacts/*"):
        _scrub_command_file(artifact_dir / "command")
        _scrub_no_log_output(artifact_dir)


def _scrub_command_file(command_file: Path) -> None:
    """ansible-runner records the whole process environment (tokens, cloud keys) next to the
    command line; keep the variable names, drop their values."""
    try:
        record = json.loads(command_file.read_text())
    except (OSError, ValueError):
        return
    env = record.get("env")
    if isinstance(env, dict):
        record["env"] = dict.fromkeys(sorted(env), "<not recorded>")
        command_file.write_text(json.dumps(record))


def _scrub_no_log_output(artifact_dir: Path) -> None:
    """ansible-core prints a failed task's error ("[ERROR]: Task failed: ...") even when the task
    is no_log, and the message can hold the values no_log was meant to hide (extra variables,
    vault values). Such an event's output is cut down to Ansible's own censored result line, in
    the event and in the stdout file; the other events' line numbers follow."""
    events = []
    for path in artifact_dir.glob("job_events/*.json"):
        try:
            events.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            continue
    events.sort(key=lambda item: item[1].get("start_line", 0))
    stdout_file = artifact_dir / "stdout"
    lines = _split_lines(_read_exactly(stdout_file)) if stdout_file.is_file() else []
    kept: list[str] = []
    copied = shift = 0
    changed = False
    for path, event in events:
        start, end = event.get("start_line"), event.get("end_line")
        censored = _is_no_log(event)
        if censored:
            event["stdout"] = _censored(event.get("stdout", ""))
            changed = True
        if isinstance(start, int) and isinstance(end, int) and start >= copied:
            kept += lines[copied:start]
            # An event's stdout is its lines without the last newline.
            kept += _split_lines(event["stdout"] + "\n") if censored else lines[start:end]
            copied = end
            new_start = start + shift
            shift = len(kept) - end
            if censored or shift:
                event["start_line"], event["end_line"] = new_start, end + shift
                path.write_text(json.dumps(event))
        elif censored:
            path.write_text(json.dumps(event))
    if changed and stdout_file.is_file():
        with stdout_file.open("w", encoding="utf-8", newline="") as file:
            file.write("".join(kept + lines[copied:]))


def _is_no_log(event: dict) -> bool:
    result = (event.get("event_data") or {}).get("res")
    return isinstance(result, dict) and "censored" in result


def _censored(stdout: str) -> str:
    lines = _split_lines(stdout)
    for index, line in enumerate(lines):
        if line.startswith(("fatal: [", "failed: [", "ok: [", "changed: [")):
            return "".join(lines[index:])
    return _CENSORED


def _read_exactly(path: Path) -> str:
    """The text with its \\r\\n and lone \\r kept: read_text would make each a newline."""
    with path.open(encoding="utf-8", errors="replace", newline="") as file:
        return file.read()


def _split_lines(text: str) -> list[str]:
    """Lines ending in \\n, as ansible-runner counts them (str.splitlines also splits at \\r)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
