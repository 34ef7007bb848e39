"""The result files playbooks/validate.yml writes, read as untrusted input.

A run directory may come from any inventory, be copied around or be edited by hand, so each file
is read as a regular file of bounded size (never a FIFO, device or a symbolic link out of the
directory), parsed as strict JSON (no NaN or Infinity, bounded nesting, valid Unicode) and validated against
the shapes below before the report uses it. Every problem is a UsageError that names the file
and the field.

The models describe what the report reads; other fields pass through unchecked (extra="allow").
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from clusterforge.errors import UsageError
from clusterforge.safe_read import MiB, read_bytes

HOST_SCHEMA = "clusterforge.validation.host/1"
RUN_SCHEMA = "clusterforge.validation.run/1"
MAX_FILE_BYTES = 32 * MiB  # a host of a large run writes well under 1 MiB
MAX_DEPTH = 64  # a result nests a few levels; deeper input would exhaust the recursion limit later

# Bus bandwidth in GB/s: finite, not negative, and far below an overflow when the chart scales it.
GBps = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class CheckResult(_Record):
    check: str
    status: str
    measured: JsonValue = None
    expected: JsonValue = None
    message: str | None = None


class BusBandwidth(_Record):
    measured: GBps | None = None
    reference: GBps | None = None
    floor: GBps | None = None


class ModuleRun(_Record):
    """One module run (plugins/filter/validation.py records), or {"error": ...} when it crashed."""

    module: str | None = None
    status: str | None = None
    checks: list[CheckResult] | None = None
    scope: str | None = None
    label: str | None = None
    hosts: list[str] | None = None
    busbw: BusBandwidth | None = None
    error: JsonValue = None
    msg: JsonValue = None


class HostFile(_Record):
    run_id: str | None = None
    host: str | None = None
    node_type: str | None = None
    unreachable: str | None = None  # why the host could not be reached (validate.yml's record)
    results: list[ModuleRun]


class Verdict(_Record):
    culprits: list[str] = []
    cleared: list[str] = []
    unresolved: list[list[str]] = []
    untested: list[str] = []


class Bisection(_Record):
    rounds: list[JsonValue] = []


class RunFile(_Record):
    run_id: str | None = None
    # The report's header (validate.yml writes them; older files lack them).
    cluster: str | None = None
    topology: str | None = None
    started: str | None = None
    versions: dict[str, str] | None = None
    group: list[str] | None = None  # the NCCL run across every healthy GPU node
    bisection: Bisection | None = None
    pairs: dict[str, JsonValue] | None = None
    failed_pairs: list[list[str]] | None = None
    verdict: Verdict | None = None


def read_host_file(path: Path) -> dict[str, Any]:
    """A <host>.json as a dict whose fields the report reads have the types above."""
    data = read_json(path)
    if data.get("schema") != HOST_SCHEMA:
        raise UsageError(f"{path}: schema {_short(data.get('schema'))}, expected {HOST_SCHEMA!r}")
    _validate(HostFile, data, path)
    return data


def read_run_file(path: Path) -> dict[str, Any]:
    """_run.json (the pairs and the bisection's verdict) as a dict, validated like read_host_file."""
    data = read_json(path)
    if data.get("schema", RUN_SCHEMA) != RUN_SCHEMA:
        raise UsageError(f"{path}: schema {_short(data.get('schema'))}, expected {RUN_SCHEMA!r}")
    _validate(RunFile, data, path)
    return data


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a regular file in the run directory (a symbolic link is refused)."""
    text = read_bytes(path, MAX_FILE_BYTES, follow_symlinks=False)
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise UsageError(f"{path}: nested too deeply; expected at most {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise UsageError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object, found {type(data).__name__}")
    _check_values(data, path)
    return data


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number; expected finite numbers")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range; expected finite numbers")
    return value


def _check_values(data: Any, path: Path) -> None:
    """Refuse nesting deeper than MAX_DEPTH and text UTF-8 cannot hold (a lone surrogate from a
    \\ud800 escape), which the report could not print or write. Iterative: no recursion to exhaust."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError(
                    f"{path}: text with a lone surrogate ({value[:40]!a}); expected valid Unicode"
                ) from None
        elif isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise UsageError(f"{path}: nested too deeply; expected at most {MAX_DEPTH} levels")
            items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)


def _validate(model: type[BaseModel], data: dict[str, Any], path: Path) -> None:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_location(error['loc'])}: {error['msg']}" for error in exc.errors(include_url=False)]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UsageError(f"{path}: {'; '.join(problems[:3])}{more}") from None


def _location(loc: tuple) -> str:
    """('results', 0, 'checks', 2, 'status') -> results[0].checks[2].status"""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "(document)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
