"""Extract NVIDIA Xid (GPU) and SXid (NVSwitch) events from a kernel log (dmesg, journalctl -k).

Line shapes, after any timestamp/host prefix:
  NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
  NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: ...   (MIG instance in the id)
  nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
A log without Xid lines is the normal case, so this never raises on content. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
_XID = re.compile(rf"NVRM: Xid \((?:PCI:)?(?P<pci>{_BUS})[^)]*\): (?P<code>\d+),?\s*(?P<detail>.*)$")
_SXID = re.compile(r"(?P<dev>nvidia-nvswitch\d+): SXid \((?:PCI:)?(?P<pci>[^)]+)\): (?P<code>\d+),?\s*(?P<detail>.*)$")
_STAMP = re.compile(r"^\s*\[(?P<stamp>[^\]]+)\]\s*")


@dataclass(frozen=True)
class XidEvent:
    kind: str  # "Xid" (GPU, driver) or "SXid" (NVSwitch, fabric)
    code: int
    pci: str  # bus id as logged: "0000:91:00" for a GPU, "0000:06:00.0" for a switch
    detail: str
    timestamp: str | None  # "[...]" prefix as logged: seconds since boot or a --ctime date
    device: str | None  # nvidia-nvswitchN for SXid
    line: int  # 1-based line number in the log

    @property
    def fatal(self) -> bool:
        """SXid lines say "Fatal"/"Non-fatal" themselves; a GPU Xid carries no such word."""
        return self.detail.startswith("Fatal")


def parse_kernel_log(text: str) -> tuple[XidEvent, ...]:
    events = []
    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        if "Xid" not in raw:
            continue
        stamp = _STAMP.match(raw)
        timestamp = stamp["stamp"] if stamp else None
        match = _XID.search(raw)
        if match:
            events.append(XidEvent("Xid", int(match["code"]), match["pci"], match["detail"], timestamp, None, number))
            continue
        match = _SXID.search(raw)
        if match:
            event = XidEvent("SXid", int(match["code"]), match["pci"], match["detail"], timestamp, match["dev"], number)
            events.append(event)
    return tuple(events)
