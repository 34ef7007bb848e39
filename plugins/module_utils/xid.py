"""Extract GPU faults from a kernel log (dmesg, journalctl -k): NVIDIA Xid (GPU) and SXid (NVSwitch)
events, and the driver's own messages that a GPU is lost, which come with no Xid line at all.

Line shapes, after any timestamp/host prefix:
  NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
  NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: ...   (MIG instance in the id)
  nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
Lost GPUs (kind "lost"; tests/fixtures/kernel_log_xid holds a real log of each):
  NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.          (after an Xid 79)
  NVRM: GPU at 0000:01:00.0 has fallen off the bus.             (older drivers)
  NVRM: The NVIDIA GPU 0000:b3:00.0                             (driver probe: one message printed
  NVRM: (PCI ID: 10de:26b5) installed in this system has         over three lines, continuations
  NVRM: fallen off the bus and is not responding to commands.    indented or prefixed again)
  NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792) (the driver could not start the GPU)
A log without these lines is the normal case, so this never raises on content. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
_XID = re.compile(rf"NVRM: Xid \((?:PCI:)?(?P<pci>{_BUS})[^)]*\): (?P<code>\d+),?\s*(?P<detail>.*)$")
_SXID = re.compile(r"(?P<dev>nvidia-nvswitch\d+): SXid \((?:PCI:)?(?P<pci>[^)]+)\): (?P<code>\d+),?\s*(?P<detail>.*)$")
_STAMP = re.compile(r"^\s*\[(?P<stamp>[^\]]+)\]\s*")
_FUNCTION_BUS = rf"{_BUS}(?:\.[0-7])?"
# One-line lost-GPU messages: (pattern, what the driver says happened).
_LOST = (
    (re.compile(rf"NVRM: GPU (?:at )?(?P<pci>{_FUNCTION_BUS}):? (?:GPU )?has fallen off the bus"), "fell off the bus"),
    (re.compile(rf"NVRM: GPU (?P<pci>{_FUNCTION_BUS}): RmInitAdapter failed"), "failed to initialise (RmInitAdapter)"),
)
# The probe's message names the GPU on its first line and says "fallen off the bus" two lines later.
_PROBE = re.compile(rf"NVRM: The NVIDIA GPU (?P<pci>{_FUNCTION_BUS})")
_PROBE_LINES = 3
FELL_OFF = "fell off the bus"


@dataclass(frozen=True)
class XidEvent:
    kind: str  # "Xid" (GPU, driver), "SXid" (NVSwitch, fabric) or "lost" (the driver lost the GPU)
    code: int | None  # the Xid/SXid number; None for "lost", which the driver logs without one
    pci: str  # bus id as logged: "0000:91:00" for a GPU Xid, "0000:06:00.0" for a switch or a lost GPU
    detail: str  # the rest of the Xid line; for "lost", what happened (FELL_OFF, ...)
    timestamp: str | None  # "[...]" prefix as logged: seconds since boot or a --ctime date
    device: str | None  # nvidia-nvswitchN for SXid
    line: int  # 1-based line number in the log

    @property
    def fatal(self) -> bool:
        """SXid lines say "Fatal"/"Non-fatal" themselves; a GPU Xid carries no such word."""
        return self.detail.startswith("Fatal")


def _stamp(raw: str) -> str | None:
    stamp = _STAMP.match(raw)
    return stamp["stamp"].strip() if stamp else None  # "[   49.261458]" pads seconds to a width


def parse_kernel_log(text: str) -> tuple[XidEvent, ...]:
    events = []
    probe = None  # (bus id, timestamp, line) of a probe message still waiting for its "fallen off the bus"
    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        if probe is not None and number - probe[2] >= _PROBE_LINES:
            probe = None
        if "Xid" in raw:
            match = _XID.search(raw) or _SXID.search(raw)
            if match:
                kind, device = ("SXid", match["dev"]) if "dev" in match.groupdict() else ("Xid", None)
                code, detail = int(match["code"]), match["detail"]
                events.append(XidEvent(kind, code, match["pci"], detail, _stamp(raw), device, number))
            continue
        if "NVRM:" not in raw:
            continue
        match = _PROBE.search(raw)
        if match:
            probe = (match["pci"], _stamp(raw), number)
        if probe is not None and "fallen off the bus" in raw:
            events.append(XidEvent("lost", None, probe[0], FELL_OFF, probe[1], None, probe[2]))
            probe = None
            continue
        for pattern, what in _LOST:
            match = pattern.search(raw)
            if match:
                events.append(XidEvent("lost", None, match["pci"], what, _stamp(raw), None, number))
                break
    return tuple(events)
