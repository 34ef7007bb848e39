"""Read the Fabric section of ``nvidia-smi -q`` (GB200/GB300 NVLink fabric attachment) and judge it.

Every GPU of a rack-scale NVLink domain registers with the NVLink fabric: its State must be
Completed and Status Success (NVML: the status is meaningful only once the state is complete),
and every GPU of one domain must report the same CliqueId and ClusterUUID; an all-zero UUID or
clique 0 means no domain. The Health block (drivers 570 and later) has a Summary. GPUs that are
not on an NVLink fabric print N/A: their verdict is "skipped: no hardware", never pass.

Parser and judge are pure functions, stdlib only (they run on the nodes and on the controller).
"""

from __future__ import annotations

import re

from ansible.module_utils.expectation_keys import Key
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, PASS, ParseError, result, skipped

STATE_CHECK = "gpu.fabric_state"
DOMAIN_CHECK = "gpu.fabric_domain"
HEALTH_CHECK = "gpu.fabric_health"
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
ABSENT = {"N/A", "Not Supported", "[N/A]", "[Not Supported]"}
_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_FIELD = re.compile(r"^(\s*)([A-Za-z][A-Za-z /-]*?)\s*:\s*(.*?)\s*$")

FABRIC_KEYS = {
    "clique_id": Key(("int",), "the CliqueId every GPU of the domain must report", minimum=1),
    "cluster_uuid": Key(("str",), "the ClusterUUID every GPU of the domain must report"),
    "fabric_health": Key(("bool",), "judge the Health Summary (default true; false skips it)"),
}


def parse_fabric(text: str, source: str = "nvidia-smi -q") -> list[dict]:
    """One dict per Fabric section, in order: gpu (its bus id, or #n without a GPU header, as in a
    grep), state, status, clique_id, cluster_uuid, health ({field: value}) and line."""
    found: list[dict] = []
    gpu = None
    current = None
    fabric_indent = health_indent = -1
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        header = _GPU.match(line)
        if header:
            gpu, current = header.group(1), None
            continue
        indent = len(line) - len(line.lstrip())
        if line.strip() == "Fabric":
            current = {"gpu": gpu or f"#{len(found) + 1}", "line": number, "health": {}}
            found.append(current)
            fabric_indent, health_indent = indent, -1
            continue
        if current is None or not line.strip():
            continue
        if indent <= fabric_indent:
            current = None
            continue
        if line.strip() == "Health":
            health_indent = indent
            continue
        field = _FIELD.match(line)
        if not field:
            continue
        name, value = field.group(2).strip(), field.group(3)
        if health_indent >= 0 and indent > health_indent:
            current["health"][name] = value
            continue
        health_indent = -1
        key = {"State": "state", "Status": "status", "CliqueId": "clique_id", "ClusterUUID": "cluster_uuid"}.get(name)
        if key:
            current[key] = value
    if not found:
        raise ParseError("no Fabric section (expected the output of nvidia-smi -q)", source=source)
    return found


def _attached(gpus: list[dict]) -> list[dict]:
    return [gpu for gpu in gpus if gpu.get("state") not in ABSENT and gpu.get("state") is not None]


def judge_fabric(gpus: list[dict], expected: dict) -> list:
    """Three verdicts: registration state, domain identity (one clique and cluster UUID, the
    expected ones where given), and the health summary."""
    attached = _attached(gpus)
    if not attached:
        reason = f"{NO_HARDWARE} (no GPU on an NVLink fabric: Fabric State N/A)"
        return [skipped(check, reason, expected or None) for check in (STATE_CHECK, DOMAIN_CHECK, HEALTH_CHECK)]
    return [_state(gpus), _domain(attached, expected), _health(attached, expected)]


def _state(gpus: list[dict]):
    measured = {gpu["gpu"]: f"{gpu.get('state')}/{gpu.get('status')}" for gpu in gpus}
    bad = [f"{gpu} {value}" for gpu, value in measured.items() if value != "Completed/Success"]
    if bad:
        return result(STATE_CHECK, FAIL, measured, "Completed/Success", "fabric registration: " + "; ".join(bad))
    return result(STATE_CHECK, PASS, measured, "Completed/Success", f"{len(gpus)} GPU(s) Completed/Success")


def in_a_domain(clique, uuid) -> bool:
    """False for the values of a GPU in no NVLink domain (absent, clique 0, the all-zero UUID)."""
    return uuid not in (None, ZERO_UUID) and uuid not in ABSENT and clique not in (None, "0") and clique not in ABSENT


def identity(gpus: list[dict]) -> dict | None:
    """The node's NVLink domain identity for the controller: the CliqueId and ClusterUUID most of its
    fabric-attached GPUs report (the first of them on a tie), or None when none is in a domain. A
    node whose GPUs disagree fails its own domain check; this is only what it mostly says."""
    counted: dict = {}
    for gpu in _attached(gpus):
        clique, uuid = gpu.get("clique_id"), gpu.get("cluster_uuid")
        if in_a_domain(clique, uuid):
            key = (clique, uuid.lower())
            counted[key] = counted.get(key, 0) + 1
    if not counted:
        return None
    clique, uuid = max(counted, key=lambda key: counted[key])  # max keeps the first of equal counts
    return {"clique_id": clique, "cluster_uuid": uuid}


def judge_domain(gpus: list[dict], expected: dict):
    """The domain check alone, against an expected clique_id and cluster_uuid (a domain's identity
    decided across its trays on the controller), on the attached GPUs of one node."""
    return _domain(_attached(gpus) or gpus, expected)


def _domain(gpus: list[dict], expected: dict):
    measured = {gpu["gpu"]: f"{gpu.get('clique_id')}/{gpu.get('cluster_uuid')}" for gpu in gpus}
    want = {key: expected[key] for key in ("clique_id", "cluster_uuid") if key in expected}
    problems = []
    for gpu in gpus:
        name, clique, uuid = gpu["gpu"], gpu.get("clique_id"), gpu.get("cluster_uuid")
        if not in_a_domain(clique, uuid):
            problems.append(f"{name} in no NVLink domain (CliqueId {clique}, ClusterUUID {uuid})")
        elif "clique_id" in want and clique != str(want["clique_id"]):
            problems.append(f"{name} CliqueId {clique}, expected the domain's {want['clique_id']}")
        elif "cluster_uuid" in want and uuid.lower() != str(want["cluster_uuid"]).lower():
            problems.append(f"{name} ClusterUUID {uuid}, expected the domain's {want['cluster_uuid']}")
    if not problems and len(set(measured.values())) > 1:
        problems.append("GPUs disagree on their domain: " + ", ".join(sorted(set(measured.values()))))
    if problems:
        return result(DOMAIN_CHECK, FAIL, measured, want or "one clique and cluster UUID", "; ".join(problems))
    return result(
        DOMAIN_CHECK,
        PASS,
        measured,
        want or "one clique and cluster UUID",
        f"domain {gpus[0].get('clique_id')}/{gpus[0].get('cluster_uuid')}",
    )


def _health(gpus: list[dict], expected: dict):
    if expected.get("fabric_health") is False:
        return skipped(HEALTH_CHECK, "fabric_health is false")
    measured = {gpu["gpu"]: gpu["health"].get("Summary") for gpu in gpus}
    if all(value is None or value in ABSENT for value in measured.values()):
        return skipped(HEALTH_CHECK, "no Health Summary in the output (driver before 570, or a grep without it)")
    bad = [
        f"{gpu} {value}" for gpu, value in measured.items() if value not in (None, "Healthy") and value not in ABSENT
    ]
    if bad:
        return result(HEALTH_CHECK, FAIL, measured, "Healthy", "fabric health summary: " + "; ".join(bad))
    return result(HEALTH_CHECK, PASS, measured, "Healthy", f"{len(gpus)} GPU(s) Healthy")
