"""Judge PCIe ACS on the path between each GPU and the NIC of its rail (from ``lspci -vvv``/``-tv``).

Pure function, stdlib only (runs on the nodes). GPUDirect RDMA is peer-to-peer PCIe traffic between
a GPU and a NIC under the same PCIe switch; it turns around in the switch unless a port on the way
has Access Control Services redirection on (``ACSCtl: SrcValid+``, ``ReqRedir+``, ``CmpltRedir+``),
which sends every transaction up to the root complex: bandwidth halves or the transfers fail (NCCL's
"completion with error"). Which ports lie between a pair comes from the PCIe tree (each bridge's bus
range), never from device names: the ports below the bus where the two paths meet, on both sides.
A root port above the switch is not between them, whatever its ACS says.

Expectation keys: ``acs_pairs``, {NIC PCI address: GPU PCI address} (the topology's rail pairing in
PCI terms); unset, every NIC (function 0 of a Mellanox/InfiniBand device) is paired with every GPU
(3D/VGA controller; in a tree-only output, an NVIDIA or AMD/ATI device) that shares a PCIe switch
with it. A port on a path whose ACS state the output does not show (a tree-only output, or lspci run
without root: ``Capabilities: <access denied>``) makes the verdict warn: unknown is not off.
"""

from __future__ import annotations

from ansible.module_utils.expectation_keys import ExpectationError, Key
from ansible.module_utils.verdicts import FAIL, PASS, WARN, result, skipped

CHECK = "pcie.acs"
REDIRECTS = ("SrcValid", "ReqRedir", "CmpltRedir")

ACS_KEYS = {
    "acs_pairs": Key(
        ("dict",),
        "NIC PCI address -> GPU PCI address of each rail (e.g. 0000:45:00.0: 0000:4a:00.0); unset, every "
        "GPU-NIC pair under a common PCIe switch",
    ),
}


def pci_address(text: str) -> str:
    """0000:45:00.0 of "45:00.0" or "0000:45:00.0"; ExpectationError for anything else."""
    value = str(text).strip().lower()
    parts = value.split(":")
    if len(parts) == 2:
        value = f"0000:{value}"
    elif len(parts) != 3:
        raise ExpectationError(f"acs_pairs: {text!r} is not a PCI address (DDDD:BB:DD.F or BB:DD.F)")
    return value


def _is_nic(device) -> bool:
    text = device.description
    return device.bdf.endswith(".0") and ("Mellanox" in text or text.startswith("Infiniband controller"))


def _is_gpu(device) -> bool:
    text = device.description
    if device.detailed:
        return text.startswith(("3D controller", "VGA compatible controller", "Display controller"))
    return "[AMD/ATI]" in text or ("NVIDIA" in text and "Audio" not in text)


def _path(tree, nic: str, gpu: str) -> list | None:
    """The ports between two devices: the bridges below the bus where their paths meet; None when
    they share no bridge (they meet at the root complex, not in a PCIe switch)."""
    above_nic, above_gpu = tree.ancestors(nic), tree.ancestors(gpu)
    common = next((bridge for bridge in above_nic if bridge in above_gpu), None)
    if common is None:
        return None
    return above_nic[: above_nic.index(common)] + above_gpu[: above_gpu.index(common)]


def _pairs(tree, expected: dict) -> list[tuple[str, str]]:
    """(NIC, GPU) PCI addresses to judge: the expected pairing, else every pair sharing a switch."""
    given = expected.get("acs_pairs")
    if given:
        if not isinstance(given, dict):
            raise ExpectationError(f"acs_pairs: expected a mapping of NIC to GPU PCI address, got {given!r}")
        return [(pci_address(nic), pci_address(gpu)) for nic, gpu in given.items()]
    nics = sorted(d.bdf for d in tree.devices.values() if _is_nic(d))
    gpus = sorted(d.bdf for d in tree.devices.values() if _is_gpu(d))
    return [(nic, gpu) for nic in nics for gpu in gpus if _path(tree, nic, gpu) is not None]


def judge_acs(tree, expected: dict):
    """One CheckResult over every GPU-NIC pair: fail when a port between them redirects
    peer-to-peer traffic, naming the pair and the port.

    measured is {"NIC-GPU": {"ports": [PCI address, ...], "redirecting": {port: flags}, "unknown": [port, ...]}}."""
    pairs = _pairs(tree, expected)
    if not pairs:
        return skipped(CHECK, "no GPU-NIC pair under a common PCIe switch in the output", expected.get("acs_pairs"))
    measured, redirected, unknown, apart = {}, [], [], []
    for nic, gpu in pairs:
        label = f"{nic}-{gpu}"
        missing = [bdf for bdf in (nic, gpu) if bdf not in tree.devices]
        if missing:
            apart.append(f"{label}: {', '.join(missing)} not in the output")
            measured[label] = None
            continue
        ports = _path(tree, nic, gpu)
        if ports is None:
            apart.append(f"{label}: no common PCIe switch (they meet at the root complex)")
            measured[label] = {"ports": [], "redirecting": {}, "unknown": []}
            continue
        flags, dark = {}, []
        for port in ports:
            if port.acs_ctl is not None:
                on = [name for name in REDIRECTS if port.acs_ctl.get(name)]
                if on:
                    flags[port.bdf] = " ".join(f"{name}+" for name in on)
            elif not port.detailed or port.access_denied:
                dark.append(port.bdf)
        measured[label] = {"ports": [port.bdf for port in ports], "redirecting": flags, "unknown": dark}
        redirected += [f"NIC {nic} - GPU {gpu} at port {port} ({on})" for port, on in flags.items()]
        if dark:
            unknown.append(f"{label}: {', '.join(dark)}")
    want = {
        "pairs": [f"{nic}-{gpu}" for nic, gpu in pairs],
        "redirect": "off (" + ", ".join(f"{name}-" for name in REDIRECTS) + ")",
    }
    if redirected:
        message = "ACS redirects GPUDirect traffic through the root complex: " + "; ".join(redirected)
        return result(CHECK, FAIL, measured, want, message)
    if apart and expected.get("acs_pairs"):
        return result(CHECK, FAIL, measured, want, "; ".join(apart))
    if unknown:
        message = "ACS state not in the output (run lspci -vvv as root) for ports " + "; ".join(unknown)
        return result(CHECK, WARN, measured, want, message)
    return result(CHECK, PASS, measured, want, f"no ACS redirection between {len(measured)} GPU-NIC pair(s)")


def pair_verdicts(measured: dict) -> dict:
    """{"NIC-GPU": (status, why)} of judge_acs's measured, one pair at a time, by judge_acs's own
    rule (the report's per-rail table reads it): a redirecting port fails the pair; so does a pair
    missing from the output or meeting only at the root complex (judge_acs judges such pairs only
    when acs_pairs names them, and fails them then); a port whose ACS state is not shown warns."""
    found = {}
    for label, entry in (measured or {}).items():
        if not isinstance(entry, dict):
            found[label] = (FAIL, "not in the lspci output")
        elif entry.get("redirecting"):
            ports = "; ".join(f"port {port} ({flags})" for port, flags in entry["redirecting"].items())
            found[label] = (FAIL, f"ACS redirects through the root complex at {ports}")
        elif not entry.get("ports"):
            found[label] = (FAIL, "no common PCIe switch (they meet at the root complex)")
        elif entry.get("unknown"):
            found[label] = (WARN, f"ACS state not shown for {', '.join(entry['unknown'])}")
        else:
            found[label] = (PASS, f"no ACS redirection on {len(entry['ports'])} port(s)")
    return found
