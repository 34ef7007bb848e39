"""Judge the fabric cabling seen by ``ibnetdiscover -p`` against the planned links.

Pure functions, stdlib only. The expectation keys are CABLING_KEYS below.
A link trained below its speed is a bad cable or transceiver; a planned port with no peer is down
or unplugged; a planned port with another peer is miscabled.
"""

from __future__ import annotations

from ansible.module_utils.expectation_keys import Key
from ansible.module_utils.verdicts import FAIL, PASS, CheckResult, result, skipped

CABLING_KEYS = {
    "speed": Key(("str",), "NDR, HDR, EDR, ...: the speed every connected link must run at"),
    "width": Key(("str",), "the width every connected link must run at (default 4x)", requires=("speed",)),
    "links": Key(
        ("list",),
        'planned links, each {"a": name or GUID, "a_port": n, "b": ..., "b_port": n}; a node named as '
        'ibnetdiscover prints it ("o0001 HCA-1")',
    ),
}


def _is(ref, node: str) -> bool:
    return node in (ref.name, ref.guid)


def _find(ports, node: str, port: int):
    return next((p for p in ports if _is(p.local, node) and p.local.port == port), None)


def judge_speed(ports, expected: dict) -> CheckResult:
    speed, width = expected.get("speed"), expected.get("width", "4x")
    if speed is None:
        return skipped("cabling.speed", "no expected link speed")
    connected = [p for p in ports if p.connected]
    if not connected:
        return result("cabling.speed", FAIL, {}, f"{width} {speed}", "no connected links in the fabric output")
    slow = {
        f"{p.local.name or p.local.guid}/{p.local.port}": f"{p.width} {p.speed}"
        for p in connected
        if p.speed != speed or p.width != width
    }
    status = FAIL if slow else PASS
    message = (
        f"{len(slow)} link ends not at {width} {speed}"
        if slow
        else f"all {len(connected)} link ends at {width} {speed}"
    )
    return result("cabling.speed", status, slow, f"{width} {speed}", message)


def judge_links(ports, expected: dict) -> CheckResult:
    planned = expected.get("links") or []
    if not planned:
        return skipped("cabling.links", "no planned links")
    problems = {}
    for link in planned:
        a, a_port, b, b_port = link["a"], int(link["a_port"]), link["b"], int(link["b_port"])
        label = f"{a}/{a_port} - {b}/{b_port}"
        port = _find(ports, a, a_port) or _find(ports, b, b_port)
        if port is None:
            problems[label] = "neither end is in the fabric"
            continue
        far_node, far_port = (b, b_port) if _is(port.local, a) else (a, a_port)
        if port.remote is None:
            problems[label] = f"port down ({port.width} {port.speed}, no peer)"
        elif not (_is(port.remote, far_node) and port.remote.port == far_port):
            problems[label] = f"miscabled: goes to {port.remote.name or port.remote.guid}/{port.remote.port}"
    status = FAIL if problems else PASS
    message = (
        f"{len(problems)} of {len(planned)} planned links wrong" if problems else f"all {len(planned)} planned links up"
    )
    return result("cabling.links", status, problems, len(planned), message)


def judge_cabling(ports, expected: dict) -> list[CheckResult]:
    return [judge_speed(ports, expected), judge_links(ports, expected)]
