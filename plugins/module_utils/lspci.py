"""Parser for ``lspci -vvv`` (and ``lspci -tv``): PCI devices, the bridge tree and each port's ACS control.

``lspci -vvv`` prints one block per function, its header flush left and its details indented:

    0000:02:08.0 PCI bridge: PLX Technology, Inc. PEX 8725 ... (rev ca) (prog-if 00 [Normal decode])
            Bus: primary=02, secondary=82, subordinate=82, sec-latency=0
            Capabilities: [148 v1] Access Control Services
                    ACSCap: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+
                    ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

A bridge's ``Bus:`` line gives the bus behind it, so the blocks alone make the tree. ``lspci -tv``
draws the same tree (``+-01.1-[43-53]--+-00.0-[44-53]--+-00.0-[45]----00.0  Mellanox ...``); text
holding both (or only the tree) is read too, the tree filling in what the blocks lack. Run without
root, lspci prints ``Capabilities: <access denied>`` instead of the extended capabilities: such a
port's ACS state is unknown, not off. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible.module_utils.verdicts import ParseError


class LspciParseError(ParseError):
    pass


@dataclass
class PciDevice:
    bdf: str  # "0000:45:00.0"
    description: str  # "Infiniband controller: Mellanox Technologies MT28908 Family [ConnectX-6]" (or the tree's name)
    bus: str  # "0000:45", the bus the device sits on
    secondary: str | None = None  # a bridge's bus behind it, "0000:46"
    acs_ctl: dict[str, bool] | None = None  # ACSCtl flags; None when not printed
    detailed: bool = False  # a -vvv block was read (so a missing ACS capability means none)
    access_denied: bool = False  # lspci ran without root: extended capabilities not shown


@dataclass
class PciTree:
    devices: dict[str, PciDevice] = field(default_factory=dict)

    def bridge_of(self, bus: str) -> PciDevice | None:
        """The bridge whose secondary bus is ``bus`` (None for a root bus)."""
        for device in self.devices.values():
            if device.secondary == bus:
                return device
        return None

    def ancestors(self, bdf: str) -> list[PciDevice]:
        """The bridges above a device, nearest first, up to the root bus."""
        chain: list[PciDevice] = []
        bus = self.devices[bdf].bus
        while (bridge := self.bridge_of(bus)) is not None and bridge not in chain:
            chain.append(bridge)
            bus = bridge.bus
        return chain


_BDF = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2}\.[0-7])\s+(?P<rest>\S.*)$"
)
_BUS = re.compile(r"^\s+Bus: primary=(?P<primary>[0-9a-f]{2}), secondary=(?P<secondary>[0-9a-f]{2})")
_ACSCTL = re.compile(r"^\s+ACSCtl:\s*(?P<flags>.*)$")
_FLAG = re.compile(r"(?P<name>[A-Za-z]+)(?P<on>[+-])")
# lspci -tv: a domain's root ("-[0000:40]-+-00.0"), then entries "01.1-[43-53]--" (a bridge with its
# bus range) or "00.0  Name" (a device); children of a bridge start 4 columns after its "]".
_TREE_DOMAIN = re.compile(r"\[(?P<domain>[0-9a-f]{4}):(?P<bus>[0-9a-f]{2})\]-[+\\-]-")
_TREE_LINE = re.compile(r"^\s*(?:[|+\\`]|-(?:[+\\-]-)?\[)")
_TREE_ENTRY = re.compile(
    r"(?P<dev>[0-9a-f]{2}\.[0-7])(?:-\[(?P<secondary>[0-9a-f]{2})(?:-[0-9a-f]{2})?\])?(?:\s{2}(?P<name>\S.*))?"
)


def parse_lspci(text: str, source: str = "lspci") -> PciTree:
    tree = PciTree()
    current: PciDevice | None = None
    state: dict = {"domain": "0000", "columns": {}}  # the -tv reader's domain, and the bus at each column
    for raw in text.replace("\r", "").splitlines():
        line = raw.rstrip()
        if _TREE_LINE.match(line):
            current = None
            _read_tree_line(line, tree, state)
        elif match := _BDF.match(line):
            domain = (match["domain"] or "0000").lower()
            bus = f"{domain}:{match['bus'].lower()}"
            bdf = f"{bus}:{match['dev'].lower()}"
            current = tree.devices.setdefault(bdf, PciDevice(bdf, match["rest"], bus))
            current.description, current.detailed = match["rest"], True
        elif current is not None and line[:1] in (" ", "\t") and line.strip():
            if match := _BUS.match(line):
                current.secondary = f"{current.bus.split(':')[0]}:{match['secondary']}"
            elif match := _ACSCTL.match(line):
                current.acs_ctl = {flag["name"]: flag["on"] == "+" for flag in _FLAG.finditer(match["flags"])}
            elif "Capabilities: <access denied>" in line:
                current.access_denied = True
    if not tree.devices:
        raise LspciParseError("no PCI device (neither lspci -vvv blocks nor an lspci -tv tree)", source=source)
    return tree


def _read_tree_line(line: str, tree: PciTree, state: dict) -> None:
    columns: dict[int, str] = state["columns"]
    if match := _TREE_DOMAIN.search(line):
        state["domain"] = match["domain"]
        columns.clear()
        columns[match.end()] = f"{match['domain']}:{match['bus']}"
    position = 0
    while (match := _TREE_ENTRY.search(line, position)) is not None:
        start = match.start()
        position = match.end()
        bus = columns.get(start)
        if bus is None or (start > 0 and line[start - 1] not in "-"):
            continue
        bdf = f"{bus}:{match['dev']}"
        device = tree.devices.setdefault(bdf, PciDevice(bdf, (match["name"] or "").strip(), bus))
        if not device.description:
            device.description = (match["name"] or "").strip()
        if match["secondary"]:
            secondary = f"{state['domain']}:{match['secondary']}"
            device.secondary = device.secondary or secondary
            bracket_end = line.index("]", start) + 1
            columns[bracket_end + 4] = secondary
        if match["name"]:
            break  # the rest of the line is the device's name
