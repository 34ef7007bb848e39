"""imex_node: the IMEX channel major from real /proc/devices outputs, the GPUs' compute processes from a
real nvidia-smi output, and the busy reasons from real squeue outputs (this project's Slurm)."""

from __future__ import annotations

import pytest

from .samples import load

from ansible.module_utils.imex_node import (  # isort: skip
    ProcDevicesParseError,
    busy_reasons,
    imex_channels_major,
    parse_compute_apps,
    parse_proc_devices,
)
from ansible.module_utils.sacctmgr import parse_squeue  # isort: skip
from ansible.module_utils.verdicts import ParseError, ToolFailed  # isort: skip

PROC_DEVICES = [
    ("imex-guide-grep-imex-channels-major-234.txt", 234),
    ("cuda-guide-grep-nvidia-imex-234-nvswitch-509.txt", 234),
    ("lab-host-no-nvidia-driver.txt", None),
]


@pytest.mark.parametrize("name,major", PROC_DEVICES, ids=[name for name, _ in PROC_DEVICES])
def test_the_imex_channel_major_is_read_from_real_outputs(name, major):
    assert imex_channels_major(load("proc_devices", name)) == major


def test_names_are_whole_words_and_block_devices_are_left_out():
    devices = parse_proc_devices(load("proc_devices", "cuda-guide-grep-nvidia-imex-234-nvswitch-509.txt"))
    assert devices == {"nvidia": 195, "nvidiactl": 195, "nvidia-caps-imex-channels": 234, "nvidia-nvswitch": 509}
    lab = parse_proc_devices(load("proc_devices", "lab-host-no-nvidia-driver.txt"))
    assert lab["mem"] == 1 and lab["/dev/vc/0"] == 4
    assert "loop" not in lab and "virtblk" not in lab  # block devices, after "Block devices:"
    # nvidia-caps (MIG's capabilities) is another device: its line never answers for the IMEX one.
    assert imex_channels_major("Character devices:\n511 nvidia-caps\n") is None


@pytest.mark.parametrize("text", ["", "Character devices:\n", "nvidia-smi: command not found\n", "234\n"])
def test_what_is_not_a_device_list_is_refused(text):
    with pytest.raises(ProcDevicesParseError):
        parse_proc_devices(text)


def test_compute_processes_are_read_from_a_real_output():
    apps = parse_compute_apps(load("nvidia-smi_compute_apps", "vgpu-host-3-apps-gpu-uuid-name-dcgm-exporter-94.txt"))
    assert len(apps) == 3
    assert apps[0] == {"gpu_uuid": "GPU-d0180485-9584-433c-6782-c335d5df2cb3", "process_name": "vgpu"}
    # The header alone (no process runs): cut from the real output, not invented.
    header = load("nvidia-smi_compute_apps", "vgpu-host-3-apps-gpu-uuid-name-dcgm-exporter-94.txt").splitlines()[0]
    assert parse_compute_apps(header + "\n") == []


def test_nvidia_smi_that_cannot_reach_the_driver_is_a_failed_run():
    with pytest.raises(ToolFailed, match="NVIDIA-SMI has failed"):
        parse_compute_apps(load("nvidia-smi_query", "driver-not-loaded-nvidia-smi-has-failed.txt"))
    with pytest.raises(ParseError, match="expected the header"):
        parse_compute_apps("pid\n1234\n")


def test_busy_reasons_name_the_jobs_and_processes():
    running = parse_squeue(load("squeue", "bob-sleep-job-running.txt"))
    empty = parse_squeue(load("squeue", "empty-queue.txt"))
    apps = parse_compute_apps(load("nvidia-smi_compute_apps", "vgpu-host-3-apps-gpu-uuid-name-dcgm-exporter-94.txt"))
    assert busy_reasons(running, None) == ["Slurm job 10 (bob) is RUNNING"]
    assert busy_reasons(empty, []) == []
    assert busy_reasons(None, None) == []
    assert busy_reasons(empty, apps[:1]) == ["compute process vgpu on GPU-d0180485-9584-433c-6782-c335d5df2cb3"]
    # A PENDING job (the squeue filter asks for RUNNING and COMPLETING only) does not hold the tray.
    assert busy_reasons([{**running[0], "STATE": "PENDING"}], None) == []
