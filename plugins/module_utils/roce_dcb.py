"""Trust and PFC through the upstream kernel's DCB netlink interface (iproute2's ``dcb``), where
NVIDIA's ``mlnx_qos`` is not installed: what to read, what to change, the commands.

Pure functions, stdlib only (runs on the nodes; plugins/modules/roce_qos.py applies them):

- PFC: ``dcb pfc show dev <netdev> prio-pfc`` ("prio-pfc 0:off 1:off 2:off 3:on ..."), set with
  ``dcb pfc set dev <netdev> prio-pfc 0:off ... 3:on ...`` (all eight, so no other priority stays on);
- DSCP trust: the APP table's DSCP entry, ``dcb app show dev <netdev> dscp-prio`` ("dscp-prio
  26:3", or the DSCP's name, "AF31:3", without -N), set with ``dcb app replace dev <netdev>
  dscp-prio <dscp>:<priority>``. Upstream mlx5 switches the port to DSCP trust when its first DSCP
  APP entry is added (en_dcbnl.c, mlx5e_dcbnl_ieee_setapp), as ``mlnx_qos --trust dscp`` does.

A netdev whose driver has no DCB support (a veth, a virtio NIC) answers every read with EOPNOTSUPP,
which dcb prints as "Attribute read: Operation not supported": that is no hardware, not a failure.
"""

from __future__ import annotations

import re

from ansible.module_utils.verdicts import ParseError

PRIORITIES = 8
NO_DCB = "Operation not supported"
# iproute2's names for DSCP values (its rt_dsfield table, the DS field's value shifted right by 2),
# which dcb prints unless given -N.
DSCP_NAMES = {"default": 0, "EF": 46} | {f"CS{n}": 8 * n for n in range(1, 8)}
DSCP_NAMES |= {f"AF{x}{y}": 8 * x + 2 * y for x in range(1, 5) for y in range(1, 4)}


class DcbParseError(ParseError):
    pass


_PRIO_PFC = re.compile(r"^\s*prio-pfc\s+(?P<map>.*?)\s*$", re.MULTILINE)
_PFC_ENTRY = re.compile(r"(?P<prio>[0-7]):(?P<state>on|off)")
_DSCP_PRIO = re.compile(r"^\s*dscp-prio(?P<map>(?:\s+\S+)*)\s*$", re.MULTILINE)
_APP_ENTRY = re.compile(r"(?P<dscp>\w+):(?P<prio>[0-7])")


def parse_pfc(text: str, source: str = "dcb pfc show") -> list:
    """The eight PFC flags of ``dcb pfc show``'s prio-pfc row: [0, 0, 0, 1, 0, 0, 0, 0]."""
    found = _PRIO_PFC.search(text.replace("\r", ""))
    if found is None:
        raise DcbParseError("no 'prio-pfc' row", source=source)
    entries = found["map"].split()
    flags = {}
    for entry in entries:
        match = _PFC_ENTRY.fullmatch(entry)
        if match is None or int(match["prio"]) in flags:
            raise DcbParseError("prio-pfc: expected PRIO:on|off once per priority", source=source, text=entry)
        flags[int(match["prio"])] = 1 if match["state"] == "on" else 0
    if sorted(flags) != list(range(PRIORITIES)):
        raise DcbParseError("prio-pfc: expected priorities 0 to 7", source=source, text=found["map"])
    return [flags[prio] for prio in range(PRIORITIES)]


def parse_app_dscp(text: str, source: str = "dcb app show") -> dict:
    """{dscp: [priorities]} of ``dcb app show``'s dscp-prio row; an empty output is an empty table
    (dcb prints no row for a selector without entries)."""
    text = text.replace("\r", "")
    found = _DSCP_PRIO.search(text)
    if found is None:
        if text.strip():
            raise DcbParseError("no 'dscp-prio' row", source=source, text=text)
        return {}
    table = {}
    for entry in found["map"].split():
        match = _APP_ENTRY.fullmatch(entry)
        dscp = None if match is None else _dscp(match["dscp"])
        if dscp is None:
            raise DcbParseError("dscp-prio: expected DSCP:PRIO (a number 0-63 or a name)", source=source, text=entry)
        table.setdefault(dscp, []).append(int(match["prio"]))
    return table


def _dscp(word: str) -> int | None:
    if word.isdigit():
        return int(word) if int(word) < 64 else None
    return DSCP_NAMES.get(word)


def pfc_map(priority: int) -> list:
    """dcb's PFC-MAP for PFC on the one priority: ["0:off", ..., "3:on", ...]."""
    return [f"{prio}:{'on' if prio == priority else 'off'}" for prio in range(PRIORITIES)]


def dcb_argvs(program: str, interface: dict) -> list:
    """The full dcb command set for one interface: the DSCP entry (DSCP trust), then PFC."""
    netdev, dscp, priority = interface["netdev"], interface["dscp"], interface["priority"]
    return [
        [program, "app", "replace", "dev", netdev, "dscp-prio", f"{dscp}:{priority}"],
        [program, "pfc", "set", "dev", netdev, "prio-pfc", *pfc_map(priority)],
    ]


def read_argvs(program: str, netdev: str) -> dict:
    """How each setting is read; -N prints DSCP values as numbers, not names."""
    return {
        "pfc": [program, "-N", "pfc", "show", "dev", netdev, "prio-pfc"],
        "app": [program, "-N", "app", "show", "dev", netdev, "dscp-prio"],
    }


def dcb_changes(pfc: list, app: dict, interface: dict) -> list:
    """What dcb must change, and which of its commands do it: [(change, argv index in dcb_argvs)]."""
    dscp, priority = interface["dscp"], interface["priority"]
    found = []
    if app.get(dscp) != [priority]:
        found.append((f"dscp-prio {dscp}:{app.get(dscp, [])} -> {dscp}:[{priority}] (DSCP trust)", 0))
    want = [1 if prio == priority else 0 for prio in range(PRIORITIES)]
    if pfc != want:
        found.append((f"pfc {pfc} -> {want}", 1))
    return found
