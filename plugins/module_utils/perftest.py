"""Parser for perftest bandwidth output (ib_write_bw, ib_read_bw, ib_send_bw).

One run starts with a "<Verb> BW Test" banner, lists settings as "Key : value" pairs (two per
line in some versions), then a result table:

     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      5000             92.42              92.40              0.176230

Units are MB/sec unless --report_gbits; newer versions add "BW min[...]". Anything else inside the
table region (e.g. "Conflicting CPU frequency values detected ...") is kept as a warning. A log
with both server and client output holds two runs.

GPU memory: with --use_cuda=N (or --use_cuda_dmabuf) perftest sets up CUDA before its banner
("initializing CUDA", "[pid = 1, dev = 0] device name = [Tesla T4]", "cuMemAlloc() of a N bytes GPU
buffer", "allocated GPU buffer address at ..."). A run after such lines has ``gpu`` set to the CUDA
device's name: its buffers were GPU memory, the path GPUDirect RDMA takes. Without them the run used
host memory (or its CUDA lines were cut from the log), and measured no GPUDirect.

A run that printed perftest's own error (" Completion with error at client", " Failed status 10:
...", "Couldn't ...") did not finish, even when rows came before it (a message-size sweep that broke
at its next size): ToolFailed.
Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible.module_utils.verdicts import ParseError, ToolFailed, finite, raise_if_failed


class PerftestParseError(ParseError):
    pass


@dataclass(frozen=True)
class PerftestRow:
    bytes: int
    iterations: int
    bw_peak: float
    bw_average: float
    msg_rate_mpps: float
    bw_min: float | None = None


@dataclass(frozen=True)
class PerftestRun:
    test: str  # "RDMA_Write BW Test"
    settings: dict[str, str]  # Device, Number of qps, Link type, Mtu, ...
    unit: str  # "MB/sec" or "Gb/sec"
    rows: tuple[PerftestRow, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    gpu: str | None = None  # the CUDA device whose memory held the buffers; None: host memory

    def gbps(self, value: float) -> float:
        """A bandwidth of this run in Gb/s.

        perftest's MB is 10^6 bytes: the SuperBench HDR loopback (200 Gb/s link) reports 24056 MB/sec,
        which is 192.5 Gb/s with 10^6 but an impossible 201.8 Gb/s with 2^20.
        """
        return value if self.unit == "Gb/sec" else value * 8 / 1000

    @property
    def bw_average_gbps(self) -> float:
        return max(self.gbps(row.bw_average) for row in self.rows)


_BANNER = re.compile(r"^\s*(?P<test>[A-Za-z_ ]+ (?:BW|Lat) Test)\s*$")
_TABLE = re.compile(r"^\s*#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]")
_SETTING = re.compile(r"([A-Za-z][A-Za-z0-9_ .*()-]*?)\s*:\s*(\S+(?: \S+)*?)(?=\s{2,}|\t|$)")
_PER_QP = ("local address", "remote address", "GID:")  # one line per QP; not settings
# perftest's own error lines: "Couldn't connect to HOST:PORT", "Unable to init the socket connection",
# "Failed to modify QP to RTS", " Completion with error at client"; some name the function that
# failed first ("ethernet_read_keys: Couldn't read remote address").
_FAILED = re.compile(r"^\s*(?:[a-z_]+: )?(?:Couldn't |Unable to |Failed to |Completion with error)")
_STATUS = re.compile(r"^\s*Failed status \d+")
_SEPARATOR = re.compile(r"^\s*[-*]+\s*$")
# perftest's CUDA set-up (src/cuda_memory.c) before a --use_cuda run's banner.
_CUDA_DEVICE = re.compile(r"^\s*\[pid = \d+, dev = \d+\] device name = \[(?P<name>[^\]]*)\]")
_CUDA_BUFFER = re.compile(r"^\s*(?:cuMemAlloc\(\) of a \d+ bytes GPU buffer|allocated GPU buffer address)")


def parse_perftest(text: str, source: str = "perftest") -> tuple[PerftestRun, ...]:
    runs: list[PerftestRun] = []
    test = None
    settings: dict[str, str] = {}
    unit: str | None = None
    columns = 0
    rows: list[PerftestRow] = []
    warnings: list[str] = []
    cuda_device: str | None = None  # named by the CUDA set-up lines seen since the last banner
    buffer_seen = False  # a GPU buffer was allocated since the last banner
    gpu: str | None = None

    def close() -> None:
        if test is not None and unit is not None:
            runs.append(PerftestRun(test, dict(settings), unit, tuple(rows), tuple(warnings), gpu))

    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if match := _CUDA_DEVICE.match(line):
            cuda_device = match["name"].strip() or "GPU"
            continue
        if _CUDA_BUFFER.match(line):
            cuda_device = cuda_device or "GPU"
            buffer_seen = True
            continue
        if match := _BANNER.match(line):
            close()
            test, settings, unit, rows, warnings = match["test"], {}, None, [], []
            gpu, cuda_device = (cuda_device if buffer_seen else None), None
            buffer_seen = False
        elif match := _TABLE.match(line):
            if test is None:
                raise PerftestParseError("result table before any test banner", source=source, line=number)
            unit = match["unit"]
            columns = len(re.findall(r"#bytes|#iterations|BW \w+\[|MsgRate\[", line))
        elif unit is not None:
            if _SEPARATOR.match(line):
                if rows:  # the rule under the rows ends the run; the one above them does not
                    close()
                    test, unit, rows, warnings = None, None, [], []
                continue
            tokens = line.split()
            if tokens[0].isdigit() and len(tokens) == columns:
                try:
                    values = [finite(t) for t in tokens]
                except ValueError as exc:
                    raise PerftestParseError(
                        f"bad number in result row: {exc}", source=source, line=number, text=line
                    ) from None
                rows.append(
                    PerftestRow(
                        bytes=int(values[0]),
                        iterations=int(values[1]),
                        bw_peak=values[2],
                        bw_average=values[3],
                        msg_rate_mpps=values[4],
                        bw_min=values[5] if columns > 5 else None,
                    )
                )
            else:
                warnings.append(line.strip())
        elif test is not None and ":" in line and not line.lstrip().startswith(_PER_QP):
            for key, value in _SETTING.findall(line.strip()):
                settings[key.strip()] = value.strip()
    close()
    if not any(run.rows for run in runs):
        raise_if_failed(text, _FAILED, source, "the test failed")
        if test is not None or runs:
            raise ToolFailed("the test stopped before its result rows", source=source)
        raise PerftestParseError("no perftest banner or result rows", source=source)
    _raise_if_aborted(text, [run for run in runs if run.rows], source)
    return tuple(run for run in runs if run.rows)


def _raise_if_aborted(text: str, runs: list[PerftestRun], source: str) -> None:
    """ToolFailed when perftest reported an error after printing rows: the bandwidth reached so far
    is no verdict on a run that did not finish. The reason names the device and the last row."""
    lines = text.replace("\r", "").splitlines()
    for number, line in enumerate(lines, start=1):
        if not _FAILED.search(line):
            continue
        # The completion error's next line carries the work request's status ("Failed status 12: ...").
        status = lines[number] if number < len(lines) and _STATUS.search(lines[number]) else ""
        run = runs[-1]
        last = run.rows[-1]
        device = run.settings.get("Device", "the device")
        reason = f"{line.strip()}{'; ' + status.strip() if status else ''}"
        raise ToolFailed(
            f"the test failed on {device} after its {last.bytes}-byte row "
            f"({run.gbps(last.bw_average):.2f} Gb/s average so far): {reason[:300]}",
            source=source,
            line=number,
        )
