"""A static YAML inventory, for sites that want the inventory in version control or run
Ansible without clusterforge installed. Same content as the inventory plugin gives."""

from __future__ import annotations

from clusterforge.topology import ClusterPlan
from clusterforge.topology.inventory import build
from clusterforge.topology.render.common import dump_yaml, generated_by


def inventory_yaml(plan: ClusterPlan) -> str:
    document = build(plan).to_yaml_dict()  # each group and each host's variables once
    header = f"# Ansible inventory for cluster {plan.topology.cluster.name}, {generated_by(plan)}\n"
    return header + dump_yaml(document)


def files(plan: ClusterPlan) -> dict[str, str]:
    return {"inventory/hosts.yml": inventory_yaml(plan)}
