"""Parser for nccl-tests output (all_reduce_perf, all_gather_perf, ...).

Two table layouts exist. Newer nccl-tests print ``size count type redop root`` and a ``#wrong``
column (count of wrong elements, "N/A" when -c 0); older ones print ``size count type redop`` (or
no redop) and an ``error`` column (max relative error, "N/A" without validation). Each layout
repeats time/algbw/busbw/<check> for out-of-place then in-place.

Robust to what real logs contain: NCCL INFO/WARN lines between rows, mpirun --tag-output
prefixes (``[1,0]<stdout>:``), srun --label prefixes (``0: ``), CRLF line ends, kubectl noise
before the header, and a header whose leading "#" was lost. Stdlib only.

A run that stopped early is a failed run, raised as ToolFailed with the reason quoted: a failure
nccl-tests or the launcher reports (``Test CUDA failure``, ``Test NCCL failure``, an MPI abort, an
srun error) without the closing "Avg bus bandwidth" line, the tool's header without any result
row, or a table cut short. Output with none of nccl-tests' own lines is a ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible.module_utils.verdicts import ParseError, ToolFailed, finite


class NcclTestsParseError(ParseError):
    pass


@dataclass(frozen=True)
class NcclResult:
    time_us: float
    algbw: float  # GB/s
    busbw: float  # GB/s
    wrong: int | None = None  # newer layout; None when N/A
    error: float | None = None  # older layout; None when N/A


@dataclass(frozen=True)
class NcclRow:
    size: int  # bytes
    count: int  # elements
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: NcclResult
    in_place: NcclResult

    @property
    def busbw(self) -> float:
        return max(self.out_of_place.busbw, self.in_place.busbw)


@dataclass(frozen=True)
class NcclRank:
    rank: int
    group: int | None
    pid: int
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True)
class NcclReport:
    layout: str  # "wrong" (newer) or "error" (older)
    header: dict[str, str]  # nThread, nGpus, minBytes, ..., validation
    ranks: tuple[NcclRank, ...]
    rows: tuple[NcclRow, ...]
    avg_busbw: float | None
    out_of_bounds: int | None
    out_of_bounds_ok: bool | None
    failures: tuple[str, ...]  # "Test NCCL failure ..." and similar lines
    warnings: tuple[str, ...] = ()  # "NCCL WARN ..." lines

    @property
    def n_ranks(self) -> int | None:
        return len(self.ranks) or None

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.host for r in self.ranks))

    @property
    def max_busbw(self) -> float:
        return max(row.busbw for row in self.rows)


_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<(?:stdout|stderr)>:|\s*\d+:\s)")
_HEADER = re.compile(r"^#?\s*nThread\s")
_RANK = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]+)\]\s+(?P<name>.*?)\s*$"
)
_COLUMNS = re.compile(r"^#\s*size\s+count\s+type\b")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s+(?P<verdict>\S+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<bw>[0-9.]+)")
# What ends a run early: nccl-tests' own "Test ... failure" (the NCCL 1.x form without "Test"),
# and the launchers' words for a rank that died (Open MPI, PRRTE, Slurm).
_ABORT = re.compile(
    r"Test (?:NCCL |CUDA )?failure|\b(?:NCCL|CUDA) failure \S+\.cu:\d+"
    r"|MPI_ABORT was invoked|Primary job\s+terminated normally, but"
    r"|^(?:mpirun|prterun|mpiexec) (?:noticed|detected|has exited|was unable)"
    r"|^srun: error: |^slurmstepd: error: |\*\*\* Process received signal \*\*\*"
)
_FAILURE = re.compile(r"\bFAILED\b|" + _ABORT.pattern)
# A quoted error ('unhandled cuda error', 'system not yet initialized') says most about a failure.
_QUOTED = re.compile(r"'[^']+'")

# Row keys before the first "time" column, by layout seen in real outputs.
_KEYS_BY_WIDTH = {
    13: ("size", "count", "type", "redop", "root"),
    12: ("size", "count", "type", "redop"),
    11: ("size", "count", "type"),  # older all_gather/broadcast tables: no redop
}


def _header_fields(line: str) -> dict[str, str]:
    # "nThread 1 nGpus 8 minBytes 1 ... step: 2(factor) warmup iters: 5 iters: 20 validation: 0"
    body = line.lstrip("#").strip()
    fields = dict(re.findall(r"(nThread|nGpus|minBytes|maxBytes)\s+(\S+)", body))
    fields.update(re.findall(r"((?:warmup |agg )?iters|step|validation|graph):\s*(\S+)", body))
    return fields


def _check_value(text: str, layout: str) -> tuple[int | None, float | None]:
    if text == "N/A":
        return None, None
    if layout == "wrong":
        return int(text), None
    return None, finite(text)


def _row(tokens: list[str], keys: tuple[str, ...], layout: str) -> NcclRow:
    n = len(keys)
    head = {key: tokens[i] for i, key in enumerate(keys)}

    def result(offset: int) -> NcclResult:
        time_us, algbw, busbw, check = tokens[offset : offset + 4]
        wrong, error = _check_value(check, layout)
        return NcclResult(finite(time_us), finite(algbw), finite(busbw), wrong, error)

    return NcclRow(
        size=int(head["size"]),
        count=int(head["count"]),
        dtype=head["type"],
        redop=head.get("redop"),
        root=int(head["root"]) if "root" in head else None,
        out_of_place=result(n),
        in_place=result(n + 4),
    )


def parse_nccl_tests(text: str, source: str = "nccl-tests") -> NcclReport:
    header: dict[str, str] = {}
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    failures: list[str] = []
    warnings: list[str] = []
    keys: tuple[str, ...] | None = None
    layout: str | None = None
    avg = None
    oob = None
    oob_ok = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX.sub("", raw.rstrip("\r\n")).rstrip()
        if not line.strip():
            continue
        if _HEADER.match(line):
            header = _header_fields(line)
        elif match := _RANK.match(line):
            group = match["group"]
            ranks.append(
                NcclRank(
                    rank=int(match["rank"]),
                    group=int(group) if group is not None else None,
                    pid=int(match["pid"]),
                    host=match["host"],
                    device=int(match["device"]),
                    bus_id=match["bus"],
                    name=match["name"],
                )
            )
        elif _COLUMNS.match(line):
            columns = line.lstrip("#").split()
            first_time = columns.index("time") if "time" in columns else -1
            if first_time < 3 or len(columns) != first_time + 8:
                raise NcclTestsParseError("unexpected column header", source=source, line=number, text=line)
            keys = tuple(columns[:first_time])
            layout = "wrong" if "#wrong" in columns else "error"
        elif match := _OOB.match(line):
            oob, oob_ok = int(match["n"]), match["verdict"] == "OK"
        elif match := _AVG.match(line):
            try:
                avg = finite(match["bw"])
            except ValueError as exc:
                raise NcclTestsParseError(str(exc), source=source, line=number, text=line) from None
        elif line.lstrip()[:1].isdigit():
            tokens = line.split()
            if not (tokens[0].isdigit() and len(tokens) > 2 and tokens[1].isdigit()):
                continue  # "2024-..." timestamps and the like, not a table row
            if keys is None:
                # The header block was not captured (tables copied without it): infer from width.
                if len(tokens) not in _KEYS_BY_WIDTH:
                    raise NcclTestsParseError("data row without a column header", source=source, line=number, text=line)
                keys = _KEYS_BY_WIDTH[len(tokens)]
            if len(tokens) != len(keys) + 8:
                raise NcclTestsParseError(
                    f"row has {len(tokens)} fields, expected {len(keys) + 8}", source=source, line=number, text=line
                )
            if layout is None:
                layout = "wrong" if tokens[len(keys) + 3].isdigit() else "error"
            try:
                rows.append(_row(tokens, keys, layout))
            except ValueError as exc:
                raise NcclTestsParseError(f"bad number in row: {exc}", source=source, line=number, text=line) from None
        elif _FAILURE.search(line):
            failures.append(line.strip())
        elif "NCCL WARN" in line:
            warnings.append(line.strip())
    _raise_if_stopped_early(rows, avg, failures, bool(header or ranks or keys), source)
    return NcclReport(
        layout or "error", header, tuple(ranks), tuple(rows), avg, oob, oob_ok, tuple(failures), tuple(warnings)
    )


def _raise_if_stopped_early(rows: list, avg: float | None, failures: list, started: bool, source: str) -> None:
    """ToolFailed for a run that did not finish; ParseError for output that is not nccl-tests' at all.

    A finished run ends with "# Avg bus bandwidth"; its failure lines (wrong values) are judged."""
    stops = [f for f in failures if _ABORT.search(f)]
    if stops and (not rows or avg is None):
        reason = next((f for f in stops if _QUOTED.search(f)), stops[0])
        more = f" (and {len(stops) - 1} more failure lines)" if len(stops) > 1 else ""
        raise ToolFailed(f"the run failed: {reason}{more}", source=source)
    if not rows:
        if started:
            raise ToolFailed("the run stopped before the result table", source=source)
        raise NcclTestsParseError("no nccl-tests header, rank list or result table", source=source)
    if avg is None and started:
        raise ToolFailed(
            f"the run stopped after {len(rows)} result rows, before the 'Avg bus bandwidth' line", source=source
        )
