"""Parser for ``ibnetdiscover -p`` (ports report): one line per port of every node in the fabric.

    CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )
    SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'

type lid port guid width speed [- type lid port guid ( 'local name' - 'remote name' )]; a port with
no peer shows only its own name (speed "???" or the base rate it last trained at). Names may be
padded with spaces inside the quotes; they are stripped. Every link appears twice, once from each
end. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible.module_utils.verdicts import ParseError, raise_if_failed


class IbnetdiscoverParseError(ParseError):
    pass


@dataclass(frozen=True)
class PortRef:
    node_type: str  # CA, SW, RT
    lid: int
    port: int
    guid: str
    name: str | None


@dataclass(frozen=True)
class FabricPort:
    local: PortRef
    width: str  # "4x"
    speed: str  # "EDR", "HDR", "NDR", "???" when down
    remote: PortRef | None  # None: nothing connected / link down

    @property
    def connected(self) -> bool:
        return self.remote is not None


_END = r"(?P<{p}type>CA|SW|RT)\s+(?P<{p}lid>\d+)\s+(?P<{p}port>\d+)\s+(?P<{p}guid>0x[0-9A-Fa-f]+)"
# ibnetdiscover's own error lines ("ibnetdiscover: iberror: failed: discover failed", libibnetdisc's
# "ibnd_discover_fabric: ..."); infiniband-diags' bare ibwarn/ibpanic lines could be any of its tools'.
_FAILED = re.compile(r"^\s*ibnetdiscover: |\bibnd_discover_fabric\b")
_LINE = re.compile(
    r"^" + _END.format(p="l") + r"\s+(?P<width>\d+x|\?+)\s+(?P<speed>\S+)"
    r"(?:\s+-\s+" + _END.format(p="r") + r"\s+\(\s*'(?P<lname>.*)'\s+-\s+'(?P<rname>.*)'\s*\)"
    r"|\s+'(?P<name>.*)')?\s*$"
)


def _name(value: str | None) -> str | None:
    return value.strip() if value is not None else None


def _ports(text: str, source: str) -> tuple[FabricPort, ...]:
    ports = []
    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        if not raw.strip():
            continue
        match = _LINE.match(raw.strip())
        if not match:
            raise IbnetdiscoverParseError("not an ibnetdiscover -p port line", source=source, line=number, text=raw)
        local = PortRef(
            match["ltype"],
            int(match["llid"]),
            int(match["lport"]),
            match["lguid"],
            _name(match["lname"] or match["name"]),
        )
        remote = None
        if match["rtype"]:
            remote = PortRef(
                match["rtype"], int(match["rlid"]), int(match["rport"]), match["rguid"], _name(match["rname"])
            )
        ports.append(FabricPort(local, match["width"], match["speed"], remote))
    if not ports:
        raise IbnetdiscoverParseError("no port lines", source=source)
    return tuple(ports)


def parse_ibnetdiscover_ports(text: str, source: str = "ibnetdiscover -p") -> tuple[FabricPort, ...]:
    try:
        return _ports(text, source)
    except IbnetdiscoverParseError:
        # No port list, only infiniband-diags' error lines: the discovery failed (no SM, no umad port).
        raise_if_failed(text, _FAILED, source, "ibnetdiscover reported an error")
        raise


def unique_links(ports: tuple[FabricPort, ...]) -> tuple[FabricPort, ...]:
    """Each connected link once (the first direction seen)."""
    seen: set[frozenset[tuple[str, int]]] = set()
    links = []
    for port in ports:
        if port.remote is None:
            continue
        key = frozenset({(port.local.guid, port.local.port), (port.remote.guid, port.remote.port)})
        if key not in seen:
            seen.add(key)
            links.append(port)
    return tuple(links)
