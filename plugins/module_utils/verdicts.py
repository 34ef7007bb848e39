"""Verdicts of the node checks: the statuses and their order, one check's result, and what parsers raise.

A parser tells two things apart: output that is not its tool's at all (empty, "command not found",
another tool's output) raises ParseError, which the caller reports as unreadable input; the tool's
own output that stopped early (a CUDA or NCCL error, an MPI abort, a lost device) raises ToolFailed,
a verdict on the run: failed_run() turns it into a fail quoting the tool's reason, on the nodes and
on the controller alike.

Stdlib only: Ansible ships this file to the nodes as ``ansible.module_utils.verdicts``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

PASS = "pass"
WARN = "warn"
FAIL = "fail"
SKIPPED = "skipped"
# The one verdict order, worst first: an overall verdict is the worst status of its parts, and a
# skipped check never makes a run pass on its own (see overall()). The controller (the validation
# report and playbook filters) imports this file too, so the order is stated here only.
STATUSES = (FAIL, WARN, PASS, SKIPPED)
_SEVERITY = {status: len(STATUSES) - rank for rank, status in enumerate(STATUSES)}

NO_HARDWARE = "skipped: no hardware"
# A module in replay mode (replay_dir, replay) judges outputs recorded earlier, not the node: its
# verdicts look like a live run's, so every artefact made from them (report, report.json, JUnit,
# metrics, the Slurm health hook's drain reason) says this, per check and per host.
REPLAYED = "replayed from recorded outputs"
LIVE = "live"


def origin(source: Any) -> str:
    """REPLAYED for a module run whose `source` result says it judged recordings ("replay",
    "replay:<reader>"), else LIVE."""
    return REPLAYED if str(source or "").startswith("replay") else LIVE


class ParseError(ValueError):
    """Command output the parser does not understand; says which output, which line and why."""

    def __init__(self, message: str, *, source: str = "", line: int | None = None, text: str | None = None) -> None:
        self.reason = message
        self.source = source
        self.line = line
        self.text = text
        detail = f"{_where(source, line)}: {message}"
        if text is not None:
            detail += f" (got {text.strip()[:120]!r})"
        super().__init__(detail)


class ToolFailed(Exception):
    """The tool's own output, cut short by a failure it reported: the run failed (not a ParseError)."""

    def __init__(self, reason: str, *, source: str = "", line: int | None = None) -> None:
        self.reason = reason
        self.source = source
        self.line = line
        super().__init__(f"{_where(source, line)}: {reason}")


def _where(source: str, line: int | None) -> str:
    """Which output, and which line of it, a parser error or a tool's failure is in."""
    return f"{source or 'output'} line {line}" if line is not None else source or "output"


def raise_if_failed(text: str, marker: re.Pattern, source: str, what: str) -> None:
    """ToolFailed quoting the first line where `marker` finds the tool's own failure message."""
    for number, line in enumerate(text.replace("\r", "").splitlines(), start=1):
        if marker.search(line):
            raise ToolFailed(f"{what}: {line.strip()[:300]}", source=source, line=number)


def finite(text: str) -> float:
    """float(text), refusing inf and nan (also "1e999", which overflows to inf): no output of a
    working tool holds one, and json cannot carry it."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


@dataclass(frozen=True)
class CheckResult:
    """One verdict: what was checked, what was measured against what was expected, and why."""

    check: str
    status: str
    measured: Any
    expected: Any
    message: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def result(check: str, status: str, measured: Any, expected: Any, message: str) -> CheckResult:
    return CheckResult(check=check, status=status, measured=measured, expected=expected, message=message)


def skipped(check: str, reason: str, expected: Any = None) -> CheckResult:
    return CheckResult(check=check, status=SKIPPED, measured=None, expected=expected, message=reason)


def absent(check: str, reason: str, expected: Any = None, required: bool = False) -> CheckResult:
    """The verdict on hardware (or its tool) that is not there: skipped with the reason, never
    pass; failed when the node is required to have it and something is expected of it."""
    if required and expected:
        return CheckResult(check, FAIL, None, expected, f"required but absent ({reason}); expected {expected}")
    return skipped(check, reason, expected)


def failed_run(check: str, failure: ToolFailed, rc: int | None = None) -> CheckResult:
    """The verdict on a run that stopped early: fail, quoting the tool's reason (and its exit status)."""
    exited = f"exited {rc}: " if rc else ""
    return CheckResult(check, FAIL, rc or None, "a complete run", f"{exited}{failure}")


def not_positive(expected: dict, *keys: str) -> str | None:
    """Why a bandwidth threshold cannot be judged against (it is divided by): the first of the keys
    whose value is 0 or less, named with its value; None when all are above 0 or not given."""
    for key in keys:
        value = expected.get(key)
        if value is not None and not value > 0:
            return f"{key} must be above 0, got {value!r}: nothing to judge against"
    return None


def severity(status: str) -> int:
    """Rank of a status in the verdict order (higher is worse); anything unknown ranks as FAIL, so a
    record that is not understood can never pass."""
    return _SEVERITY.get(status, _SEVERITY[FAIL])


def worst(statuses: Iterable[str]) -> str:
    """The most severe of the statuses; SKIPPED when there are none. An unknown status is FAIL."""
    found = max(statuses, key=severity, default=SKIPPED)
    return found if found in _SEVERITY else FAIL


def overall(results: Iterable[CheckResult]) -> str:
    """The verdict of a list of checks: the worst one, where all-skipped stays skipped (never pass)."""
    return worst(r.status for r in results)
