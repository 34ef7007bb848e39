"""debootstrap's progress, read as it runs.

With --debian-installer, debootstrap writes its steps to file descriptor 3 in the form
debian-installer's base-installer reads: `P: <now> <end> <NAME>` then `PA: <arg>`... and
`PF: <format>` for progress with a known total, `I:`/`W:`/`E:` (with `IA:`/`IF:`...) for its
messages, and a bare `P: <now> <end>` while a download advances. Its full log (dpkg's output)
goes to stdout; the build sends both to one pipe and keeps the log's last lines for an error."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

_FORMAT_FIELD = re.compile(r"%[sd]")
TAIL_LINES = 15
# Messages debootstrap gives once per package (hundreds of lines): a progress bar shows them as
# they pass, a plain log leaves them out.
PER_PACKAGE = frozenset({"RETRIEVING", "VALIDATING", "EXTRACTING", "UNPACKING", "CONFIGURING"})


@dataclass(frozen=True)
class Step:
    """One thing debootstrap said: a message (kind I, W or E), or progress (kind P) with
    `now` of `end` done; `name` is debootstrap's own name for it (DOWNDEBS, EXTRACTING, ...)."""

    kind: str
    name: str
    text: str
    now: int | None = None
    end: int | None = None


class Reader:
    """Turns debootstrap's lines into Steps; every other line is log, of which the tail is kept."""

    def __init__(self) -> None:
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._pending: tuple[str, str, list[str], int | None, int | None] | None = None
        self._progress: Step | None = None

    def feed(self, line: str) -> Step | None:
        line = line.rstrip("\n")
        tag, _, rest = line.partition(": ")
        if tag in ("P", "I", "W", "E"):
            return self._start(tag, rest)
        if self._pending is not None and len(tag) == 2 and tag[0] == self._pending[0]:
            if tag[1] == "A":
                self._pending[2].append(rest)
                return None
            if tag[1] == "F":
                return self._finish(rest)
        self.tail.append(line)
        return None

    def _start(self, kind: str, rest: str) -> Step | None:
        if kind != "P":
            self._pending = (kind, rest.strip(), [], None, None)
            return None
        fields = rest.split()
        try:
            now, end = int(fields[0]), int(fields[1])
        except (IndexError, ValueError):
            self.tail.append(f"P: {rest}")
            return None
        if len(fields) == 2:  # a download advancing within the current step
            if self._progress is None:
                return None
            self._progress = Step("P", self._progress.name, self._progress.text, now, end)
            return self._progress
        self._pending = ("P", fields[2], [], now, end)
        return None

    def _finish(self, fmt: str) -> Step:
        kind, name, args, now, end = self._pending
        self._pending = None
        values = iter(args)
        text = _FORMAT_FIELD.sub(lambda _: next(values, ""), fmt).strip()
        step = Step(kind, name, text, now, end)
        if kind == "P":
            self._progress = step
        return step


class StageLog:
    """Steps as plain lines, for a log or a pipe: each message, and each progress step once when
    it starts (with its total), never a line per package."""

    def __init__(self, log) -> None:
        self.log = log
        self._named: set[str] = set()

    def __call__(self, step: Step) -> None:
        # A stage often comes as a message then progress of the same name ("Unpacking required
        # packages..." then its progress), and progress resumes after a message or names its
        # stage again when done: one line for each name.
        if step.kind == "P":
            if step.name not in self._named:
                self._named.add(step.name)
                self.log(f"debootstrap: {step.text}")
        elif step.name not in PER_PACKAGE:
            self._named.add(step.name)
            prefix = {"W": "warning: ", "E": "error: "}.get(step.kind, "")
            self.log(f"debootstrap: {prefix}{step.text}")
