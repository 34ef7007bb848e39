"""The validation's last verdicts as node_exporter textfile metrics, so a failing check can alert.

One file per node (clusterforge_validation.prom in node_exporter's textfile directory), rewritten
whole by each validation run:

    clusterforge_validation_check_ok{module, check, run, origin}
                                                              1 unless the check failed, else 0
    clusterforge_validation_check_measured{module, check, run, field, origin}
                                                              each number the check measured
    clusterforge_validation_host_ok{origin}                   1 unless the host's verdict is fail
    clusterforge_validation_last_run_timestamp_seconds        when the run wrote the file

`run` numbers the node's module runs in record order (a module runs once per NCCL test, per HCA),
so a check measured twice keeps both series. A check's status is its `status` label. `origin` is
"live", or "replayed from recorded outputs" for a module run in replay mode (and, on host_ok, for a
node with any such run): those numbers were never measured on this node.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from clusterforge.validation.judges import load

verdicts = load("verdicts")
PREFIX = "clusterforge_validation"
FAIL = "fail"


def escape(value: Any) -> str:
    """A label value in the text exposition format."""
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: Any) -> str:
    return "{" + ",".join(f'{key}="{escape(value)}"' for key, value in labels.items()) + "}"


def _numbers(measured: Any, field: str = "") -> list[tuple[str, float]]:
    """The finite numbers in a measured value: itself, or a dict's / list's numbers by field path."""
    if isinstance(measured, bool):
        return [(field or "value", 1.0 if measured else 0.0)]
    if isinstance(measured, (int, float)):
        return [(field or "value", float(measured))] if math.isfinite(measured) else []
    if isinstance(measured, Mapping):
        found = []
        for key, value in measured.items():
            found.extend(_numbers(value, f"{field}.{key}" if field else str(key)))
        return found
    if isinstance(measured, (list, tuple)):
        found = []
        for index, value in enumerate(measured):
            found.extend(_numbers(value, f"{field}.{index}" if field else str(index)))
        return found
    return []


def _number(value: float) -> str:
    return repr(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def render(records: Iterable[Mapping[str, Any]], host_status: str, timestamp: float) -> str:
    """The textfile of one node from its validation records (playbooks/validate.yml's)."""
    ok_lines: list[str] = []
    measured_lines: list[str] = []
    origins = set()
    for run, record in enumerate(records):
        module = str(record.get("module", "unknown"))
        origin = verdicts.origin(record.get("source"))
        origins.add(origin)
        checks = record.get("checks")
        if not isinstance(checks, list) or "error" in record:
            # The module crashed before judging anything: that is a failed check too.
            labels = _labels(module=module, check="run", run=run, status=FAIL, origin=origin)
            ok_lines.append(f"{PREFIX}_check_ok{labels} 0")
            continue
        for check in checks:
            name = str(check.get("check", "unknown"))
            status = str(check.get("status", FAIL))
            ok = 0 if status == FAIL or status not in ("pass", "warn", "skipped") else 1
            labels = _labels(module=module, check=name, run=run, status=status, origin=origin)
            ok_lines.append(f"{PREFIX}_check_ok{labels} {ok}")
            for field, value in _numbers(check.get("measured")):
                labels = _labels(module=module, check=name, run=run, field=field, origin=origin)
                measured_lines.append(f"{PREFIX}_check_measured{labels} {_number(value)}")
    host_origin = verdicts.REPLAYED if verdicts.REPLAYED in origins else verdicts.LIVE
    lines = [
        f"# HELP {PREFIX}_check_ok 1 unless the check failed in the last validation run (status label: its verdict).",
        f"# TYPE {PREFIX}_check_ok gauge",
        *ok_lines,
        f"# HELP {PREFIX}_check_measured A number the check measured in the last validation run.",
        f"# TYPE {PREFIX}_check_measured gauge",
        *measured_lines,
        f"# HELP {PREFIX}_host_ok 1 unless the node's verdict in the last validation run was fail.",
        f"# TYPE {PREFIX}_host_ok gauge",
        f"{PREFIX}_host_ok{_labels(origin=host_origin)} {0 if host_status == FAIL else 1}",
        f"# HELP {PREFIX}_last_run_timestamp_seconds When the last validation run wrote this file.",
        f"# TYPE {PREFIX}_last_run_timestamp_seconds gauge",
        f"{PREFIX}_last_run_timestamp_seconds {_number(float(timestamp))}",
    ]
    return "\n".join(lines) + "\n"
