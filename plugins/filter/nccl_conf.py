# Copyright: clusterforge contributors
# Apache License 2.0
"""A GPU node's /etc/nccl.conf: the text `clusterforge topology render` writes to nccl/<node type>.env."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_nccl_conf
short_description: The NCCL settings file of one host, from the topology
description:
  - "Loads the topology file the inventory came from (C(clusterforge_topology_file)) once per process and
    returns the host's NCCL settings in NCCL's config-file syntax: the same text, byte for byte, that
    C(clusterforge topology render) writes to nccl/<node type>.env (one renderer,
    clusterforge.topology.render.nccl, serves both), so /etc/nccl.conf holds the topology's settings."
  - Null when the host's node type has no GPU or no HCA on the GPU fabric (no settings are rendered for it).
positional: _input, topology_file
options:
  _input:
    description: The host name (inventory_hostname).
    type: str
    required: true
  topology_file:
    description: Path of the topology file (clusterforge_topology_file).
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Write NCCL's settings
  ansible.builtin.copy:
    content: "{{ inventory_hostname | clusterforge_nccl_conf(clusterforge_topology_file) }}"
    dest: /etc/nccl.conf
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The file's text (NAME=value lines after comment lines), or null.
  type: str
"""


def nccl_conf(hostname, topology_file):
    try:
        from clusterforge.topology.for_filters import topology_for_filter
        from clusterforge.topology.render.nccl import env_file
    except ImportError as exc:
        raise AnsibleFilterError(f"clusterforge_nccl_conf needs the clusterforge package: {exc}") from None
    plan = topology_for_filter("clusterforge_nccl_conf", topology_file)
    try:
        host = plan.host(hostname)
    except KeyError:
        raise AnsibleFilterError(f"clusterforge_nccl_conf: {hostname} is not in {topology_file}") from None
    return env_file(plan, host.node_type)


class FilterModule:
    def filters(self):
        return {"clusterforge_nccl_conf": nccl_conf}
