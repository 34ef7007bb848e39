"""A check's measured value in a few words: "8x NVIDIA H100 80GB HBM3", "8/8 Gen5 x16", "29-32 C".

The node judges (plugins/module_utils/*_judge.py) keep every GPU's or port's raw value in
``measured`` ({bus_id or "mlx5_0/1": value}); that is exact but unreadable in a table cell. This
module turns it into one short line for people; the raw value stays next to it everywhere.
The validation report (HTML, JUnit, report.json), ``clusterforge check judge`` and the terminal call
``summarize(check, measured)``; it reads the value only, so results written before it existed
summarise too. An unknown shape falls back to a compact JSON text cut with an ellipsis.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

# Units of numeric measurements by check name (the last dotted part, or the whole name).
UNITS = {
    "gpu.temperature": "C",
    "gpu.power": "W",
    "ib.rate": "Gb/s",
    "ib.write_bw": "Gb/s",
    "busbw": "GB/s",
}
# What one entry of a per-unit table is, by the check's prefix.
UNIT_NAMES = {"gpu": "GPUs", "ib": "ports", "cabling": "links"}
# Checks whose per-unit values are identities (a model, a version): "8x NAME" reads better there.
IDENTITIES = ("gpu.model", "gpu.name", "gpu.vbios", "ib.firmware", "gpu.driver_version", "gpu.cuda_version")
MAX_CHARS = 120
NONE = "-"


def cut(text: str, limit: int) -> str:
    """text of at most limit characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "\u2026"


def _unit(check: str) -> str:
    if check in UNITS:
        return UNITS[check]
    return UNITS.get(check.rsplit(".", 1)[-1], "")


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _one(value: Any) -> str:
    """One unit's value in words."""
    if value is None:
        return "not reported"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_one(v) for v in value) if value else "none"
    if isinstance(value, dict):
        if all(v is None for v in value.values()):
            return "not reported"
        if {"gen", "width"} <= set(value):  # gpu.pcie
            text = f"Gen{value['gen']} x{value['width']}"
            if (value.get("gen_max"), value.get("width_max")) not in ((value["gen"], value["width"]), (None, None)):
                text += f" of Gen{value.get('gen_max')} x{value.get('width_max')}"
            return text
        if "state" in value and set(value) <= {"state", "status"}:  # gpu.fabric
            status = value.get("status")
            return str(value["state"]) + (f" ({status})" if status not in (None, "Success") else "")
        # Error counters and flags (ecc, row_remap, retired_pages, ib.counters): the ones set.
        set_ = {k: v for k, v in value.items() if v}
        if not set_:
            return "clean"
        return ", ".join(f"{k} {v}" if not isinstance(v, bool) else k for k, v in sorted(set_.items()))
    return _number(value) if _is_number(value) else str(value)


def _table(check: str, table: dict[str, Any]) -> str:
    """A per-GPU or per-port table: a range of numbers, else each distinct value with its count."""
    total = len(table)
    values = list(table.values())
    unit = _unit(check)
    numbers = [v for v in values if _is_number(v)]
    if numbers and len(numbers) == total:
        low, high = min(numbers), max(numbers)
        span = _number(low) if low == high else f"{_number(low)}-{_number(high)}"
        return f"{span} {unit}".strip() + ("" if total == 1 else f" ({total} {_noun(check)})")
    groups = Counter(_one(v) for v in values)
    if list(groups) == ["not reported"]:
        return f"not reported ({total} {_noun(check)})"
    identity = check in IDENTITIES
    parts = [
        (f"{count}x {text}" if identity else f"{count}/{total} {text}")
        for text, count in sorted(groups.items(), key=lambda item: (-item[1], item[0]))
    ]
    return "; ".join(parts)


def _noun(check: str) -> str:
    return UNIT_NAMES.get(check.split(".", 1)[0], "values")


def _acs_pairs(pairs: dict[str, Any]) -> str:
    """pcie.acs: the GPU-NIC pairs whose path has a port redirecting (and the port), else how many were clean."""
    bad = [f"{pair} at {', '.join(v['redirecting'])}" for pair, v in pairs.items() if v and v.get("redirecting")]
    if bad:
        return f"{len(bad)}/{len(pairs)} GPU-NIC pairs redirected: {'; '.join(bad)}"
    dark = sum(1 for v in pairs.values() if v and v.get("unknown"))
    return f"{len(pairs)} GPU-NIC pairs, none redirected" + (f" ({dark} with ports of unknown ACS)" if dark else "")


def summarize(check: str, measured: Any, limit: int = MAX_CHARS) -> str:
    """measured in a few words, at most limit characters; NONE for a value that is not there."""
    if measured is None or measured == "" or measured == {}:
        return NONE
    if check.split(".")[:2] == ["pcie", "acs"] and isinstance(measured, dict):
        text = _acs_pairs(measured)
    elif isinstance(measured, dict):
        text = _table(check, measured)
    elif isinstance(measured, list):
        if not measured:
            text = "none"
        elif all(isinstance(v, str | int | float) for v in measured):
            shown = ", ".join(_one(v) for v in measured[:4])
            text = shown if len(measured) <= 4 else f"{len(measured)}: {shown}, \u2026"
        else:
            text = json.dumps(measured, sort_keys=True, default=str)
    elif _is_number(measured):
        unit = _unit(check)
        text = f"{_number(round(measured, 2) if isinstance(measured, float) else measured)} {unit}".strip()
        if check.endswith(".count") and check.startswith("gpu"):
            text = f"{measured} GPUs"
        elif check.endswith(".correctness"):
            text = f"{measured} wrong values"
    else:
        text = _one(measured)
    return cut(text, limit) if text.strip() else NONE
