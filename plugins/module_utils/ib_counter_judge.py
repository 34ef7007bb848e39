"""InfiniBand port error counters read before and after a burn-in, and the judge of the two readings.

Two readers give the same shape, {"<device>/<port>": {"<sysfs counter name>": int}}:

* the RDMA sysfs tree (/sys/class/infiniband/<dev>/ports/<n>/counters/*, via ib_sysfs), the live
  source: no MAD traffic, no root needed;
* ``perfquery [-x]`` output (one "# Port ... counters: Lid L port N" block per port, lines
  ``SymbolErrorCounter:..............0``), for recordings and for hosts that only have perfquery.
  Its counter names are mapped to the sysfs ones (SymbolErrorCounter -> symbol_error), so a
  reading from either source is judged by the same rule.

The rule (judge): a port passes when none of the watched error counters grew between the two
readings. A counter that grew fails the port, naming the counter, both values and the growth; a
port missing from the second reading, or a counter that went down (reset or wrapped during the
run, which hides any growth), fails too: the burn-in cannot vouch for it. No port at all is
"skipped: no hardware". Stdlib only.
"""

from __future__ import annotations

import re

from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, PASS, CheckResult, ParseError, result, skipped

CHECK = "ib_counters"

# perfquery's name -> the sysfs file name of the same counter (IBTA PortCounters and
# PortCountersExtended). PortXmitWait and the data/packet counters are left out: they count
# traffic and congestion, not errors.
PERFQUERY_NAMES = {
    "SymbolErrorCounter": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "VL15_dropped",
}
# The counters a burn-in watches unless told otherwise: every error counter above.
WATCHED = tuple(PERFQUERY_NAMES.values())


class PerfqueryParseError(ParseError):
    pass


_HEADER = re.compile(r"^# Port (?:extended )?counters: Lid (?P<lid>\d+) port (?P<port>\d+|All)\b")
_FIELD = re.compile(r"^(?P<name>[A-Za-z0-9]+):\.*(?P<value>\S+)$")


def parse_perfquery(text: str, device: str = "", source: str = "perfquery") -> dict[str, dict[str, int]]:
    """{"<device>/<port>": {sysfs name: value}} of perfquery's blocks; device names the HCA the
    caller queried ("hca" when not given). perfquery prints the port's LID, which the subnet manager
    may change between two readings, so ports are told apart by number only."""
    ports: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        header = _HEADER.match(line)
        if header:
            key = f"{device or 'hca'}/{header['port']}"
            if key in ports:
                raise PerfqueryParseError(f"port {key} printed twice", source=source, line=number, text=line)
            current = ports[key] = {}
            continue
        field = _FIELD.match(line)
        if field is None or current is None:
            expected = "expected '# Port counters: Lid L port N' then 'Name:....value' lines"
            raise PerfqueryParseError(expected, source=source, line=number, text=line)
        name = PERFQUERY_NAMES.get(field["name"])
        if name is None:
            continue  # traffic, selects, and counters the judge does not watch
        if not field["value"].isdigit():
            raise PerfqueryParseError(f"{field['name']} is not a count", source=source, line=number, text=line)
        current[name] = int(field["value"])
    if not ports:
        raise PerfqueryParseError("no '# Port counters: Lid L port N' block", source=source)
    empty = [key for key, counters in ports.items() if not counters]
    if empty:
        raise PerfqueryParseError(f"port {empty[0]} has no error counters (output cut short?)", source=source)
    return ports


def from_sysfs(devices) -> dict[str, dict[str, int]]:
    """The same shape from ib_sysfs.read_ib_sysfs's devices: InfiniBand ports only (an Ethernet
    port's counters are RoCE's, with other names)."""
    return {
        f"{device.name}/{port.number}": {name: value for name, value in port.counters.items() if name in WATCHED}
        for device in devices
        for port in device.ports
        if (port.link_layer or "InfiniBand") == "InfiniBand"
    }


def judge(before: dict, after: dict, watched=WATCHED) -> list[CheckResult]:
    """One verdict per port of the first reading (see the module docstring for the rule)."""
    if not before and not after:
        return [skipped(CHECK, NO_HARDWARE)]
    watched = tuple(watched)
    results = []
    for port in sorted(set(before) | set(after)):
        check = f"{CHECK}.{port}"
        first, second = before.get(port), after.get(port)
        if first is None or second is None:
            missing = "before" if first is None else "after"
            message = f"port {port} was not read {missing} the burn-in"
            results.append(result(check, FAIL, None, "read before and after", message))
            continue
        grew, dropped, unread = [], [], []
        for name in watched:
            if name not in first or name not in second:
                if name in first or name in second:
                    unread.append(name)
                continue
            delta = int(second[name]) - int(first[name])
            if delta > 0:
                grew.append(f"{name} {first[name]} -> {second[name]} (+{delta})")
            elif delta < 0:
                dropped.append(f"{name} {first[name]} -> {second[name]}")
        measured = {name: [first.get(name), second.get(name)] for name in watched if name in first or name in second}
        problems = []
        if grew:
            problems.append("grew: " + ", ".join(grew))
        if dropped:
            problems.append(
                "went down (reset or wrapped during the run: growth cannot be judged): " + ", ".join(dropped)
            )
        if unread:
            problems.append("read only once: " + ", ".join(unread))
        if not measured:
            problems.append("none of the watched counters could be read")
        if problems:
            results.append(result(check, FAIL, measured, "no error counter grew", "; ".join(problems)))
        else:
            results.append(
                result(check, PASS, measured, "no error counter grew", f"{len(measured)} error counters unchanged")
            )
    return results
