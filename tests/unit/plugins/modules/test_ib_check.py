"""ib_check over a fake RDMA sysfs tree and real ibstat/ibv_devinfo captures (run_command mocked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.plugins.module_utils.samples import load

from .conftest import HCA_PCI, pci_tree

IB_H100 = [f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11)]
ETH_DOWN = load("ibstat", "h100-ndr400-ib-active-eth-down-disabled-gpud.txt")
IBPANIC = load("ibstat", "a100-hdr200-azure-ibpanic-exit255-gpud.txt")
CX3 = load("ibv_devinfo", "connectx3-mlx4-2hca-port1-active-port2-down.txt")


def sysfs(root: Path, devices: dict[str, dict]) -> Path:
    """A fake /sys/class/infiniband: {dev: {fw, rate, state, phys, layer, counters}}."""
    for name, spec in devices.items():
        port = root / name / "ports" / "1"
        (port / "counters").mkdir(parents=True)
        (root / name / "fw_ver").write_text(spec.get("fw", "28.39.1002") + "\n")
        (port / "state").write_text(f"{spec.get('state', '4: ACTIVE')}\n")
        (port / "phys_state").write_text(f"{spec.get('phys', '5: LinkUp')}\n")
        (port / "rate").write_text(f"{spec.get('rate', 400)} Gb/sec (4X NDR)\n")
        (port / "link_layer").write_text(spec.get("layer", "InfiniBand") + "\n")
        for counter, value in {"symbol_error": 0, "link_downed": 0, **spec.get("counters", {})}.items():
            (port / "counters" / counter).write_text(f"{value}\n")
    return root


@pytest.fixture
def plain(tmp_path, plain_pci):
    return {"sysfs_root": str(tmp_path / "no-infiniband"), "pci_root": str(plain_pci)}


def test_no_rdma_device_is_skipped_no_hardware(node, run, plain):
    done = run("ib_check", {"expected_hcas": {"mlx5_0": 400}, **plain})
    assert not done.failed
    assert done.result["status"] == "skipped"
    assert done.checks["ib.present"]["message"] == "skipped: no hardware"
    assert node.calls == []


def test_require_hardware_fails_when_hcas_are_expected(node, run, plain):
    done = run("ib_check", {"expected_hcas": {"mlx5_0": 400}, "require_hardware": True, **plain})
    assert done.failed and done.status("ib.present") == "fail"


def test_hca_on_the_bus_without_rdma_devices_fails_expected_hcas(node, run, tmp_path):
    pci = pci_tree(tmp_path / "pci", HCA_PCI)
    done = run("ib_check", {"expected_hcas": {"mlx5_0": 400}, "sysfs_root": str(tmp_path / "x"), "pci_root": str(pci)})
    assert done.failed
    assert done.status("ib.present") == "fail"


def test_sysfs_all_good(node, run, tmp_path, plain_pci):
    root = sysfs(tmp_path / "ib", {d: {} for d in IB_H100})
    args = {"expected_hcas": dict.fromkeys(IB_H100, 400), "link_layers": {"mlx5_0": "infiniband"}}
    done = run("ib_check", {**args, "sysfs_root": str(root), "pci_root": str(plain_pci)})
    assert not done.failed
    assert done.result["status"] == "pass"
    assert done.result["source"] == "sysfs"
    assert {c: done.status(c) for c in done.checks} == {
        "ib.present": "pass",
        "ib.state": "pass",
        "ib.phys_state": "pass",
        "ib.rate": "pass",
        "ib.link_layer": "pass",
        "ib.firmware": "pass",
        "ib.counters": "pass",
    }
    assert len(done.result["ports"]) == 8
    assert node.calls == []  # sysfs needs no tool


def test_sysfs_slow_port_missing_hca_and_counters(node, run, tmp_path, plain_pci):
    devices = {d: {} for d in IB_H100[:7]}
    devices["mlx5_3"] = {"rate": 200, "counters": {"symbol_error": 12}}
    devices["mlx5_5"] = {"state": "1: DOWN", "phys": "2: Polling"}
    root = sysfs(tmp_path / "ib", devices)
    args = {"expected_hcas": dict.fromkeys(IB_H100, 400), "counter_limits": {"symbol_error": 10}}
    done = run("ib_check", {**args, "sysfs_root": str(root), "pci_root": str(plain_pci)})
    assert done.failed
    assert done.status("ib.present") == "fail"  # mlx5_11 is missing
    assert done.checks["ib.rate"]["measured"]["mlx5_3/1"] == 200.0
    assert done.status("ib.rate") == "fail"
    assert done.status("ib.state") == "fail"
    assert done.status("ib.phys_state") == "fail"
    assert done.status("ib.counters") == "fail"


def test_rates_and_layers_per_device(node, run, tmp_path, plain_pci):
    """A node with NDR InfiniBand rails and a 100G RoCE port judges each at its own rate."""
    root = sysfs(tmp_path / "ib", {"mlx5_0": {}, "mlx5_1": {"rate": 100, "layer": "Ethernet"}})
    args = {
        "expected_hcas": {"mlx5_0": 400, "mlx5_1": {"rate": 100, "link_layer": "ethernet"}},
        "link_layers": {"mlx5_0": "InfiniBand"},
    }
    done = run("ib_check", {**args, "sysfs_root": str(root), "pci_root": str(plain_pci)})
    assert done.status("ib.rate") == "pass"
    assert done.status("ib.link_layer") == "pass"
    assert done.checks["ib.link_layer"]["expected"] == {"mlx5_0": "InfiniBand", "mlx5_1": "Ethernet"}


def test_ibstat_source(node, run, tmp_path, plain_pci):
    root = sysfs(tmp_path / "ib", {"mlx5_0": {}})
    node.programs = {"ibstat"}
    node.outputs = {"ibstat": (0, ETH_DOWN, "")}
    args = {"expected_hcas": dict.fromkeys(IB_H100, 400), "source": "ibstat"}
    done = run("ib_check", {**args, "sysfs_root": str(root), "pci_root": str(plain_pci)})
    assert node.calls == [["/usr/bin/ibstat"]]
    assert done.result["source"] == "ibstat"
    assert done.result["status"] == "pass"  # the down Ethernet ports are not expected, so not judged
    assert done.status("ib.counters") == "skipped"  # ibstat has no counters


def test_ibstat_missing_is_skipped_with_the_reason(node, run, tmp_path, plain_pci):
    root = sysfs(tmp_path / "ib", {"mlx5_0": {}})
    done = run("ib_check", {"source": "ibstat", "sysfs_root": str(root), "pci_root": str(plain_pci)})
    assert not done.failed
    assert done.checks["ib.present"]["message"] == "skipped: ibstat not found"


def test_ibstat_panic_fails(node, run, tmp_path, plain_pci):
    root = sysfs(tmp_path / "ib", {"mlx5_0": {}})
    node.programs = {"ibstat"}
    node.outputs = {"ibstat": (255, IBPANIC, "")}
    done = run("ib_check", {"source": "ibstat", "sysfs_root": str(root), "pci_root": str(plain_pci)})
    assert done.failed
    # ibstat's own panic line: a failed run quoting it, not unreadable output.
    assert done.status("ib.command") == "fail"
    assert (
        "ibstat reported an error: ibpanic: [1400444] main: stat of IB device 'mlx5_8'"
        in done.checks["ib.command"]["message"]
    )
    assert "ib.output" not in done.checks


def test_ibv_devinfo_down_port_fails(node, run, tmp_path, plain_pci):
    root = sysfs(tmp_path / "ib", {"mlx4_0": {}})
    node.programs = {"ibv_devinfo"}
    node.outputs = {"ibv_devinfo -v": (0, CX3, "")}
    args = {"expected_hcas": {"mlx4_0": 56}, "source": "ibv_devinfo"}
    done = run("ib_check", {**args, "sysfs_root": str(root), "pci_root": str(plain_pci)})
    assert done.status("ib.state") == "fail"  # port 2 is PORT_DOWN
    assert done.status("ib.rate") == "skipped"  # plain ibv_devinfo prints no speed
    # Expecting only the cabled port: that one is active.
    done = run("ib_check", {**args, "expected_hcas": {"mlx4_0/1": 56}, "sysfs_root": str(root)})
    assert done.status("ib.state") == "pass"


def test_replay_prefers_a_sysfs_copy_then_ibstat(node, run, tmp_path):
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "ibstat.txt").write_text(ETH_DOWN)
    args = {"expected_hcas": dict.fromkeys(IB_H100, 400), "replay_dir": str(replay)}
    done = run("ib_check", args)
    assert (done.result["source"], done.result["status"]) == ("replay:ibstat", "pass")
    sysfs(replay / "infiniband", {"mlx5_0": {"rate": 200}})
    done = run("ib_check", args)
    assert done.result["source"] == "replay:sysfs"
    assert done.status("ib.present") == "fail"
    assert node.calls == []


def test_replay_without_recordings_is_no_hardware(node, run, tmp_path):
    (tmp_path / "empty").mkdir()
    done = run("ib_check", {"replay_dir": str(tmp_path / "empty"), "expected_hcas": {"mlx5_0": 400}})
    assert (done.failed, done.checks["ib.present"]["message"]) == (False, "skipped: no hardware")


def test_check_mode_changes_nothing(node, run, tmp_path, plain_pci):
    root = sysfs(tmp_path / "ib", {"mlx5_0": {}})
    done = run("ib_check", {"sysfs_root": str(root), "pci_root": str(plain_pci)}, check_mode=True)
    assert done.result["changed"] is False
    assert done.result["status"] == "pass"
