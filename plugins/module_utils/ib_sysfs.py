"""Reader for the RDMA sysfs tree, /sys/class/infiniband/<dev>/...

    <dev>/fw_ver, node_guid, hca_type, board_id
    <dev>/ports/<n>/state         "4: ACTIVE"
    <dev>/ports/<n>/phys_state    "5: LinkUp"
    <dev>/ports/<n>/rate          "400 Gb/sec (4X NDR)"
    <dev>/ports/<n>/link_layer    "InfiniBand" | "Ethernet"
    <dev>/ports/<n>/counters/*    symbol_error, link_downed, port_rcv_errors, ... (integers)

Reads files only (no ibstat needed); ``root`` lets tests point it at a fake tree. A missing root
means no RDMA hardware (empty result), not an error. Stdlib only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ansible.module_utils.verdicts import ParseError, finite

SYSFS_ROOT = "/sys/class/infiniband"


class IbSysfsParseError(ParseError):
    pass


@dataclass(frozen=True)
class SysfsPort:
    number: int
    state: str | None  # ACTIVE, DOWN, INIT, ARMED (the word after "N: ")
    phys_state: str | None  # LinkUp, Polling, Disabled, ...
    rate: float | None  # Gb/s
    rate_text: str | None  # "400 Gb/sec (4X NDR)" as read
    link_layer: str | None
    counters: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SysfsDevice:
    name: str
    fw_ver: str | None
    node_guid: str | None
    hca_type: str | None
    board_id: str | None
    ports: tuple[SysfsPort, ...]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        # Some counters refuse reads on some firmware (EINVAL); one such file must not hide the rest.
        if exc.errno in (22, 95):  # EINVAL, EOPNOTSUPP
            return None
        raise


def _state(path: str) -> str | None:
    value = _read(path)
    if value is None:
        return None
    match = re.fullmatch(r"\d+:\s*(\S+)", value)
    if not match:
        raise IbSysfsParseError("expected 'N: STATE'", source=path, text=value)
    return match[1]


def _rate(path: str) -> tuple[float | None, str | None]:
    value = _read(path)
    if value is None:
        return None, None
    match = re.match(r"(\d+(?:\.\d+)?) Gb/sec", value)
    if not match:
        raise IbSysfsParseError("expected 'N Gb/sec (...)'", source=path, text=value)
    try:
        return finite(match[1]), value
    except ValueError as exc:
        raise IbSysfsParseError(str(exc), source=path, text=value) from None


def _counters(directory: str) -> dict[str, int]:
    counters: dict[str, int] = {}
    if not os.path.isdir(directory):
        return counters
    for name in sorted(os.listdir(directory)):
        value = _read(os.path.join(directory, name))
        if value is None:
            continue
        if not re.fullmatch(r"\d+", value):
            raise IbSysfsParseError("counter is not an integer", source=os.path.join(directory, name), text=value)
        counters[name] = int(value)
    return counters


def read_ib_sysfs(root: str = SYSFS_ROOT) -> tuple[SysfsDevice, ...]:
    """Every RDMA device under root, sorted by name; () when root does not exist."""
    if not os.path.isdir(root):
        return ()
    devices = []
    for name in sorted(os.listdir(root)):
        base = os.path.join(root, name)
        ports_dir = os.path.join(base, "ports")
        ports = []
        if os.path.isdir(ports_dir):
            for entry in sorted(os.listdir(ports_dir), key=lambda n: (not n.isdigit(), n.zfill(4))):
                if not entry.isdigit():
                    raise IbSysfsParseError("port directory is not a number", source=os.path.join(ports_dir, entry))
                port = os.path.join(ports_dir, entry)
                rate, rate_text = _rate(os.path.join(port, "rate"))
                ports.append(
                    SysfsPort(
                        number=int(entry),
                        state=_state(os.path.join(port, "state")),
                        phys_state=_state(os.path.join(port, "phys_state")),
                        rate=rate,
                        rate_text=rate_text,
                        link_layer=_read(os.path.join(port, "link_layer")),
                        counters=_counters(os.path.join(port, "counters")),
                    )
                )
        devices.append(
            SysfsDevice(
                name=name,
                fw_ver=_read(os.path.join(base, "fw_ver")),
                node_guid=_read(os.path.join(base, "node_guid")),
                hca_type=_read(os.path.join(base, "hca_type")),
                board_id=_read(os.path.join(base, "board_id")),
                ports=tuple(ports),
            )
        )
    return tuple(devices)
