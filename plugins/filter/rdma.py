# Copyright: clusterforge contributors
# Apache License 2.0
"""The rdma role's reboot decision for DOCA-OFED's kernel modules, where pytest reaches it.

roles/rdma/tasks/doca.yml asks for a reboot, reboots, or reports the skipped reboot from this one
function's answer; tests/unit/plugins/filter/test_rdma.py holds it.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_rdma_reboot
short_description: Whether a node needs a reboot for DOCA-OFED's kernel modules, and whether to reboot it now
description:
  - "DOCA-OFED's kernel part (mlnx-ofed-kernel-dkms) is built by DKMS into the module tree; the
    running kernel keeps the mlx5_core it loaded until the driver stack is reloaded or the node
    reboots. Nothing loaded: nothing to do (the next load takes the new module)."
  - A reboot is needed when mlx5_core is loaded and its version (C(/sys/module/mlx5_core/version);
    none for the kernel's own driver) is not the version of the module DKMS built for the kernel
    (C(modinfo -F version)); or, where that built module cannot be read, when DOCA-OFED's packages
    changed in this run while mlx5_core is loaded.
  - The reboot happens now only when it is needed, allowed (C(rdma_allow_reboot)) and the node is
    not a container; otherwise the run summary asks for it (C(clusterforge_reboot_required)).
positional: _input
options:
  _input:
    description: The version of the mlx5_core module DKMS built for the kernel; empty when it cannot be read.
    type: str
    required: true
  loaded:
    description: Whether mlx5_core is loaded (C(/sys/module/mlx5_core) exists).
    type: bool
    required: true
  loaded_version:
    description: The loaded mlx5_core's version; empty for the kernel's own driver, which has none.
    type: str
    required: true
  changed:
    description: Whether this run installed or moved DOCA-OFED's packages.
    type: bool
    required: true
  allow:
    description: C(rdma_allow_reboot).
    type: bool
    required: true
  in_container:
    description: Whether the node is a container (never rebooted).
    type: bool
    required: true
"""

EXAMPLES = r"""
- name: Decide whether the node needs a reboot for DOCA-OFED's kernel modules
  ansible.builtin.set_fact:
    __rdma_doca_reboot: >-
      {{ __rdma_doca_probe.built | clusterforge_rdma_reboot(loaded=__rdma_doca_probe.loaded,
         loaded_version=__rdma_doca_probe.loaded_version, changed=apt_vendor_repository_install_result is changed,
         allow=rdma_allow_reboot, in_container=__rdma_in_container) }}
"""

RETURN = r"""
_value:
  description: "C(reasons): why a reboot is needed (empty: none); C(now): reboot in this run;
    C(skipped): the report line when a needed reboot is not done, else empty."
  type: dict
"""


def rdma_reboot(built, loaded, loaded_version, changed, allow, in_container) -> dict:
    for name, value in (("the built module's version", built), ("loaded_version", loaded_version)):
        if not isinstance(value, str):
            raise AnsibleFilterError(f"clusterforge_rdma_reboot: expected {name} as a string, got {value!r}")
    running = loaded_version or "the kernel's own (no version)"
    reasons = []
    if loaded and built and loaded_version != built:
        reasons.append(f"the loaded mlx5_core is {running}, DOCA-OFED's built module {built}")
    elif loaded and not built and changed:
        reasons.append(f"DOCA-OFED's packages changed while mlx5_core {running} is loaded")
    now = bool(reasons) and bool(allow) and not in_container
    skipped = ""
    if reasons and not now:
        why = "a container is not rebooted" if in_container else "rdma_allow_reboot is false"
        skipped = f"skipped: reboot: {'; '.join(reasons)}; {why} (clusterforge_reboot_required is set)"
    return {"reasons": reasons, "now": now, "skipped": skipped}


class FilterModule:
    def filters(self):
        return {"clusterforge_rdma_reboot": rdma_reboot}
