"""GPUDirect host readiness: peer-memory module (lsmod), its failures in the kernel log, IOMMU mode, NUMA balancing."""

from __future__ import annotations

import pytest
from ansible.module_utils.gpudirect_host import (
    LsmodParseError,
    iommu_mode,
    judge_iommu,
    judge_numa_balancing,
    judge_peermem,
    judge_peermem_log,
    parse_cmdline,
    parse_lsmod,
    parse_peermem_log,
)
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, WARN, ParseError

from .samples import load, names

LOADED = "lsmod-grep-nvid-peermem-loaded-roce-h100-digitalocean.txt"
ABSENT = "lsmod-sort-grep-mlx5-8gpu-no-peermem-gpu-operator-2511.txt"
GB300 = "gb300-nvidia-peermem-unknown-symbol-err-22-gpu-operator-2868.txt"
NV_PEER_MEM = "rhel78-nv-peer-mem-unknown-symbol-err-0-nv-peer-memory-84.txt"


def test_every_fixture_is_tested():
    assert names("lsmod") == {LOADED, ABSENT}
    assert names("kernel_log_peermem") == {GB300, NV_PEER_MEM}


def test_lsmod_lines_and_their_users():
    modules = parse_lsmod(load("lsmod", LOADED))
    assert modules["nvidia"] == ["nvidia_uvm", "nvidia_peermem", "nvidia_modeset"]
    assert modules["nvidia_peermem"] == [] and len(modules) == 7


def test_peermem_loaded_passes_and_absent_fails():
    loaded = judge_peermem(parse_lsmod(load("lsmod", LOADED)), {})
    assert (loaded.status, loaded.message) == (PASS, "nvidia_peermem loaded")
    absent = judge_peermem(parse_lsmod(load("lsmod", ABSENT)), {})
    assert absent.status == FAIL and absent.message.startswith("nvidia_peermem not loaded: GPUDirect RDMA falls back")
    # dma-buf registers GPU memory without the module.
    assert judge_peermem(parse_lsmod(load("lsmod", ABSENT)), {"gpudirect_via": "dmabuf"}).status == SKIPPED


def test_peermem_named_only_among_ib_cores_users_counts_as_loaded():
    """A grep for ib_ keeps ib_core's line, whose users name nvidia_peermem (line taken from the real listing)."""
    line = "ib_uverbs             200704  3 nvidia_peermem,rdma_ucm,mlx5_ib\n"
    assert line in load("lsmod", LOADED)
    assert judge_peermem(parse_lsmod(line), {}).status == PASS


@pytest.mark.parametrize(
    "name,count,first",
    [
        (GB300, 8, "line 1: [Tue Sep  8 17:16:02 2026] nvidia_peermem: disagrees about version of symbol "
                   "ib_register_peer_memory_client (and 7 more line(s))"),
        (NV_PEER_MEM, 4, "line 1: [Fri Feb 12 11:47:20 2021] nv_peer_mem: Unknown symbol "
                         "ib_register_peer_memory_client (err 0) (and 3 more line(s))"),
    ],
)  # fmt: skip
def test_peermem_load_failures_in_the_kernel_log_fail(name: str, count: int, first: str):
    failures = parse_peermem_log(load("kernel_log_peermem", name))
    assert len(failures) == count
    verdict = judge_peermem_log(failures, {})
    assert verdict.status == FAIL and first in verdict.message


def test_a_kernel_log_without_peermem_lines_passes():
    """A real kernel log with GPU errors (Xid) but no peer-memory line."""
    text = load("kernel_log_xid", "xid13-xid109-dmesg-ctime-gpud.txt")
    assert judge_peermem_log(parse_peermem_log(text), {}).status == PASS


@pytest.mark.parametrize(
    "cmdline,entries,mode",
    [
        ("BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt", ["dmar0"], "passthrough"),
        ("BOOT_IMAGE=/vmlinuz amd_iommu=off iommu=pt", None, "off"),
        ("BOOT_IMAGE=/vmlinuz intel_iommu=on", ["dmar0", "dmar1"], "translated"),
        ("BOOT_IMAGE=/vmlinuz intel_iommu=on", None, "translated"),
        ("BOOT_IMAGE=/vmlinuz quiet", [], "off"),
        ("BOOT_IMAGE=/vmlinuz quiet", None, "default"),
    ],
)
def test_iommu_mode(cmdline: str, entries, mode: str):
    """Typed kernel command lines (no real /proc/cmdline with these parameters was found to copy)."""
    assert iommu_mode(cmdline, entries) == mode


def test_iommu_verdicts():
    assert judge_iommu("passthrough", {}).status == PASS
    assert judge_iommu("off", {}).status == PASS
    translated = judge_iommu("translated", {})
    assert translated.status == FAIL and "boot with iommu=pt" in translated.message
    assert judge_iommu("default", {}).status == WARN
    assert judge_iommu("off", {"iommu_modes": ["passthrough"]}).status == FAIL
    assert parse_cmdline("BOOT_IMAGE=/vmlinuz iommu=pt\n") == "passthrough"
    with pytest.raises(ParseError, match="not a kernel command line"):
        parse_cmdline("")


def test_numa_balancing():
    assert judge_numa_balancing("0\n").status == PASS
    assert judge_numa_balancing("1").status == WARN
    assert judge_numa_balancing(None).status == SKIPPED


def test_not_lsmod():
    with pytest.raises(LsmodParseError, match="no lsmod module line"):
        parse_lsmod("lsmod: command not found\n")
