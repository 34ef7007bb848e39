"""What the nvidia_imex role reads on a tray: the IMEX channel device's major in /proc/devices, the GPUs'
compute processes (`nvidia-smi --query-compute-apps=gpu_uuid,name --format=csv`), and whether a job
holds back an IMEX restart (Slurm's `squeue` rows, read by sacctmgr.parse_squeue, and those processes).

Stdlib only: Ansible ships this file to the nodes as ``ansible.module_utils.imex_node``.
"""

from __future__ import annotations

import re

from ansible.module_utils.nvidia_smi import NVML_FAILED
from ansible.module_utils.verdicts import ParseError, raise_if_failed

# The character device the driver registers for IMEX channels (NVIDIA IMEX guide, "IMEX Channels"),
# its nodes' directory, and the node of channel N: /dev/nvidia-caps-imex-channels/channel<N>, minor N.
IMEX_CHANNELS_DEVICE = "nvidia-caps-imex-channels"
IMEX_CHANNELS_DIR = "/dev/nvidia-caps-imex-channels"
# The driver's default number of channels (NVreg_ImexChannelCount): minors 0..2047.
IMEX_CHANNELS_MAX = 2048

# squeue's states of a job that still holds the node (a COMPLETING job's processes may still run).
BUSY_STATES = ("RUNNING", "COMPLETING")
COMPUTE_APPS_QUERY = "--query-compute-apps=gpu_uuid,name"
COMPUTE_APPS_HEADER = ("gpu_uuid", "process_name")

_SECTION = re.compile(r"^(Character|Block) devices:$")
_DEVICE = re.compile(r"^\s*(\d{1,4}) (\S.*)$")


class ProcDevicesParseError(ParseError):
    pass


def parse_proc_devices(text: str, source: str = "/proc/devices") -> dict[str, int]:
    """Character device name -> major, from /proc/devices or the `<major> <name>` lines grep keeps of
    it. The names are matched whole, never as a prefix: nvidia-caps and nvidia-caps-imex-channels are
    two devices with two majors. Lines after "Block devices:" are block devices and are left out."""
    devices: dict[str, int] = {}
    seen = False
    for number, line in enumerate(text.replace("\r", "").split("\n"), start=1):
        if not line.strip():
            continue
        section = _SECTION.match(line.strip())
        if section:
            if section.group(1) == "Block":
                break
            continue
        match = _DEVICE.match(line)
        if not match:
            raise ProcDevicesParseError("expected '<major> <name>' lines", source=source, line=number, text=line)
        seen = True
        devices.setdefault(match.group(2).strip(), int(match.group(1)))
    if not seen:
        raise ProcDevicesParseError("no character device listed", source=source)
    return devices


def imex_channels_major(text: str, source: str = "/proc/devices") -> int | None:
    """The major of nvidia-caps-imex-channels, or None where the loaded driver did not register it."""
    return parse_proc_devices(text, source).get(IMEX_CHANNELS_DEVICE)


def parse_compute_apps(text: str, source: str = "nvidia-smi " + COMPUTE_APPS_QUERY) -> list[dict[str, str]]:
    """The GPUs' compute processes as {gpu_uuid, process_name}; [] where none runs. nvidia-smi's own
    failure ("NVIDIA-SMI has failed ...") raises ToolFailed: nobody can tell whether a process runs."""
    raise_if_failed(text, NVML_FAILED, source, "nvidia-smi failed")
    lines = [line for line in text.replace("\r", "").split("\n") if line.strip()]
    if not lines:
        raise ParseError(f"empty output, expected the header {', '.join(COMPUTE_APPS_HEADER)}", source=source)
    if tuple(field.strip() for field in lines[0].split(",")) != COMPUTE_APPS_HEADER:
        raise ParseError(f"expected the header {', '.join(COMPUTE_APPS_HEADER)}", source=source, line=1, text=lines[0])
    apps = []
    for number, line in enumerate(lines[1:], start=2):
        values = [value.strip() for value in line.split(",", 1)]
        if len(values) != 2 or not values[0].startswith("GPU-"):
            raise ParseError("expected '<gpu_uuid>, <process_name>'", source=source, line=number, text=line)
        apps.append(dict(zip(COMPUTE_APPS_HEADER, values)))  # noqa: B905 (3.8 nodes; length checked above)
    return apps


def busy_reasons(jobs: list[dict[str, str]] | None, apps: list[dict[str, str]] | None) -> list[str]:
    """Why the tray is busy (empty: idle): Slurm jobs that still hold it (squeue rows, any state of
    BUSY_STATES) and the GPUs' compute processes. None for a source that was not asked."""
    reasons = [
        f"Slurm job {job['JOBID']} ({job['USER']}) is {job['STATE']}"
        for job in jobs or []
        if job.get("STATE") in BUSY_STATES
    ]
    reasons += [f"compute process {app['process_name']} on {app['gpu_uuid']}" for app in apps or []]
    return reasons
