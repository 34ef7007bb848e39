"""A static YAML inventory, for sites that want the inventory in version control or run
Ansible without clusterforge installed. Same content as the inventory plugin gives."""

from __future__ import annotations

from clusterforge.topology import ClusterPlan
from clusterforge.topology.inventory import build
from clusterforge.topology.render.common import PlainData, dump_yaml, generated_by


def inventory_yaml(plan: ClusterPlan) -> str:
    data = build(plan)
    # The path is not the file's content: a directory named "{{ ... }}" must stay text for the yaml plugin.
    path = data.all_vars["clusterforge_topology_file"]
    if "{" in path:
        data.all_vars["clusterforge_topology_file"] = PlainData(path)
    document = data.to_yaml_dict()  # each group and each host's variables once
    header = f"# Ansible inventory for cluster {plan.topology.cluster.name}, {generated_by(plan)}\n"
    return header + dump_yaml(document)


def files(plan: ClusterPlan) -> dict[str, str]:
    return {"inventory/hosts.yml": inventory_yaml(plan)}
