# Copyright: clusterforge contributors
# Apache License 2.0
"""The nvidia_driver role's reboot decision, where pytest reaches it.

roles/nvidia_driver/tasks/module.yml asks for a reboot, reboots, or reports the skipped reboot
from this one function's answer; tests/unit/plugins/filter/test_nvidia_driver.py holds it.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_driver_reboot
short_description: Whether a node needs a reboot for the NVIDIA driver, and whether to reboot it now
description:
  - A reboot is needed when nouveau is loaded on a node with NVIDIA GPUs (it holds them), or when
    the loaded nvidia module is another version than the driver now installed (its libraries would
    fail with "Driver/library version mismatch").
  - The reboot happens now only when it is needed, allowed (C(nvidia_driver_allow_reboot)) and
    the node is not a container; otherwise the run summary asks for it (C(clusterforge_reboot_required)).
positional: _input
options:
  _input:
    description: The installed driver's package version (C(nvidia_driver_version)), epoch and Debian revision allowed.
    type: str
    required: true
  gpus:
    description: The node's NVIDIA GPUs (PCI addresses); empty without one.
    type: list
    required: true
  nouveau_loaded:
    description: Whether the nouveau module is loaded.
    type: bool
    required: true
  loaded:
    description: The loaded nvidia module's version, empty when none is loaded.
    type: str
    required: true
  allow:
    description: C(nvidia_driver_allow_reboot).
    type: bool
    required: true
  in_container:
    description: Whether the node is a container (never rebooted).
    type: bool
    required: true
"""

EXAMPLES = r"""
- name: Decide whether the node needs a reboot for the driver
  ansible.builtin.set_fact:
    __nvidia_driver_reboot: >-
      {{ nvidia_driver_version | clusterforge_driver_reboot(gpus=__nvidia_driver_gpus,
         nouveau_loaded=__nvidia_driver_nouveau_loaded, loaded=__nvidia_driver_loaded,
         allow=nvidia_driver_allow_reboot, in_container=__nvidia_driver_in_container) }}
"""

RETURN = r"""
_value:
  description: "C(reasons): why a reboot is needed (empty: none); C(now): reboot in this run;
    C(skipped): the report line when a needed reboot is not done, else empty."
  type: dict
"""


def upstream_version(package_version: str) -> str:
    """550.163.01-2 or 1:550.163.01-2 -> 550.163.01 (epoch and Debian revision dropped)."""
    return re.sub(r"-[^-]*$", "", re.sub(r"^[0-9]+:", "", package_version))


def driver_reboot(installed, gpus, nouveau_loaded, loaded, allow, in_container) -> dict:
    if not isinstance(installed, str) or not installed:
        raise AnsibleFilterError(
            f"clusterforge_driver_reboot: expected the driver's package version, got {installed!r}"
        )
    upstream = upstream_version(installed)
    reasons = []
    if gpus and nouveau_loaded:
        reasons.append("nouveau is loaded and holds the GPUs")
    if loaded and loaded != upstream:
        reasons.append(f"the loaded nvidia module is {loaded}, the installed driver {upstream}")
    now = bool(reasons) and bool(allow) and not in_container
    skipped = ""
    if reasons and not now:
        why = "a container is not rebooted" if in_container else "nvidia_driver_allow_reboot is false"
        skipped = f"skipped: reboot: {'; '.join(reasons)}; {why} (clusterforge_reboot_required is set)"
    return {"reasons": reasons, "now": now, "skipped": skipped}


class FilterModule:
    def filters(self):
        return {"clusterforge_driver_reboot": driver_reboot}
