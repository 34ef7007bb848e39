"""Judge ``nvidia-smi --query-gpu=... --format=csv`` rows (nvidia_smi.parse_query_gpu_csv).

The fields asked for decide what can be judged: each key of CSV_KEYS reads one column, and an
expectation whose column the output lacks is refused (ExpectationError), never skipped. Values
carry their unit ("23028 MiB", "0 %", "71.50 W") or not (``--format=csv,nounits``).

GPUs are counted and told apart by an identity column (index, pci.bus_id, uuid, serial) where the
capture has one. Without one, nvidia-smi's own layout counts them: one run prints one row per GPU,
so a one-shot capture's rows are the GPUs (row N is the Nth GPU it printed), and a capture that
repeats its header holds one such sample per header. A looped run (-l/-lms) prints the header once
and repeats the rows, which only its timestamp column gives away: without an identity column it
cannot be counted. Each GPU is judged on its worst sample. Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

from ansible.module_utils.expectation_keys import ExpectationError, Key
from ansible.module_utils.gpu_judge import GPU_COUNT, TEMPERATURE_WARN_C, judge_count
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, WARN, CheckResult, result, skipped, worst

IDENTITY_COLUMNS = ("index", "pci.bus_id", "uuid", "serial")
_NOT_REPORTED = {"", "N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", "[Unknown Error]"}

CSV_KEYS = {
    "gpu_count": GPU_COUNT,
    "product_name": Key(("str",), "name column of every GPU"),
    "driver_version": Key(("str",), "driver_version column of every GPU"),
    "temperature_warn_c": Key(("int",), f"warn above this temperature.gpu (default {TEMPERATURE_WARN_C} C)"),
    "power_draw_max_w": Key(("float",), "fail above this power.draw (W)"),
    "utilization_max_pct": Key(("int",), "fail above this utilization.gpu (%): the GPU is busy"),
    "memory_used_max_mib": Key(("int",), "fail above this memory.used (MiB): memory held by processes"),
    "memory_total_min_mib": Key(("int",), "fail below this memory.total (MiB): another model, or memory lost"),
}

# (check, column, unit, the status beyond the limit, whether the limit is a maximum) per bound key.
_BOUNDS = {
    "temperature_warn_c": ("gpu.temperature", "temperature.gpu", "C", WARN, True),
    "power_draw_max_w": ("gpu.power_draw", "power.draw", "W", FAIL, True),
    "utilization_max_pct": ("gpu.utilization", "utilization.gpu", "%", FAIL, True),
    "memory_used_max_mib": ("gpu.memory_used", "memory.used", "MiB", FAIL, True),
    "memory_total_min_mib": ("gpu.memory_total", "memory.total", "MiB", FAIL, False),
}
_TEXTS = {"product_name": ("gpu.model", "name"), "driver_version": ("gpu.driver_version", "driver_version")}


def _identity(rows) -> str | None:
    return next((column for column in IDENTITY_COLUMNS if rows and column in rows[0]), None)


def _samples(rows) -> tuple[int, ...]:
    """Rows per header line (nvidia_smi.QueryGpuRows); rows from elsewhere are one sample."""
    return getattr(rows, "samples", None) or (len(rows),)


def _labels(rows, identity: str | None) -> list[str]:
    if identity is not None:
        return [row[identity] for row in rows]
    # Without an identity column a row is known by its place in its sample.
    return [f"row {number}" for size in _samples(rows) for number in range(1, size + 1)]


def _column(rows, key: str, column: str) -> None:
    if not rows or column not in rows[0]:
        have = ", ".join(rows[0]) if rows else "none"
        raise ExpectationError(f"{key} reads the {column} column, which this CSV lacks (columns: {have})")


def _number(text: str, unit: str) -> float | None:
    """A value with or without its unit; None when not reported. C has no unit in the output."""
    if text in _NOT_REPORTED:
        return None
    match = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:\s*(\S+))?", text)
    if not match or (match[2] is not None and match[2] != unit):
        return float("nan")
    value = float(match[1])
    return int(value) if value.is_integer() else value


def _bound(rows, labels: list[str], key: str, limit: Any) -> CheckResult:
    check, column, unit, beyond, is_max = _BOUNDS[key]
    per_gpu: dict[str, list] = {}
    for index, row in enumerate(rows):
        per_gpu.setdefault(labels[index], []).append(_number(row[column], unit))
    statuses, measured, notes = [], {}, []
    for label, values in per_gpu.items():
        if any(v != v for v in values):  # NaN: a value that is not a number of this unit
            statuses.append(FAIL)
            measured[label] = None
            notes.append(f"{label}: {column} is not a number of {unit}")
            continue
        known = [v for v in values if v is not None]
        if not known:
            statuses.append(SKIPPED)
            measured[label] = None
            continue
        value = max(known) if is_max else min(known)
        measured[label] = value
        out = value > limit if is_max else value < limit
        statuses.append(beyond if out else PASS)
        if out:
            notes.append(f"{label}: {value:g} {unit} {'above' if is_max else 'below'} {limit:g}")
    status = worst(statuses)
    bound = f"{'<=' if is_max else '>='} {limit:g}"
    if status == SKIPPED:
        return result(check, SKIPPED, measured, bound, f"{column} not reported")
    return result(check, status, measured, bound, "; ".join(notes) or f"every GPU's {column} {bound} {unit}")


def _same(rows, labels: list[str], key: str, want: str) -> CheckResult:
    check, column = _TEXTS[key]
    measured = {labels[index]: row[column] for index, row in enumerate(rows)}
    # Names compare without case, as gpu_judge compares -q product names; versions exactly.
    fold = str.lower if key == "product_name" else str
    off = sorted(label for label, value in measured.items() if fold(value) != fold(want))
    message = f"{column} not {want} on {', '.join(off)}" if off else f"every GPU's {column} is {want}"
    return result(check, FAIL if off else PASS, measured, want, message)


def _count(rows, identity: str | None, expected: dict) -> CheckResult:
    if identity is not None:
        return judge_count(len(set(_labels(rows, identity))), expected)
    samples = _samples(rows)
    if len(samples) > 1:
        # A GPU missing from one sample was lost for that moment: the fewest rows count.
        counted = judge_count(min(samples), expected)
        spread = f"{min(samples)} to {max(samples)}" if min(samples) != max(samples) else str(min(samples))
        message = f"{counted.message} (fewest rows of {len(samples)} samples, each with {spread} rows)"
        return result(counted.check, counted.status, counted.measured, counted.expected, message)
    if not rows or "timestamp" not in rows[0]:
        return judge_count(len(rows), expected)  # one run of nvidia-smi: one row per GPU
    why = "a timestamp column and one header: a looped capture (-l/-lms), which repeats each GPU's row"
    if "gpu_count" in expected:
        raise ExpectationError(
            f"gpu_count cannot be read from this CSV: {why}; add index, pci.bus_id, uuid or serial to --query-gpu"
        )
    return skipped("gpu.count", f"not counted: {why}, and no index, pci.bus_id, uuid or serial column")


def judge_query_gpu_csv(rows, expected: dict) -> list[CheckResult]:
    """GPU count, then each expectation of CSV_KEYS against its column; temperature also unasked
    (at the default limit) when the column is there."""
    identity = _identity(rows)
    labels = _labels(rows, identity)
    results = [_count(rows, identity, expected)]
    for key, (_, column) in _TEXTS.items():
        if key in expected:
            _column(rows, key, column)
            results.append(_same(rows, labels, key, expected[key]))
    for key, (_, column, *_rest) in _BOUNDS.items():
        if key in expected:
            _column(rows, key, column)
            results.append(_bound(rows, labels, key, expected[key]))
        elif key == "temperature_warn_c" and rows and column in rows[0]:
            results.append(_bound(rows, labels, key, TEMPERATURE_WARN_C))
    return results
