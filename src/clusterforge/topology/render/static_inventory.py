"""A static YAML inventory, for sites that want the inventory in version control or run
Ansible without clusterforge installed. Same content as the inventory plugin gives."""

from __future__ import annotations

from clusterforge.topology import ClusterPlan
from clusterforge.topology.inventory import PLAIN_DATA, build
from clusterforge.topology.render.common import PlainData, dump_yaml, generated_by


def inventory_yaml(plan: ClusterPlan) -> str:
    data = build(plan)
    # Marked only when they could hold a template, so that the usual file reads as plain YAML.
    for name in PLAIN_DATA:
        if "{" in data.all_vars[name]:
            data.all_vars[name] = PlainData(data.all_vars[name])
    document = data.to_yaml_dict()  # each group and each host's variables once
    header = f"# Ansible inventory for cluster {plan.topology.cluster.name}, {generated_by(plan)}\n"
    return header + dump_yaml(document)


def files(plan: ClusterPlan) -> dict[str, str]:
    return {"inventory/hosts.yml": inventory_yaml(plan)}
