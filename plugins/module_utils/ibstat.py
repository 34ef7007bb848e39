"""Parser for ``ibstat`` (infiniband-diags): one block per CA, one sub-block per port.

    CA 'mlx5_0'
        CA type: MT4129
        Firmware version: 28.39.1002
        ...
        Port 1:
            State: Active
            Physical state: LinkUp
            Rate: 400
            Link layer: InfiniBand

Indentation is tabs or spaces depending on the capture. ibstat ends with an "ibpanic:" line and
exit status 255 when a device vanishes while it is listing them; that output is an error, not a
partial inventory, so it raises. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible.module_utils.verdicts import ParseError, ToolFailed, finite


class IbstatParseError(ParseError):
    pass


@dataclass(frozen=True)
class IbPort:
    number: int
    state: str  # Active, Down, Initializing, Armed
    physical_state: str  # LinkUp, Polling, Disabled, ...
    rate: float | None  # Gb/s as printed (56, 200, 400; 2.5 for SDR 1x)
    link_layer: str | None  # InfiniBand or Ethernet
    base_lid: int | None = None
    sm_lid: int | None = None
    port_guid: str | None = None


@dataclass(frozen=True)
class IbCa:
    name: str
    ca_type: str | None
    firmware_version: str | None
    hardware_version: str | None
    node_guid: str | None
    system_image_guid: str | None
    ports: tuple[IbPort, ...]


_CA = re.compile(r"^CA '(?P<name>[^']+)'$")
_PORT = re.compile(r"^Port (?P<number>\d+):$")
_KV = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?):\s*(?P<value>.*)$")


def _int(value: str | None) -> int | None:
    return int(value) if value not in (None, "") else None


def _port(number: int, fields: dict[str, str], source: str, line: int) -> IbPort:
    for required in ("State", "Physical state"):
        if required not in fields:
            raise IbstatParseError(f"port {number} has no '{required}' line", source=source, line=line)
    rate = fields.get("Rate")
    try:
        return IbPort(
            number=number,
            state=fields["State"],
            physical_state=fields["Physical state"],
            rate=finite(rate) if rate else None,
            link_layer=fields.get("Link layer"),
            base_lid=_int(fields.get("Base lid")),
            sm_lid=_int(fields.get("SM lid")),
            port_guid=fields.get("Port GUID"),
        )
    except ValueError as exc:
        raise IbstatParseError(f"port {number}: {exc}", source=source, line=line) from None


def parse_ibstat(text: str, source: str = "ibstat") -> tuple[IbCa, ...]:
    cas: list[IbCa] = []
    ca_name: str | None = None
    ca_fields: dict[str, str] = {}
    ports: list[IbPort] = []
    port_number: int | None = None
    port_fields: dict[str, str] = {}
    port_line = 0

    def close_port() -> None:
        nonlocal port_number
        if port_number is not None:
            ports.append(_port(port_number, port_fields, source, port_line))
            port_number = None

    def close_ca() -> None:
        close_port()
        if ca_name is not None:
            cas.append(
                IbCa(
                    name=ca_name,
                    ca_type=ca_fields.get("CA type"),
                    firmware_version=ca_fields.get("Firmware version"),
                    hardware_version=ca_fields.get("Hardware version"),
                    node_guid=ca_fields.get("Node GUID"),
                    system_image_guid=ca_fields.get("System image GUID"),
                    ports=tuple(ports),
                )
            )

    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(("ibpanic:", "ibwarn:", "ibstat: ")):
            # infiniband-diags' own error lines: ibstat stopped (a device vanished while it listed them).
            raise ToolFailed(f"ibstat reported an error: {line[:300]}", source=source, line=number)
        if "No such file" in line:
            raise IbstatParseError("not ibstat output", source=source, line=number, text=line)
        if match := _CA.match(line):
            close_ca()
            ca_name, ca_fields, ports = match["name"], {}, []
        elif match := _PORT.match(line):
            if ca_name is None:
                raise IbstatParseError("port before any CA line", source=source, line=number, text=line)
            close_port()
            port_number, port_fields, port_line = int(match["number"]), {}, number
        elif match := _KV.match(line):
            if ca_name is None:
                raise IbstatParseError("field before any CA line", source=source, line=number, text=line)
            (port_fields if port_number is not None else ca_fields)[match["key"]] = match["value"].strip()
        else:
            raise IbstatParseError("unrecognised line", source=source, line=number, text=line)
    close_ca()
    if not cas:
        raise IbstatParseError("no CA found (empty output, or no RDMA devices)", source=source)
    return tuple(cas)
