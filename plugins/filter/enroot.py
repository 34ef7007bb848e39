# Copyright: clusterforge contributors
# Apache License 2.0
"""The enroot role's decisions, where pytest reaches them: where Enroot keeps its images, whether
the kernel lets it run, and which of its hardware hooks a node gets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_enroot_storage
short_description: The directory Enroot keeps image layers and container file systems under
description:
  - "Input: the node's mounts (ansible_facts mounts: dicts with C(mount))."
  - "O(setting) an absolute path is used as it is; C(auto) is C(<tier>/enroot) when the local NVMe
    hot tier is mounted at O(tier), else C(/var/lib/enroot)."
  - "Returns C({dir, on_local_tier})."
positional: _input, setting, tier
options:
  _input: {type: list, required: true}
  setting: {type: str, required: true}
  tier: {type: str, required: true}
"""

EXAMPLES = r"""
__enroot_storage: "{{ ansible_facts['mounts'] | clusterforge_enroot_storage('auto', '/raid') }}"
"""

RETURN = r"""
_value:
  description: "{dir: the storage directory, on_local_tier: whether it is on the local NVMe tier}"
  type: dict
"""

# Without a local tier: a node's disk, which survives a reboot (a pulled image is not pulled again).
FALLBACK_STORAGE = "/var/lib/enroot"

# Enroot's own requirements (its enroot-check script): user namespaces for unprivileged
# containers, overlay for the read-only images it mounts.
MAX_USERNS = "/proc/sys/user/max_user_namespaces"
USERNS_CLONE = "/proc/sys/kernel/unprivileged_userns_clone"
FILESYSTEMS = "/proc/filesystems"


def enroot_storage(mounts: Sequence[Mapping], setting: str, tier: str) -> dict:
    if not isinstance(setting, str) or not setting:
        raise AnsibleFilterError(f'enroot_storage_dir is "{setting}", expected "auto" or an absolute path')
    if setting != "auto":
        if not setting.startswith("/"):
            raise AnsibleFilterError(f'enroot_storage_dir is "{setting}", expected "auto" or an absolute path')
        return {"dir": setting, "on_local_tier": False}
    tier = tier.rstrip("/") or "/"
    mounted = any(isinstance(m, Mapping) and m.get("mount") == tier for m in mounts or [])
    if mounted and tier != "/":
        return {"dir": f"{tier}/enroot", "on_local_tier": True}
    return {"dir": FALLBACK_STORAGE, "on_local_tier": False}


def enroot_kernel_problems(
    filesystems: str, max_user_namespaces: str, unprivileged_userns_clone: str = ""
) -> list[str]:
    """One message per missing prerequisite, naming the kernel setting and what Enroot needs.
    unprivileged_userns_clone is "" where the kernel has no such switch (mainline: only Debian's
    and Ubuntu's patched kernels have it)."""
    problems = []
    value = (max_user_namespaces or "").strip()
    if not value.isdigit():
        problems.append(f'{MAX_USERNS} is "{value}", expected a number (is this a Linux kernel with user namespaces?)')
    elif int(value) == 0:
        problems.append(
            f"{MAX_USERNS} is 0: user namespaces are disabled, Enroot cannot start unprivileged containers"
            " (set user.max_user_namespaces above 0)"
        )
    clone = (unprivileged_userns_clone or "").strip()
    if clone and clone != "1":
        problems.append(
            f"{USERNS_CLONE} is {clone}: unprivileged users cannot create user namespaces"
            " (set kernel.unprivileged_userns_clone = 1)"
        )
    names = {line.split()[-1] for line in (filesystems or "").splitlines() if line.split()}
    if "overlay" not in names:
        problems.append(f"{FILESYSTEMS} lists no overlay: load the overlay module (modprobe overlay)")
    return problems


def enroot_hooks(groups: Sequence[str], gpu: object, mellanox: object) -> dict:
    """{gpu: bool, mellanox: bool}: "auto" follows the host's capability groups (the inventory's
    answer to whether a node has GPUs or HCAs); true/false force a hook on or off."""

    def decide(name: str, setting: object, wanted: set[str]) -> bool:
        if isinstance(setting, bool):
            return setting
        if setting == "auto":
            return bool(wanted & set(groups or []))
        text = str(setting).lower()
        if text in {"true", "yes", "1"}:
            return True
        if text in {"false", "no", "0"}:
            return False
        raise AnsibleFilterError(f'enroot_{name}_hook is "{setting}", expected auto, true or false')

    return {"gpu": decide("gpu", gpu, {"gpu"}), "mellanox": decide("mellanox", mellanox, {"infiniband", "roce"})}


class FilterModule:
    def filters(self):
        return {
            "clusterforge_enroot_storage": enroot_storage,
            "clusterforge_enroot_kernel_problems": enroot_kernel_problems,
            "clusterforge_enroot_hooks": enroot_hooks,
        }
