"""A static YAML inventory, for sites that want the inventory in version control or run
Ansible without clusterforge installed. Same content as the inventory plugin gives."""

from __future__ import annotations

from typing import Any

from clusterforge.topology import ClusterPlan
from clusterforge.topology.inventory import build
from clusterforge.topology.render.common import dump_yaml, generated_by


def _vars_once(node: dict[str, Any], seen: set[str]) -> None:
    """Keep each host's variables at its first appearance only. Ansible merges a host's
    variables from every group it is listed in, so repeating them changes nothing but size."""
    hosts = node.get("hosts")
    if hosts:
        for host, host_vars in hosts.items():
            if host in seen:
                hosts[host] = None
            elif host_vars:
                seen.add(host)
    for child in (node.get("children") or {}).values():
        _vars_once(child, seen)


def _copy(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _copy(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_copy(value) for value in node]
    return node


def inventory_yaml(plan: ClusterPlan) -> str:
    document = _copy(build(plan).to_yaml_dict())  # a private copy: _vars_once edits it
    _vars_once(document["all"], set())
    header = f"# Ansible inventory for cluster {plan.topology.cluster.name}, {generated_by(plan)}\n"
    return header + dump_yaml(document)


def files(plan: ClusterPlan) -> dict[str, str]:
    return {"inventory/hosts.yml": inventory_yaml(plan)}
