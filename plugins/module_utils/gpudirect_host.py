"""A host's GPUDirect RDMA readiness: peer-memory module, its kernel-log failures, IOMMU mode, NUMA balancing.

Parsers and judges in one small file (stdlib only, runs on the nodes); each reads one thing:

- ``lsmod`` (or ``lsmod | grep nvidia``, which drops the header): nvidia_peermem (nv_peer_mem
  before driver 470) must be loaded, unless GPUDirect goes through dma-buf (``gpudirect_via``).
  Without it NCCL's IB transport stages GPU data through host memory ("via NET/IB/0" where a
  working node says "via NET/IB/0/GDRDMA").
- the kernel log (``journalctl -k``, ``dmesg``): the module failing to load ("nvidia_peermem:
  Unknown symbol ib_register_peer_memory_client (err -22)", "disagrees about version of symbol"),
  which happens when the RDMA stack (DOCA-OFED/MLNX_OFED or inbox) and the module were built apart.
- ``/proc/cmdline`` with the entries of ``/sys/class/iommu``: the IOMMU must be off or in
  passthrough (``iommu=pt``); with DMA remapping on, peer-to-peer transfers are translated and
  NCCL warns 'Missing "iommu=pt"' or fails to register GPU memory.
- ``kernel.numa_balancing``: NVIDIA's GPU-node tuning turns automatic NUMA balancing off (it
  migrates pages under running GPU and RDMA jobs); on is a warning.
"""

from __future__ import annotations

import re

from ansible.module_utils.expectation_keys import Key
from ansible.module_utils.verdicts import FAIL, PASS, WARN, ParseError, result, skipped

PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
GPUDIRECT_VIA = ("peermem", "dmabuf")
IOMMU_MODES = ("off", "passthrough", "translated", "default")
GOOD_IOMMU = ("off", "passthrough")

PEERMEM_KEYS = {
    "gpudirect_via": Key(
        ("str",),
        "how GPU memory is registered with the NIC: peermem (default; nvidia_peermem must be loaded) or dmabuf "
        "(needs no peer-memory module)",
        choices=GPUDIRECT_VIA,
    ),
}
IOMMU_KEYS = {
    "iommu_modes": Key(
        ("list",),
        f"IOMMU modes that pass (default {', '.join(GOOD_IOMMU)}); of {', '.join(IOMMU_MODES)}",
        items=("str",),
    ),
}
PEERMEM_LOG_KEYS: dict = {}


class LsmodParseError(ParseError):
    pass


_LSMOD = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+(?P<size>\d+)\s+(?P<count>-?\d+)(?:\s+(?P<users>\S+))?\s*$")


def parse_lsmod(text: str, source: str = "lsmod") -> dict[str, list[str]]:
    """{module: [modules using it]} of lsmod's lines (the header is optional: a grep drops it)."""
    modules: dict[str, list[str]] = {}
    for line in text.replace("\r", "").splitlines():
        if match := _LSMOD.match(line.strip()):
            users = match["users"] or ""
            modules[match["name"]] = [user for user in users.strip(",[]").split(",") if user and user != "-"]
    if not modules:
        raise LsmodParseError("no lsmod module line (NAME SIZE USED [BY])", source=source)
    return modules


def judge_peermem(modules: dict, expected: dict):
    via = expected.get("gpudirect_via") or "peermem"
    # A grep for mlx5 or ib_ drops the module's own line, not its name among ib_core's users.
    users = {user for used_by in modules.values() for user in used_by}
    loaded = [name for name in PEERMEM_MODULES if name in modules or name in users]
    if via == "dmabuf":
        return skipped("gpudirect.peermem", "not needed: GPU memory is registered through dma-buf", via)
    if loaded:
        return result("gpudirect.peermem", PASS, loaded, "nvidia_peermem", f"{loaded[0]} loaded")
    return result(
        "gpudirect.peermem", FAIL, [], "nvidia_peermem",
        "nvidia_peermem not loaded: GPUDirect RDMA falls back to host memory (modprobe nvidia_peermem; "
        "see the kernel log for why it did not load)",
    )  # fmt: skip


_PEERMEM_FAILURE = re.compile(
    r"\b(?:nvidia_peermem|nv_peer_mem)\b.*(?:Unknown symbol|disagrees about version|could not insert|Invalid argument|"
    r"error|failed)",
    re.IGNORECASE,
)


def parse_peermem_log(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every peer-memory module failure in a kernel log. Any text is a log."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.replace("\r", "").splitlines(), start=1)
        if _PEERMEM_FAILURE.search(line)
    ]


def judge_peermem_log(failures: list, expected: dict):
    if not failures:
        return result("gpudirect.peermem_log", PASS, 0, 0, "no nvidia_peermem failure in the kernel log")
    number, line = failures[0]
    more = f" (and {len(failures) - 1} more line(s))" if len(failures) > 1 else ""
    return result(
        "gpudirect.peermem_log", FAIL, len(failures), 0,
        f"nvidia_peermem failed to load, line {number}: {line[:200]}{more}; rebuild it against the RDMA stack in use",
    )  # fmt: skip


def parse_cmdline(text: str, source: str = "/proc/cmdline") -> str:
    """The IOMMU mode a kernel command line sets (see iommu_mode); ParseError for empty text."""
    if not text.strip() or len(text.strip().splitlines()) != 1:
        raise ParseError("not a kernel command line (one line of boot parameters)", source=source)
    return iommu_mode(text)


def iommu_mode(cmdline: str, iommu_entries: list | None = None) -> str:
    """off, passthrough, translated (DMA remapping on) or default (not said on the command line and
    /sys/class/iommu not read). ``iommu_entries``: the names in /sys/class/iommu (dmar0, ivhd0...)."""
    params = dict(token.partition("=")[::2] for token in cmdline.split())
    off = params.get("iommu") == "off" or "off" in (params.get("intel_iommu"), params.get("amd_iommu"))
    if off:
        return "off"
    if params.get("iommu") == "pt" or params.get("iommu.passthrough") == "1":
        return "passthrough"
    if iommu_entries is not None:
        return "translated" if iommu_entries else "off"
    if "on" in (params.get("intel_iommu"), params.get("amd_iommu")):
        return "translated"
    return "default"


def judge_iommu(mode: str, expected: dict):
    good = expected.get("iommu_modes") or list(GOOD_IOMMU)
    if mode in good:
        return result("gpudirect.iommu", PASS, mode, good, f"IOMMU {mode}")
    if mode == "default":
        return result(
            "gpudirect.iommu", WARN, mode, good,
            "IOMMU mode not on the kernel command line and /sys/class/iommu not read: set iommu=pt (or off)",
        )  # fmt: skip
    return result(
        "gpudirect.iommu", FAIL, mode, good,
        f"IOMMU {mode}: GPU-NIC peer-to-peer DMA is remapped; boot with iommu=pt (or the IOMMU off)",
    )  # fmt: skip


def judge_numa_balancing(value: str | None):
    if value is None:
        return skipped("gpudirect.numa_balancing", "kernel.numa_balancing not readable")
    value = value.strip()
    if value == "0":
        return result("gpudirect.numa_balancing", PASS, value, "0", "automatic NUMA balancing off")
    return result(
        "gpudirect.numa_balancing", WARN, value, "0",
        f"kernel.numa_balancing={value}: automatic NUMA balancing migrates pages under GPU and RDMA jobs; set it to 0",
    )  # fmt: skip
