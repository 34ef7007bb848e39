# Copyright: clusterforge contributors
# Apache License 2.0
"""Slurm's topology.conf from the topology file, for the slurm role."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_slurm_topology_conf
short_description: Slurm topology.conf (topology/tree) for the compute nodes Slurm knows
description:
  - Renders topology.conf from the topology file the inventory came from
    (C(clusterforge_topology_file)) with the same renderer as C(clusterforge topology render),
    keeping only the nodes given (those in slurm.conf), so a topology that plans more compute
    nodes than the inventory has yet never names a node slurmctld does not know.
positional: _input, nodes
options:
  _input:
    description: Path of the topology file (clusterforge_topology_file).
    type: path
    required: true
  nodes:
    description: The Slurm node names (compute hosts) to keep.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Write topology.conf
  ansible.builtin.copy:
    content: "{{ clusterforge_topology_file | clusterforge_slurm_topology_conf(groups['slurm_compute']) }}"
    dest: /etc/slurm/topology.conf
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The text of topology.conf, one SwitchName line per switch.
  type: str
"""


def topology_conf(topology_file, nodes):
    try:
        from clusterforge.topology.for_filters import topology_for_filter
        from clusterforge.topology.render.slurm import topology_conf as render
    except ImportError as exc:
        raise AnsibleFilterError(f"clusterforge_slurm_topology_conf needs the clusterforge package: {exc}") from None
    plan = topology_for_filter("clusterforge_slurm_topology_conf", topology_file)
    return render(plan, {str(node) for node in nodes or ()})


class FilterModule:
    def filters(self):
        return {"clusterforge_slurm_topology_conf": topology_conf}
