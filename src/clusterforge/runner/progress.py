"""Progress while a run goes: a live panel on a terminal, plain lines in CI logs, or
nothing (--json). Each wraps the RunRecorder, which it reads for what to show."""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from clusterforge.runner.record import RunRecorder
from clusterforge.text import plain


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def _counts(recorder: RunRecorder) -> tuple[int, int, int]:
    failed = sum(1 for h in recorder.hosts.values() if h.failed_tasks)
    unreachable = sum(1 for h in recorder.hosts.values() if h.unreachable)
    return len(recorder.hosts), failed, unreachable


class QuietProgress:
    def __init__(self, recorder: RunRecorder):
        self.recorder = recorder

    def __call__(self, event: dict) -> bool:
        return self.recorder(event)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class PlainProgress(QuietProgress):
    """One line per task and per failure: readable in a CI log, no control characters."""

    def __init__(self, recorder: RunRecorder, stream: TextIO | None = None):
        super().__init__(recorder)
        self.stream = stream or sys.stdout

    def __call__(self, event: dict) -> bool:
        before = {host: (len(r.failed_tasks), r.unreachable) for host, r in self.recorder.hosts.items()}
        keep = self.recorder(event)
        kind = event.get("event")
        elapsed = _clock(self.recorder.elapsed)
        if kind == "playbook_on_play_start":
            self._say(f"[{elapsed}] PLAY {self.recorder.play}")
        elif kind == "playbook_on_task_start":
            hosts, failed, unreachable = _counts(self.recorder)
            self._say(
                f"[{elapsed}] TASK {self.recorder.task} (hosts {hosts}, failed {failed}, unreachable {unreachable})"
            )
        for host, record in self.recorder.hosts.items():
            failures, unreachable = before.get(host, (0, None))
            if len(record.failed_tasks) > failures:
                self._say(f"[{elapsed}] FAILED {host}: {record.failed_tasks[-1]['message'].splitlines()[0]}")
            if record.unreachable and not unreachable:
                self._say(f"[{elapsed}] UNREACHABLE {host}: {record.unreachable.splitlines()[0]}")
        return keep

    def _say(self, line: str) -> None:
        # Names and messages come from hosts and playbooks: no escape sequence reaches the log.
        print(plain(line), file=self.stream, flush=True)


class LiveProgress(QuietProgress):
    """A panel redrawn in place: hosts, failures, current play and task, elapsed time."""

    def __init__(self, recorder: RunRecorder, console: Console):
        super().__init__(recorder)
        self.live = Live(self._render(), console=console, refresh_per_second=4, transient=False)

    def __call__(self, event: dict) -> bool:
        keep = self.recorder(event)
        self.live.update(self._render())
        return keep

    def _render(self) -> Table:
        hosts, failed, unreachable = _counts(self.recorder)
        table = Table.grid(padding=(0, 2))
        table.add_row(
            "elapsed",
            _clock(self.recorder.elapsed),
            "hosts",
            str(hosts),
            "failed",
            f"[red]{failed}[/]" if failed else "0",
            "unreachable",
            f"[red]{unreachable}[/]" if unreachable else "0",
        )
        # Text, not str: Rich would read a play named "[/x]" as markup and abort the run.
        table.add_row("play", Text(plain(self.recorder.play or "-")), "task", Text(plain(self.recorder.task or "-")))
        return table

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)


def choose(recorder: RunRecorder, console: Console, json_output: bool) -> QuietProgress:
    if json_output:
        return QuietProgress(recorder)
    if console.is_terminal:
        return LiveProgress(recorder, console)
    return PlainProgress(recorder)
