# Copyright: clusterforge contributors
# Apache License 2.0
"""A tray's IMEX node list: the text `clusterforge topology render` writes to imex/<domain>/nodes_config.cfg."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_imex_nodes_config
short_description: The IMEX nodes_config.cfg of one tray of an NVLink domain, from the topology
description:
  - "Loads the topology file the inventory came from (C(clusterforge_topology_file)) once per process and
    returns the node list of the host's NVLink domain: the same text, byte for byte, that
    C(clusterforge topology render) writes to imex/<domain>/nodes_config.cfg (one renderer,
    clusterforge.topology.render.nvlink, serves both): one in-band address per compute tray."
  - Refuses, naming the topology file and the nvidia_imex_domain field, a domain the topology does not
    have and a host that is not in the domain's node list.
positional: _input, topology_file, domain
options:
  _input:
    description: The host's name in the topology (nvidia_imex_topology_host, inventory_hostname by default).
    type: str
    required: true
  topology_file:
    description: Path of the topology file (clusterforge_topology_file).
    type: path
    required: true
  domain:
    description: The NVLink domain (nvidia_imex_domain; the inventory's clusterforge_nvlink_domain).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Write IMEX's node list
  ansible.builtin.copy:
    content: "{{ inventory_hostname | clusterforge_imex_nodes_config(clusterforge_topology_file, 'nvl01') }}"
    dest: /etc/nvidia-imex/nodes_config.cfg
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The file's text, one address a line.
  type: str
"""


def imex_nodes_config(hostname, topology_file, domain):
    try:
        from clusterforge.topology.for_filters import topology_for_filter
        from clusterforge.topology.render.nvlink import imex_nodes_config as render
    except ImportError as exc:
        raise AnsibleFilterError(f"clusterforge_imex_nodes_config needs the clusterforge package: {exc}") from None
    plan = topology_for_filter("clusterforge_imex_nodes_config", topology_file)
    try:
        return render(plan, str(hostname), str(domain))
    except ValueError as exc:
        raise AnsibleFilterError(
            f"clusterforge_imex_nodes_config: {topology_file}: nvidia_imex_domain: {exc}"
        ) from None


class FilterModule:
    def filters(self):
        return {"clusterforge_imex_nodes_config": imex_nodes_config}
