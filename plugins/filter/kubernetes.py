# Copyright: clusterforge contributors
# Apache License 2.0
"""The Kubernetes node labels the topology gives a host: the same labels
`clusterforge topology render` writes to kubernetes/node-labels.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_k8s_node_labels
short_description: The topology's Kubernetes node labels of one host
description:
  - Loads the topology file the inventory came from (C(clusterforge_topology_file)) once per
    process and returns the host's labels under the topology's C(label_prefix) (cluster, site,
    role, node type, unit, and its place on the GPU fabric), as C(clusterforge topology render)
    writes them to C(kubernetes/node-labels.yml).
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
- name: Show the node's topology labels
  ansible.builtin.debug:
    msg: "{{ inventory_hostname | clusterforge_k8s_node_labels(clusterforge_topology_file) }}"
"""

RETURN = r"""
_value:
  description: label -> value.
  type: dict
"""


def k8s_node_labels(hostname, topology_file):
    try:
        from clusterforge.topology.for_filters import topology_for_filter
        from clusterforge.topology.render.k8s_labels import LabelError, labels
    except ImportError as exc:
        raise AnsibleFilterError(f"clusterforge_k8s_node_labels needs the clusterforge package: {exc}") from None
    plan = topology_for_filter("clusterforge_k8s_node_labels", topology_file)
    try:
        found = labels(plan)
    except LabelError as exc:
        raise AnsibleFilterError(f"clusterforge_k8s_node_labels: {exc}") from None
    if hostname not in found:
        raise AnsibleFilterError(f"clusterforge_k8s_node_labels: {hostname} is not in {topology_file}")
    return dict(found[hostname])


class FilterModule:
    def filters(self):
        return {"clusterforge_k8s_node_labels": k8s_node_labels}
