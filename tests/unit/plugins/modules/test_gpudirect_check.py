"""gpudirect_check: real outputs (lspci, mlxconfig, lsmod, kernel log) with run_command mocked, and the
no-hardware paths on a fake PCI tree."""

from __future__ import annotations

from pathlib import Path

from tests.unit.plugins.module_utils.samples import load

from .conftest import GPU_PCI, HCA_PCI, PLAIN_PCI, pci_tree

LSPCI = load("lspci_vvv", "amd-mi100-connectx6-pmc-switch-root-port-acs-vvv-excerpt-and-tv-rccl-547.txt")
CX5 = load("mlxconfig_q", "connectx5-edr-ib-gpudirect-defaults-off-bluebanquise.txt")
LSMOD_OK = load("lsmod", "lsmod-grep-nvid-peermem-loaded-roce-h100-digitalocean.txt")
LSMOD_NONE = load("lsmod", "lsmod-sort-grep-mlx5-8gpu-no-peermem-gpu-operator-2511.txt")
PEERMEM_LOG = load("kernel_log_peermem", "gb300-nvidia-peermem-unknown-symbol-err-22-gpu-operator-2868.txt")
CHECKS = {
    "pcie.acs", "rdma.mlxconfig", "gpudirect.peermem", "gpudirect.peermem_log", "gpudirect.iommu",
    "gpudirect.numa_balancing",
}  # fmt: skip


def _host(tmp_path: Path, cmdline: str, iommu: list, numa: str) -> dict:
    (tmp_path / "cmdline").write_text(cmdline)
    (tmp_path / "numa").write_text(numa)
    iommu_root = tmp_path / "iommu"
    iommu_root.mkdir()
    for entry in iommu:
        (iommu_root / entry).mkdir()
    ib = tmp_path / "infiniband" / "mlx5_0"
    ib.mkdir(parents=True)
    (tmp_path / "pci" / "0000:18:00.0").mkdir(parents=True, exist_ok=True)
    (ib / "device").symlink_to(tmp_path / "pci" / "0000:18:00.0")
    return {
        "pci_root": str(pci_tree(tmp_path / "bus", {**GPU_PCI, **HCA_PCI})),
        "sysfs_root": str(tmp_path / "infiniband"),
        "cmdline_path": str(tmp_path / "cmdline"),
        "iommu_root": str(iommu_root),
        "numa_balancing_path": str(tmp_path / "numa"),
    }


def test_no_gpu_or_no_rdma_is_no_hardware(node, run, tmp_path):
    plain = pci_tree(tmp_path / "plain", PLAIN_PCI)
    done = run("gpudirect_check", {"pci_root": str(plain), "sysfs_root": str(tmp_path / "none")})
    assert (done.failed, done.result["status"]) == (False, "skipped")
    assert done.checks["gpudirect.present"]["message"] == "skipped: no hardware"
    assert node.calls == []
    required = run("gpudirect_check", {"pci_root": str(plain), "require_hardware": True, "mlxconfig": {"X": 1}})
    assert required.failed and required.status("gpudirect.present") == "fail"


def test_a_node_left_at_factory_settings_fails_each_gpudirect_setting(node, run, tmp_path):
    node.programs = {"lspci", "mlxconfig", "lsmod", "journalctl"}
    node.outputs = {
        "lspci -vvv": (0, LSPCI[: LSPCI.index(" +-[")].replace("40:01.1 PCI bridge", "44:01.0 PCI bridge"), ""),
        "lspci -tv": (0, LSPCI[LSPCI.index(" +-[") :], ""),
        "mlxconfig -d 0000:18:00.0 q": (0, CX5, ""),
        "lsmod": (0, LSMOD_NONE, ""),
        "journalctl -k -b --no-pager": (0, PEERMEM_LOG, ""),
    }
    args = _host(tmp_path, "BOOT_IMAGE=/vmlinuz intel_iommu=on\n", ["dmar0"], "1\n")
    done = run("gpudirect_check", args)
    assert done.failed and set(done.checks) == CHECKS
    statuses = {check: done.status(check) for check in CHECKS}
    assert statuses == {
        "pcie.acs": "fail", "rdma.mlxconfig": "fail", "gpudirect.peermem": "fail", "gpudirect.peermem_log": "fail",
        "gpudirect.iommu": "fail", "gpudirect.numa_balancing": "warn",
    }  # fmt: skip
    assert "at port 0000:44:01.0" in done.checks["pcie.acs"]["message"]
    assert done.checks["gpudirect.iommu"]["measured"] == "translated"


def test_a_ready_node_passes_and_missing_tools_skip(node, run, tmp_path):
    node.programs = {"lsmod", "dmesg"}
    node.outputs = {"lsmod": (0, LSMOD_OK, ""), "dmesg": (0, "[    0.000000] Linux version 6.12\n", "")}
    args = _host(tmp_path, "BOOT_IMAGE=/vmlinuz iommu=pt\n", ["dmar0"], "0\n")
    done = run("gpudirect_check", args)
    assert not done.failed
    assert {check: done.status(check) for check in CHECKS} == {
        "pcie.acs": "skipped", "rdma.mlxconfig": "skipped", "gpudirect.peermem": "pass",
        "gpudirect.peermem_log": "pass", "gpudirect.iommu": "pass", "gpudirect.numa_balancing": "pass",
    }  # fmt: skip
    assert done.checks["rdma.mlxconfig"]["message"].startswith("skipped: mlxconfig not found")
    assert done.result["status"] == "pass"


def test_replay_judges_recordings(node, run, tmp_path):
    (tmp_path / "lsmod.txt").write_text(LSMOD_NONE)
    (tmp_path / "mlxconfig.txt").write_text(CX5)
    done = run("gpudirect_check", {"replay_dir": str(tmp_path), "mlxconfig": {"MAX_ACC_OUT_READ": None}})
    assert (done.result["source"], done.status("gpudirect.peermem"), done.status("rdma.mlxconfig")) == (
        "replay", "fail", "fail"
    )  # fmt: skip
    assert done.status("pcie.acs") == "skipped" and node.calls == []


def test_replay_without_any_recording_is_no_hardware(node, run, tmp_path):
    done = run("gpudirect_check", {"replay_dir": str(tmp_path)})
    assert done.checks["gpudirect.present"]["message"] == "skipped: no hardware"
