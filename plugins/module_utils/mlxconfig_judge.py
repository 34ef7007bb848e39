"""Judge a NIC's firmware settings (``mlxconfig -d <dev> q``) against what GPUDirect RDMA needs.

Pure function, stdlib only (runs on the nodes). The expectation ``mlxconfig`` maps a setting to the
value it must have, or a list of values any of which will do; it is laid over MLXCONFIG_GPUDIRECT,
and a setting given as null drops a default. Values are written as mlxconfig prints them or by
their name or number alone: True, "True", 1 and "True(1)" all match True(1); "IB" matches IB(1).

The defaults are NVIDIA's bare-metal GPUDirect settings (the NIC configuration operator's
pciPerformanceOptimized and gpuDirectOptimized; NVIDIA's own node images set MAX_ACC_OUT_READ=44):
ADVANCED_PCI_SETTINGS on, which also makes MAX_ACC_OUT_READ visible; MAX_ACC_OUT_READ 0 (the
firmware's automatic choice) or 44; ATS off, as GPUDirect on bare metal does not translate
addresses in the NIC. LINK_TYPE_Pn and PCI_WR_ORDERING depend on the fabric and are the caller's
(the topology's fabric gives the link type). Setting them is another task: a change shows in the
Next Boot column first and takes a firmware reset (mlxfwreset) or a reboot; a setting whose
Current value is wrong but whose Next Boot value is right fails with that said.
"""

from __future__ import annotations

from ansible.module_utils.expectation_keys import ExpectationError, Key
from ansible.module_utils.mlxconfig import name_of, number_of
from ansible.module_utils.verdicts import FAIL, PASS, result, skipped

CHECK = "rdma.mlxconfig"
MLXCONFIG_GPUDIRECT = {
    "ADVANCED_PCI_SETTINGS": True,
    "MAX_ACC_OUT_READ": [0, 44],
    "ATS_ENABLED": False,
}
# The setting whose False hides others from the listing, and those it hides.
_HIDDEN_BY = {"MAX_ACC_OUT_READ": "ADVANCED_PCI_SETTINGS"}

MLXCONFIG_KEYS = {
    "mlxconfig": Key(
        ("dict",),
        "firmware setting -> value (or list of values) it must have, laid over the GPUDirect defaults "
        "ADVANCED_PCI_SETTINGS=True, MAX_ACC_OUT_READ=0 or 44, ATS_ENABLED=False; null drops a default",
    ),
}


def expected_settings(expected: dict) -> dict:
    """The GPUDirect defaults with expected["mlxconfig"] laid over them (null drops a setting)."""
    given = expected.get("mlxconfig") or {}
    if not isinstance(given, dict):
        raise ExpectationError(f"mlxconfig: expected a mapping of setting to value, got {given!r}")
    merged = {**MLXCONFIG_GPUDIRECT, **{str(k).upper(): v for k, v in given.items()}}
    return {name: value for name, value in merged.items() if value is not None}


def matches(found: str, want) -> bool:
    """Whether a printed value (``False(0)``, ``44``, ``per_mkey(0)``) is the wanted one."""
    if isinstance(want, (list, tuple)):
        return any(matches(found, one) for one in want)
    number = number_of(found)
    if isinstance(want, bool):
        return name_of(found).lower() == str(want).lower() or number == int(want)
    if isinstance(want, int):
        return number == want
    text = str(want).strip()
    return text.lower() in {found.strip().lower(), name_of(found).lower()} or (
        text.lstrip("-").isdigit() and number == int(text)
    )


def _words(want) -> str:
    if isinstance(want, (list, tuple)):
        return " or ".join(_words(one) for one in want)
    return str(want)


def _judge_device(device, want: dict) -> list[str]:
    """What is wrong with one NIC's settings, one phrase per setting."""
    wrong = []
    for name, value in want.items():
        found = device.value(name)
        if found is None:
            hider = _HIDDEN_BY.get(name)
            hidden = hider is not None and device.value(hider) is not None and not matches(device.value(hider), True)
            why = f"hidden while {hider} is {device.value(hider)}" if hidden else "not in the output"
            wrong.append(f"{name} expected {_words(value)}, {why}")
        elif not matches(found, value):
            pending = device.next_boot(name)
            later = ""
            if pending is not None and pending != found and matches(pending, value):
                later = f" (Next Boot {pending}: takes a firmware reset or reboot)"
            wrong.append(f"{name} expected {_words(value)}, found {found}{later}")
    return wrong


def judge_mlxconfig(devices, expected: dict):
    """One CheckResult over every NIC in the output: each expected setting's value in force.

    measured is {device: {setting: value printed or None}}; the message names each NIC and
    setting that is off ("expected X, found Y")."""
    want = expected_settings(expected)
    if not devices:
        return skipped(CHECK, "no mlxconfig output", want)
    if not want:
        return skipped(CHECK, "no expected settings", want)
    measured = {device.device: {name: device.value(name) for name in want} for device in devices}
    problems = []
    for device in devices:
        label = f"{device.device} ({device.device_type})" if device.device_type else device.device
        problems += [f"{label}: {phrase}" for phrase in _judge_device(device, want)]
    if problems:
        return result(CHECK, FAIL, measured, want, "; ".join(problems))
    return result(CHECK, PASS, measured, want, f"{len(devices)} NIC(s) with {', '.join(want)} as expected")


def device_verdicts(measured: dict, want: dict) -> dict:
    """{device: (status, why)} of judge_mlxconfig's measured ({device: {setting: value}}) against its
    expected settings, one NIC at a time with the judge's own matches() (the report's per-rail table
    reads it). A setting missing from the output fails, as in the judge."""
    found = {}
    for device, values in (measured or {}).items():
        values = values if isinstance(values, dict) else {}
        wrong = []
        for name, value in (want or {}).items():
            have = values.get(name)
            if have is None or not matches(str(have), value):
                wrong.append(f"{name} expected {_words(value)}, found {have if have is not None else 'nothing'}")
        found[device] = (FAIL, "; ".join(wrong)) if wrong else (PASS, f"{', '.join(want or {})} as expected")
    return found
