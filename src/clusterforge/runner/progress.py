"""Progress while a run goes: a live panel on a terminal, plain lines in CI logs, or
nothing (--json). Each wraps the RunRecorder, which it reads for what to show.

Both say what the play says to the operator (debug messages, failures, with --check or --diff
what changed and how) once a task is over, the same text from many hosts once."""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from clusterforge.runner import present
from clusterforge.runner.record import RunRecorder, TaskRecord
from clusterforge.text import plain


class QuietProgress:
    def __init__(self, recorder: RunRecorder):
        self.recorder = recorder

    def __call__(self, event: dict) -> bool:
        return self.recorder(event)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class _Narrating(QuietProgress):
    """Says each task's messages, failures and changes when the task is over."""

    def __init__(self, recorder: RunRecorder, show_changes: bool = False):
        super().__init__(recorder)
        self.show_changes = show_changes
        self._messages = 0
        self._failures: dict[str, int] = {}
        self._changes: dict[str, int] = {}
        self._unreachable: set[str] = set()
        self._tasks_done = 0

    def _after_event(self) -> None:
        done = self.recorder.done_tasks
        for task in done[self._tasks_done :]:
            self._task_over(task)
        self._tasks_done = len(done)

    def _task_over(self, task: TaskRecord | None) -> None:
        """What happened since the last call: overridden to add the task's own line."""
        self._narrate()

    def _narrate(self) -> None:
        recorder = self.recorder
        for hosts, _task, text in present.group_messages(recorder.messages[self._messages :]):
            self._say(f"{present.hosts_list(hosts)}: ", text, "cyan")
        self._messages = len(recorder.messages)
        for host, record in recorder.hosts.items():
            for failure in record.failed_tasks[self._failures.get(host, 0) :]:
                message = present.failure_text(host, failure["message"], record.gpus)
                self._say(f"FAILED {host}: ", f"{failure['task']}: {message}", "red")
            self._failures[host] = len(record.failed_tasks)
            if record.unreachable and host not in self._unreachable:
                self._unreachable.add(host)
                self._say(f"UNREACHABLE {host}: ", record.unreachable, "red")
            if self.show_changes:
                for change in record.changes[self._changes.get(host, 0) :]:
                    self._say(f"changed {host}: ", change_title(change), "yellow")
                    if change["diff"]:
                        self._diff(change["diff"])
            self._changes[host] = len(record.changes)

    def _say(self, label: str, text: str, style: str) -> None:
        raise NotImplementedError

    def _diff(self, diff: str) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """At the end (a cancelled run ends within a task): what was not said yet."""
        self._after_event()
        self._narrate()


def change_title(change: dict) -> str:
    return change["task"] + (f" [{change['item']}]" if change.get("item") else "")


class PlainProgress(_Narrating):
    """Lines for a CI log, no control characters: each play and task when it starts, each task's
    results per host and duration when it is over, then what the task said."""

    def __init__(self, recorder: RunRecorder, stream: TextIO | None = None, show_changes: bool = False):
        super().__init__(recorder, show_changes)
        self.stream = stream or sys.stdout
        self._failed_checks = 0

    def __call__(self, event: dict) -> bool:
        keep = self.recorder(event)
        kind = event.get("event")
        self._after_event()
        elapsed = present.clock(self.recorder.elapsed)
        if kind == "playbook_on_play_start":
            self._line(f"[{elapsed}] PLAY {self.recorder.play}")
        elif kind in ("playbook_on_task_start", "playbook_on_handler_task_start"):
            self._line(f"[{elapsed}] TASK {self.recorder.task}")
        return keep

    def _task_over(self, task: TaskRecord | None) -> None:
        if task is not None:
            checks = ""
            if self.recorder.failed_checks != self._failed_checks:
                self._failed_checks = self.recorder.failed_checks
                checks = f", failed checks so far {self._failed_checks}"
            self._line(
                f"[{present.clock(self.recorder.elapsed)}]   {present.task_counts(task)} "
                f"({present.duration(task.duration)}){checks}"
            )
        self._narrate()

    def _say(self, label: str, text: str, style: str) -> None:
        lines = text.splitlines() or [""]
        self._line(f"[{present.clock(self.recorder.elapsed)}]   {label}{lines[0]}")
        for line in lines[1:]:
            self._line(f"          {line}")

    def _diff(self, diff: str) -> None:
        for line in diff.splitlines():
            self._line(f"            {line}")

    def _line(self, line: str) -> None:
        # Names and messages come from hosts and playbooks: no escape sequence reaches the log.
        print(plain(line), file=self.stream, flush=True)

    def __exit__(self, *exc) -> None:
        self.flush()


class LiveProgress(_Narrating):
    """A panel redrawn in place four times a second (so the clocks move during a long task):
    elapsed time, hosts and task outcomes, the current play and task (n/N, hosts done, its time)
    and, during validation, the failed checks so far. What tasks say is printed above it; the
    panel is cleared at the end, when the summary takes its place."""

    def __init__(self, recorder: RunRecorder, console: Console, show_changes: bool = False):
        super().__init__(recorder, show_changes)
        self.console = console
        self.lock = threading.Lock()
        self._pending: list[Text] = []
        self.live = Live(_Panel(self), console=console, refresh_per_second=4, transient=True, redirect_stdout=False)

    def __call__(self, event: dict) -> bool:
        with self.lock:
            keep = self.recorder(event)
            self._after_event()
        self._print_pending()
        return keep

    def _print_pending(self) -> None:
        """Printed without the lock held: the refresh thread holds Live's lock and waits for ours."""
        with self.lock:
            pending, self._pending = self._pending, []
        for text in pending:
            self.live.console.print(text, soft_wrap=True, highlight=False)

    def _say(self, label: str, text: str, style: str) -> None:
        # Text, not str: Rich would read a host's message holding "[/x]" as markup.
        self._pending.append(Text.assemble((plain(label), style), plain(text)))

    def _diff(self, diff: str) -> None:
        for line in plain(diff).splitlines():
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            self._pending.append(Text("    " + line, style=style))

    def render(self) -> Table:
        with self.lock:
            return render_panel(self.recorder)

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.flush()
        self._print_pending()
        self.live.__exit__(*exc)


class _Panel:
    """Rendered anew at each refresh, not only at each event."""

    def __init__(self, progress: LiveProgress):
        self.progress = progress

    def __rich__(self) -> Table:
        return self.progress.render()


def render_panel(recorder: RunRecorder) -> Table:
    totals = recorder.totals
    hosts = len(recorder.hosts)
    failed = sum(1 for h in recorder.hosts.values() if h.failed_tasks)
    unreachable = sum(1 for h in recorder.hosts.values() if h.unreachable)
    # What matters most first: at 80 columns the line is cut at its end, not wrapped.
    status = Text.assemble(
        (present.clock(recorder.elapsed), "bold"),
        ("  hosts ", "dim"),
        str(hosts),
        ("  failed ", "dim"),
        (str(failed), "bold red" if failed else ""),
        ("  unreachable ", "dim"),
        (str(unreachable), "bold red" if unreachable else ""),
    )
    if recorder.failed_checks or recorder.validation_dir:
        checks = recorder.failed_checks
        status.append_text(Text.assemble(("  failed checks ", "dim"), (str(checks), "bold red" if checks else "")))
    status.append_text(
        Text.assemble(
            ("  ok ", "dim"),
            (str(totals.get("ok", 0)), "green"),
            ("  changed ", "dim"),
            (str(totals.get("changed", 0)), "yellow" if totals.get("changed") else ""),
        )
    )
    task = recorder.current
    number = (
        f"{recorder.tasks_started}/{max(recorder.expected_tasks, recorder.tasks_started)}"
        if recorder.expected_tasks
        else str(recorder.tasks_started)
    )
    task_line = Text.assemble(("task ", "dim"), (number, "bold"), "  ")
    if task is not None:
        done = len(task.outcomes)
        of = max(len(task.hosts_started), len(recorder.play_hosts), done)
        task_line.append_text(
            Text.assemble(
                present.clock(task.duration), ("  hosts done ", "dim"), f"{done}/{of}", "  ", plain(task.name)
            )
        )
    else:
        task_line.append(plain(recorder.task or "-"))
    # One line each, cut with an ellipsis at the terminal's width rather than wrapped.
    lines = [status, Text.assemble(("play ", "dim"), plain(recorder.play or "-")), task_line]
    grid = Table.grid(expand=True)
    grid.add_column(no_wrap=True, overflow="ellipsis")
    for line in lines:
        line.no_wrap = True
        line.overflow = "ellipsis"
        grid.add_row(line)
    return grid


def choose(recorder: RunRecorder, console: Console, json_output: bool, show_changes: bool = False) -> QuietProgress:
    if json_output:
        return QuietProgress(recorder)
    if console.is_terminal:
        return LiveProgress(recorder, console, show_changes)
    return PlainProgress(recorder, show_changes=show_changes)
