#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: imex_channels
short_description: Create the IMEX channel device nodes /dev/nvidia-caps-imex-channels/channel<N>
description:
  - "NVIDIA IMEX guide, \"IMEX Channels\": the driver registers the character device
    C(nvidia-caps-imex-channels) but creates no nodes; the administrator makes
    C(/dev/nvidia-caps-imex-channels/channel<N>) with the major from C(/proc/devices) and minor N."
  - "Creates channel0 to channel<count-1> (mode O(mode), owner root), with the major read from
    O(proc_devices). A node of another type, major, minor or mode is replaced; other nodes in the
    directory are left alone. A second run changes nothing; check mode reports and makes nothing."
  - "Where the driver is not loaded (O(driver_loaded) false), or the loaded driver registers no
    C(nvidia-caps-imex-channels), nothing is made and C(msg) says C(skipped: no hardware ...)."
  - Device nodes do not survive a reboot; the driver's C(NVreg_CreateImexChannel0=1) recreates channel0 at load.
options:
  count:
    description: How many channels (channel0 to channel<count-1>); 0 makes none.
    type: int
    required: true
  driver_loaded:
    description: Whether the NVIDIA kernel driver is loaded (the caller's probe).
    type: bool
    required: true
  proc_devices:
    description: The kernel's list of device majors.
    type: path
    default: /proc/devices
  directory:
    description: Where the nodes are made (the driver's name for it).
    type: path
    default: /dev/nvidia-caps-imex-channels
  mode:
    description: The nodes' mode (the guide's are C(0666), crw-rw-rw-).
    type: str
    default: "0666"
"""

EXAMPLES = r"""
- name: Create IMEX channel0
  imex_channels:
    count: 1
    driver_loaded: true
"""

RETURN = r"""
major:
  description: The major of nvidia-caps-imex-channels; null where it was not read.
  returned: always
  type: int
channels:
  description: The nodes wanted (paths).
  returned: always
  type: list
made:
  description: The nodes made or replaced (or that check mode would make).
  returned: always
  type: list
msg:
  description: "What was done, or C(skipped: no hardware (...)) with the reason."
  returned: always
  type: str
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.imex_node import (
    IMEX_CHANNELS_DEVICE,
    IMEX_CHANNELS_MAX,
    ProcDevicesParseError,
    imex_channels_major,
)


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            count=dict(type="int", required=True),
            driver_loaded=dict(type="bool", required=True),
            proc_devices=dict(type="path", default="/proc/devices"),
            directory=dict(type="path", default="/dev/nvidia-caps-imex-channels"),
            mode=dict(type="str", default="0666"),
        ),
        supports_check_mode=True,
    )


def wanted_nodes(directory: str, major: int, count: int) -> list:
    """(path, device number) of channel0 .. channel<count-1>."""
    return [(os.path.join(directory, f"channel{minor}"), os.makedev(major, minor)) for minor in range(count)]


def differs(path: str, device: int, mode: int) -> bool:
    """True unless `path` is the character device `device` with permission bits `mode`."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    return not (stat.S_ISCHR(info.st_mode) and info.st_rdev == device and stat.S_IMODE(info.st_mode) == mode)


def make(module, path: str, device: int, mode: int) -> None:
    try:
        if os.path.lexists(path):
            os.unlink(path)
        os.mknod(path, stat.S_IFCHR | mode, device)
        os.chmod(path, mode)  # mknod applies the umask
    except OSError as exc:
        module.fail_json(msg=f"making {path} (character device {os.major(device)}:{os.minor(device)}) failed: {exc}")


def main() -> None:
    module = build_module()
    params = module.params
    count, directory = params["count"], params["directory"]
    if not 0 <= count <= IMEX_CHANNELS_MAX:
        module.fail_json(msg=f"count: expected 0 to {IMEX_CHANNELS_MAX} (the driver's channels), got {count}")
    try:
        mode = int(params["mode"], 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777:
        module.fail_json(msg=f"mode: expected an octal permission such as '0666', got {params['mode']!r}")
    result = {"changed": False, "major": None, "channels": [], "made": []}
    if count == 0:
        module.exit_json(msg="no IMEX channels asked for (count 0)", **result)
    if not params["driver_loaded"]:
        module.exit_json(msg="skipped: no hardware (the NVIDIA driver is not loaded): no IMEX channel made", **result)
    try:
        with open(params["proc_devices"], encoding="ascii", errors="replace") as handle:
            major = imex_channels_major(handle.read(), params["proc_devices"])
    except (OSError, ProcDevicesParseError) as exc:
        module.fail_json(msg=f"reading the IMEX channel device's major: {exc}")
    if major is None:
        module.exit_json(
            msg=f"skipped: no hardware (the loaded driver registers no {IMEX_CHANNELS_DEVICE} in "
            f"{params['proc_devices']}): no IMEX channel made",
            **result,
        )
    nodes = wanted_nodes(directory, major, count)
    made = [path for path, device in nodes if differs(path, device, mode)]
    if made and not module.check_mode:
        try:
            os.makedirs(directory, mode=0o755, exist_ok=True)
        except OSError as exc:
            module.fail_json(msg=f"making {directory} failed: {exc}")
        for path, device in nodes:
            if path in made:
                make(module, path, device, mode)
    module.exit_json(
        changed=bool(made),
        major=major,
        channels=[path for path, _ in nodes],
        made=made,
        msg=f"{len(made)} of {count} IMEX channel node(s) made (major {major})",
    )


if __name__ == "__main__":
    main()
