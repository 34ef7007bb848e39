"""A RoCE netdev's lossless settings: what to read, what to change, and the full command set.

Pure functions, stdlib only (runs on the nodes; plugins/modules/roce_qos.py applies them). One
interface's wanted settings are {netdev, priority, dscp, ecn, mtu} (the topology's fabric ``roce``
block, clusterforge.topology.model.RoceQos):

- trust and PFC through NVIDIA's ``mlnx_qos`` (MLNX_OFED/DOCA's mlnx-tools): ``--trust dscp``,
  ``--dscp2prio set,<dscp>,<priority>`` (the firmware's default map sends DSCP d to priority d // 8,
  so DSCP 26 lands on 3 by luck and any other pairing needs the entry) and ``--pfc`` with 1 on the
  one lossless priority only; its ``mlnx_qos -i <netdev>`` listing ("Priority trust state: dscp",
  the "dscp2prio mapping:" rows, the PFC "enabled" row) is the current state. Upstream kernels
  have no sysfs file for either: without mlnx_qos, iproute2's ``dcb`` sets them through the
  kernel's DCB netlink interface (roce_dcb.py); without either they are left as they are, and said so;
- ECN through MLNX_OFED's sysfs, ``/sys/class/net/<netdev>/ecn/roce_np/enable/<priority>`` (the
  notification point) and ``roce_rp`` (the reaction point) set to 1 on the priority; absent files
  (an upstream mlx5, whose DCQCN is on by default) are left alone, and said so;
- the MTU through ``/sys/class/net/<netdev>/mtu``.
"""

from __future__ import annotations

import re

from ansible.module_utils.roce_dcb import dcb_argvs
from ansible.module_utils.verdicts import ParseError

PRIORITIES = 8
ECN_POINTS = ("roce_np", "roce_rp")


class MlnxQosParseError(ParseError):
    pass


_TRUST = re.compile(r"^\s*Priority trust state:\s*(?P<trust>\S+)", re.MULTILINE)
_PFC = re.compile(r"^\s*enabled\s+(?P<flags>(?:[01]\s+){7}[01])\s*$", re.MULTILINE)
# "prio:3 dscp:31,30,29,28,27,26,25,24," under "dscp2prio mapping:" (a trailing comma on each row).
_DSCP2PRIO = re.compile(r"^\s*prio:(?P<prio>[0-7])\s+dscp:(?P<dscps>[0-9,\s]*)$", re.MULTILINE)


def parse_mlnx_qos(text: str, source: str = "mlnx_qos") -> dict:
    """{"trust": "dscp" | "pcp" | None, "pfc": [8 flags], "dscp2prio": {dscp: priority}} of
    ``mlnx_qos -i <netdev>``'s listing; dscp2prio is empty where the listing has no map (older
    mlnx_qos, or trust pcp on some releases): then the entry is set, not compared."""
    text = text.replace("\r", "")
    pfc = _PFC.search(text)
    if pfc is None:
        raise MlnxQosParseError("no PFC 'enabled' row of 8 flags (PFC configuration:)", source=source)
    trust = _TRUST.search(text)
    dscp2prio = {
        int(dscp): int(row["prio"])
        for row in _DSCP2PRIO.finditer(text)
        for dscp in row["dscps"].replace(",", " ").split()
    }
    return {
        "trust": trust["trust"] if trust else None,
        "pfc": [int(flag) for flag in pfc["flags"].split()],
        "dscp2prio": dscp2prio,
    }


def pfc_flags(priority: int) -> list:
    """PFC on the one lossless priority: [0, 0, 0, 1, 0, 0, 0, 0] for 3."""
    return [1 if index == priority else 0 for index in range(PRIORITIES)]


def sysfs_writes(root: str, interface: dict) -> dict:
    """{path: value} of every sysfs file the settings hold (ECN per point on the priority, the MTU)."""
    netdev, priority = interface["netdev"], interface["priority"]
    found = {f"{root}/{netdev}/mtu": str(interface["mtu"])}
    for point in ECN_POINTS:
        found[f"{root}/{netdev}/ecn/{point}/enable/{priority}"] = "1" if interface["ecn"] else "0"
    return found


def mlnx_qos_argv(program: str, interface: dict) -> list:
    flags = ",".join(str(flag) for flag in pfc_flags(interface["priority"]))
    mapping = f"set,{interface['dscp']},{interface['priority']}"
    return [program, "-i", interface["netdev"], "--trust", "dscp", "--dscp2prio", mapping, "--pfc", flags]


def commands(interface: dict, program: str | None, root: str, dcb: str | None = None) -> list:
    """The whole command set for one interface, as a boot script would run it: the mlnx_qos argv
    (when the program is there), else the dcb argvs (when dcb is), and ``["write", path, value]``
    for each sysfs file."""
    found = [mlnx_qos_argv(program, interface)] if program else dcb_argvs(dcb, interface) if dcb else []
    return found + [["write", path, value] for path, value in sysfs_writes(root, interface).items()]


def qos_changes(current: dict | None, interface: dict) -> list:
    """What mlnx_qos must change ("trust pcp -> dscp", "dscp2prio 26: 3 -> 4", "pfc ... -> ...");
    current None: unknown, all."""
    want_pfc, dscp, priority = pfc_flags(interface["priority"]), interface["dscp"], interface["priority"]
    if current is None:
        return ["trust -> dscp", f"dscp2prio {dscp} -> {priority}", f"pfc -> {want_pfc}"]
    found = []
    if current["trust"] != "dscp":
        found.append(f"trust {current['trust']} -> dscp")
    have = current.get("dscp2prio", {}).get(dscp)
    if have != priority:
        found.append(f"dscp2prio {dscp}: {'unmapped' if have is None else have} -> {priority}")
    if current["pfc"] != want_pfc:
        found.append(f"pfc {current['pfc']} -> {want_pfc}")
    return found


def sysfs_changes(read, root: str, interface: dict) -> tuple:
    """({path: value} to write, [paths absent]) against read(path) -> text or None (absent)."""
    writes, absent = {}, []
    for path, value in sysfs_writes(root, interface).items():
        have = read(path)
        if have is None:
            absent.append(path)
        elif have.strip() != value:
            writes[path] = value
    return writes, absent
