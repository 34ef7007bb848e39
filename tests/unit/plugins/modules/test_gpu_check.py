"""gpu_check with run_command mocked: real nvidia-smi, topo and kernel-log captures in, verdicts out."""

from __future__ import annotations

import pytest

from tests.unit.plugins.module_utils.samples import load

H100_535_161 = load("nvidia-smi_query", "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt")
A100 = load("nvidia-smi_query", "a100-sxm4-40gb-8gpu-nvidia-smi-a-535.129.03.txt")
A100_TOPO = load("nvidia-smi_topo", "a100-sxm-40g-8gpu-10nic-dgx-style-tabs.txt")
T4_XML = load("nvidia-smi_xml", "tesla-t4-pcie-x8-515.105.01-telegraf.xml")
XID79 = load("kernel_log_xid", "h100-xid79-fallen-off-bus-sxid20034-gpud.txt")
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"  # noqa: E501


def test_no_gpu_on_the_bus_is_skipped_no_hardware_and_runs_nothing(node, run, plain_pci):
    node.programs = {"nvidia-smi"}
    done = run("gpu_check", {"expected_gpus": 8, "pci_root": str(plain_pci)})
    assert not done.failed
    assert done.result["status"] == "skipped"
    assert done.checks["gpu.count"]["message"] == "skipped: no hardware"
    assert done.result["changed"] is False
    assert node.calls == []


def test_absent_pci_tree_is_no_hardware(node, run, tmp_path):
    done = run("gpu_check", {"pci_root": str(tmp_path / "nope")})
    assert (done.failed, done.result["status"]) == (False, "skipped")


def test_require_hardware_fails_a_node_that_should_have_gpus(node, run, plain_pci):
    done = run("gpu_check", {"expected_gpus": 8, "require_hardware": True, "pci_root": str(plain_pci)})
    assert done.failed
    assert done.status("gpu.count") == "fail"
    # Without an expected count there is nothing to require.
    done = run("gpu_check", {"require_hardware": True, "pci_root": str(plain_pci)})
    assert (done.failed, done.result["status"]) == (False, "skipped")


def test_gpus_without_nvidia_smi_are_skipped_with_the_reason(node, run, gpu_pci):
    done = run("gpu_check", {"expected_gpus": 8, "pci_root": str(gpu_pci)})
    assert not done.failed
    assert done.result["status"] == "skipped"
    assert done.checks["gpu.count"]["message"] == "skipped: nvidia-smi not found"


def test_h100_power_brake_fails_the_throttle_check(node, run, gpu_pci):
    node.programs = {"nvidia-smi", "journalctl"}
    node.outputs = {
        "nvidia-smi -q -x": (0, H100_535_161, ""),
        "nvidia-smi topo -m": (6, "", "topo not supported\n"),
        "journalctl -k": (0, "-- No entries --\n", ""),
    }
    args = {"expected_gpus": 8, "model": "NVIDIA H100 80GB HBM3", "nvlink_generation": 4, "nvswitch": True}
    done = run("gpu_check", {**args, "pci_root": str(gpu_pci)})
    assert done.failed
    assert done.result["status"] == "fail"
    assert "gpu.throttle" in done.result["msg"]
    throttle = done.checks["gpu.throttle"]
    assert throttle["status"] == "fail"
    assert throttle["measured"]["00000000:19:00.0"] == ["hw_power_brake_slowdown", "hw_slowdown"]
    assert done.status("gpu.count") == "pass"
    assert done.status("gpu.model") == "pass"
    assert done.status("gpu.fabric") == "pass"
    assert done.status("gpu.xid") == "pass"
    assert done.checks["gpu.nvlink"]["message"] == "no topology output"
    assert done.result["gpus"] == {
        "count": 8,
        "driver_version": "535.161.08",
        "cuda_version": "12.2",
        "products": ["NVIDIA H100 80GB HBM3"],
    }
    assert any("topo -m exited 6" in note for note in done.result["notes"])
    # argv lists with the program's path, and the C locale.
    assert node.calls[0] == ["/usr/bin/nvidia-smi", "-q", "-x"]
    assert node.calls[2][:3] == ["/usr/bin/journalctl", "-k", "-b"]
    assert all(env["LC_ALL"] == "C" and env["LANG"] == "C" for env in node.environ)


def test_a100_with_topology_and_pins(node, run, gpu_pci):
    node.programs = {"nvidia-smi", "journalctl"}
    node.outputs = {
        "nvidia-smi -q -x": (0, A100, ""),
        "nvidia-smi topo -m": (0, A100_TOPO, ""),
        "journalctl -k": (0, "", ""),
    }
    args = {
        "expected_gpus": 8,
        "nvlink_generation": 3,
        "nvswitch": True,
        "driver_version": "535.129.03",
        "cuda_version": "12.2",
        "persistence_mode": False,
        "pci_root": str(gpu_pci),
    }
    done = run("gpu_check", args)
    assert done.status("gpu.nvlink") == "pass"
    assert done.checks["gpu.nvlink"]["expected"] == 12  # NVLink 3 on NVSwitch: 12 links per GPU
    assert done.status("gpu.driver_version") == "pass"
    assert done.status("gpu.cuda_version") == "pass"
    assert done.status("gpu.persistence") == "pass"
    assert not done.failed and done.result["status"] in ("pass", "warn")
    # Pinned another driver: that check fails, and with it the host.
    done = run("gpu_check", {**args, "driver_version": "550.54.15"})
    assert done.failed and done.status("gpu.driver_version") == "fail"


def test_nic_affinity_warns_by_default_and_fails_when_asked(node, run, gpu_pci):
    # In this DGX A100 capture mlx5_<i> is PXB to GPU<i> for i < 8 and SYS to the other socket's GPUs.
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q -x": (0, A100, ""), "nvidia-smi topo -m": (0, A100_TOPO, "")}
    args = {"persistence_mode": False, "kernel_log": False, "pci_root": str(gpu_pci)}
    assert "gpu.nic_affinity" not in run("gpu_check", args).checks  # no pairing given
    rails = {f"mlx5_{i}": i for i in range(8)}
    assert run("gpu_check", {**args, "hca_gpus": rails}).status("gpu.nic_affinity") == "pass"
    swapped = {**rails, "mlx5_0": 4, "mlx5_4": 0}
    done = run("gpu_check", {**args, "hca_gpus": swapped})
    assert (done.failed, done.status("gpu.nic_affinity")) == (False, "warn")
    assert done.checks["gpu.nic_affinity"]["measured"]["mlx5_4"] == {"gpu": "GPU0", "path": "SYS"}
    done = run("gpu_check", {**args, "hca_gpus": swapped, "nic_affinity_severity": "fail"})
    assert (done.failed, done.status("gpu.nic_affinity")) == (True, "fail")
    assert "mlx5_0-GPU4 SYS" in done.result["msg"]
    done = run("gpu_check", {**args, "hca_gpus": {"mlx5_0": "zero"}})
    assert done.failed and "hca_gpus['mlx5_0']: expected a GPU index" in done.result["msg"]


def test_xml_output_is_read(node, run, gpu_pci):
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q -x": (0, T4_XML, ""), "nvidia-smi topo -m": (0, "", "")}
    done = run("gpu_check", {"expected_gpus": 1, "model": "Tesla T4", "kernel_log": False, "pci_root": str(gpu_pci)})
    assert done.status("gpu.count") == "pass"
    assert done.status("gpu.model") == "pass"
    assert done.checks["gpu.xid"]["message"] == "kernel log not read"


def test_xid_from_dmesg_when_journalctl_is_missing(node, run, gpu_pci):
    node.programs = {"nvidia-smi", "dmesg"}
    node.outputs = {
        "nvidia-smi -q -x": (0, H100_535_161, ""),
        "nvidia-smi topo -m": (0, "", ""),
        "dmesg": (0, XID79, ""),
    }
    done = run("gpu_check", {"pci_root": str(gpu_pci)})
    assert done.status("gpu.xid") == "fail"
    assert "Xid 79 on 0000:91:00" in done.checks["gpu.xid"]["measured"]


def test_a_gpu_lost_without_an_xid_fails_the_node(node, run, gpu_pci):
    """The driver's probe found GPU 0000:b3:00.0 gone and logged no Xid (NVSentinel #155's dmesg)."""
    node.programs = {"nvidia-smi", "journalctl"}
    node.outputs = {
        "nvidia-smi -q -x": (0, H100_535_161, ""),
        "nvidia-smi topo -m": (0, "", ""),
        "journalctl -k": (0, load("kernel_log_xid", "l40-fallen-off-bus-multiline-no-xid-570-nvsentinel-155.txt"), ""),
    }
    done = run("gpu_check", {"pci_root": str(gpu_pci)})
    assert done.status("gpu.xid") == "fail"  # the host fails on it (and on this capture's HW slowdown)
    assert done.checks["gpu.xid"]["measured"] == ["GPU 0000:b3:00.0 fell off the bus"]


def test_unreadable_kernel_log_skips_only_the_xid_check(node, run, gpu_pci):
    node.programs = {"nvidia-smi", "journalctl", "dmesg"}
    node.outputs = {
        "nvidia-smi -q -x": (0, A100, ""),
        "nvidia-smi topo -m": (0, A100_TOPO, ""),
        "journalctl -k": (1, "", "No journal files were found.\n"),
        "dmesg": (1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"),
    }
    done = run("gpu_check", {"persistence_mode": False, "pci_root": str(gpu_pci)})
    assert done.status("gpu.xid") == "skipped"
    assert any("Operation not permitted" in note for note in done.result["notes"])


def test_driver_not_loaded_fails_with_rc_and_output(node, run, gpu_pci):
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q -x": (9, NO_DRIVER, "")}
    done = run("gpu_check", {"expected_gpus": 8, "pci_root": str(gpu_pci)})
    assert done.failed
    assert done.status("gpu.driver") == "fail"
    assert done.result["rc"] == 9
    assert "couldn't communicate with the NVIDIA driver" in done.checks["gpu.driver"]["message"]


def test_unparsable_output_fails_the_output_check(node, run, gpu_pci):
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q -x": (0, "hello\n", "")}
    done = run("gpu_check", {"pci_root": str(gpu_pci)})
    assert done.failed and done.status("gpu.output") == "fail"


@pytest.mark.parametrize("check_mode", [False, True])
def test_replay_dir_reads_recordings_and_runs_nothing(node, run, tmp_path, plain_pci, check_mode):
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "nvidia-smi-q.txt").write_text(H100_535_161)
    (replay / "kernel.log").write_text(XID79)
    done = run("gpu_check", {"replay_dir": str(replay), "pci_root": str(plain_pci)}, check_mode=check_mode)
    assert node.calls == []
    assert done.result["source"] == "replay"
    assert done.status("gpu.throttle") == "fail"
    assert done.status("gpu.xid") == "fail"
    assert done.status("gpu.nvlink") == "skipped"
    assert done.result["changed"] is False


def test_replay_without_recordings_is_no_hardware(node, run, tmp_path, gpu_pci):
    node.programs = {"nvidia-smi"}
    (tmp_path / "empty").mkdir()
    done = run("gpu_check", {"replay_dir": str(tmp_path / "empty"), "expected_gpus": 8, "pci_root": str(gpu_pci)})
    assert not done.failed
    assert done.checks["gpu.count"]["message"] == "skipped: no hardware"
    assert node.calls == []


def test_replay_option_names_files_per_command(node, run, tmp_path):
    recording = tmp_path / "t4.xml"
    recording.write_text(T4_XML)
    done = run("gpu_check", {"replay": {"nvidia-smi -q -x": str(recording)}, "expected_gpus": 1})
    assert done.status("gpu.count") == "pass"
    assert done.result["gpus"]["products"] == ["Tesla T4"]


def test_hung_nvidia_smi_is_stopped_and_fails(node, run, gpu_pci):
    node.programs = {"nvidia-smi", "timeout"}
    node.outputs = {"timeout": (124, "", "")}
    done = run("gpu_check", {"timeout": 30, "pci_root": str(gpu_pci)})
    assert done.failed
    assert node.calls[0][:4] == ["/usr/bin/timeout", "--kill-after=10", "30", "/usr/bin/nvidia-smi"]
    assert "timed out after 30 s" in done.checks["gpu.driver"]["message"]
