"""Parser for ``ibv_devinfo`` (rdma-core), plain and ``-v``.

    hca_id:<TAB>mlx4_1
        transport:<TAB><TAB><TAB>InfiniBand (0)
        fw_ver:<TAB><TAB><TAB><TAB>2.42.5000
        ...
        phys_port_cnt:<TAB><TAB><TAB>2
            port:<TAB>1
                state:<TAB><TAB><TAB>PORT_ACTIVE (4)
                link_layer:<TAB><TAB>InfiniBand

<TAB> marks the tabs ibv_devinfo prints (lines are indented with tabs too). Values keep their
text; the numeric code in "PORT_ACTIVE (4)" is split off. With ``-v`` ports also carry
active_width/active_speed/phys_state, read into the same fields. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible.module_utils.verdicts import ParseError, ToolFailed


class IbvDevinfoParseError(ParseError):
    pass


@dataclass(frozen=True)
class IbvPort:
    number: int
    state: str  # PORT_ACTIVE, PORT_DOWN, PORT_INIT, PORT_ARMED
    link_layer: str | None
    phys_state: str | None = None  # only with -v: LINK_UP, POLLING, DISABLED
    active_width: str | None = None  # only with -v: 4X
    active_speed: str | None = None  # only with -v: 100.0 Gbps / 25.0 Gbps (EDR)
    active_mtu: str | None = None
    sm_lid: int | None = None
    port_lid: int | None = None
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IbvDevice:
    hca_id: str
    transport: str | None
    fw_ver: str | None
    node_guid: str | None
    sys_image_guid: str | None
    vendor_part_id: str | None
    board_id: str | None
    phys_port_cnt: int | None
    ports: tuple[IbvPort, ...]


_KV = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_ ]*?):\s*(?P<value>.*)$")


def _code(value: str | None) -> str | None:
    """ "PORT_ACTIVE (4)" -> "PORT_ACTIVE"; "4096 (5)" -> "4096"."""
    return re.sub(r"\s*\(\d+\)$", "", value) if value is not None else None


def _int(value: str | None) -> int | None:
    return int(value) if value not in (None, "") else None


def _make_port(number: int, fields: dict[str, str]) -> IbvPort:
    if "state" not in fields:
        raise IbvDevinfoParseError(f"port {number} has no state line")
    return IbvPort(
        number=number,
        state=_code(fields["state"]) or "",
        link_layer=fields.get("link_layer"),
        phys_state=_code(fields.get("phys_state")),
        active_width=_code(fields.get("active_width")),
        active_speed=_code(fields.get("active_speed")),
        active_mtu=_code(fields.get("active_mtu")),
        sm_lid=_int(fields.get("sm_lid")),
        port_lid=_int(fields.get("port_lid")),
        fields=dict(fields),
    )


def _make_device(hca_id: str, fields: dict[str, str], ports: list[IbvPort]) -> IbvDevice:
    return IbvDevice(
        hca_id=hca_id,
        transport=fields.get("transport"),
        fw_ver=fields.get("fw_ver"),
        node_guid=fields.get("node_guid"),
        sys_image_guid=fields.get("sys_image_guid"),
        vendor_part_id=fields.get("vendor_part_id"),
        board_id=fields.get("board_id"),
        phys_port_cnt=_int(fields.get("phys_port_cnt")),
        ports=tuple(ports),
    )


def parse_ibv_devinfo(text: str, source: str = "ibv_devinfo") -> tuple[IbvDevice, ...]:
    devices: list[IbvDevice] = []
    hca: str | None = None
    dev_fields: dict[str, str] = {}
    ports: list[IbvPort] = []
    port: int | None = None
    port_fields: dict[str, str] = {}
    try:
        for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
            line = raw.strip()
            if not line or line == "Device ports:":
                continue
            if line.startswith(("No IB devices found", "Failed to")):
                raise ToolFailed(f"ibv_devinfo reported an error: {line[:300]}", source=source, line=number)
            match = _KV.match(line)
            if not match:
                # -v prints GID tables and capability flags on value-only continuation lines.
                if hca is not None:
                    continue
                raise IbvDevinfoParseError("unrecognised line", line=number, text=line)
            key, value = match["key"], match["value"].strip()
            if key == "hca_id":
                if port is not None:
                    ports.append(_make_port(port, port_fields))
                if hca is not None:
                    devices.append(_make_device(hca, dev_fields, ports))
                hca, dev_fields, ports, port = value, {}, [], None
            elif hca is None:
                raise IbvDevinfoParseError("field before any hca_id line", line=number, text=line)
            elif key == "port":
                if port is not None:
                    ports.append(_make_port(port, port_fields))
                port, port_fields = int(value), {}
            elif port is not None:
                port_fields[key] = value
            else:
                dev_fields[key] = value
        if port is not None:
            ports.append(_make_port(port, port_fields))
        if hca is not None:
            devices.append(_make_device(hca, dev_fields, ports))
    except (IbvDevinfoParseError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, IbvDevinfoParseError) else str(exc)
        line, text_ = getattr(exc, "line", None), getattr(exc, "text", None)
        raise IbvDevinfoParseError(reason, source=source, line=line, text=text_) from None
    if not devices:
        raise IbvDevinfoParseError("no hca_id found", source=source)
    return tuple(devices)
