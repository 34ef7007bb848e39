# Copyright: clusterforge contributors
# Apache License 2.0
"""What kind of machine a node is, worked out once from its facts.

playbooks/preflight.yml sets clusterforge_in_container with this filter; a role run alone
(Molecule, a single stage) falls back to the same filter, so the detection lives only here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_in_container
short_description: Whether a node is a container, from its gathered facts
description:
  - "True when the node's virtualization facts name a container technology. ansible-core's
    Linux virtual facts read every signal this needs: docker, lxc and containerd in
    C(/proc/1/cgroup), C(container=) in PID 1's environment (systemd in Docker or Podman,
    lxc), C(/run/systemd/container) (systemd-nspawn and every container systemd recognises),
    C(/.dockerenv) and OpenVZ's C(/proc/vz). Any of them puts C(container) in
    C(virtualization_tech_guest); older facts only set C(virtualization_type) and
    C(virtualization_role), which are read too."
  - A virtual machine (kvm, VMware, ...) is not a container; a container inside a virtual
    machine is.
  - Needs the C(virtual) fact subset (and root, for PID 1's environment).
positional: _input
options:
  _input:
    description: The node's facts (ansible_facts).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Note whether the node is a container
  ansible.builtin.set_fact:
    clusterforge_in_container: "{{ ansible_facts | clusterforge_in_container }}"
"""

RETURN = r"""
_value:
  description: True on a container, false on bare metal or a virtual machine.
  type: bool
"""

# virtualization_type values ansible-core gives containers (and systemd's names in /run/systemd/container).
CONTAINER_TYPES = frozenset(
    {"container", "docker", "podman", "containerd", "lxc", "lxc-libvirt", "openvz", "systemd-nspawn", "wsl", "rkt"}
)


def in_container(facts: Mapping) -> bool:
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(f"clusterforge_in_container expects ansible_facts, got {type(facts).__name__}")
    if "virtualization_type" not in facts and "virtualization_tech_guest" not in facts:
        raise AnsibleFilterError(
            "clusterforge_in_container needs the virtualization facts: gather the 'virtual' subset first"
        )
    if "container" in (facts.get("virtualization_tech_guest") or []):
        return True
    return facts.get("virtualization_role") == "guest" and facts.get("virtualization_type") in CONTAINER_TYPES


class FilterModule:
    def filters(self):
        return {"clusterforge_in_container": in_container}
