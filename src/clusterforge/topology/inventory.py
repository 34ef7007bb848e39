"""The Ansible inventory a topology gives: groups per role, site, scalable unit, node
type, leaf and pod, and a few variables per host. The rest (HCA lists, expected GPUs)
lives once per node-type group, so the inventory stays small at 100,000 GPUs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusterforge.topology import ClusterPlan
from clusterforge.topology.fabric import FabricPlan
from clusterforge.topology.hosts import Host
from clusterforge.topology.model import Topology


@dataclass
class InventoryData:
    """Plain data, fed to Ansible by the inventory plugin or dumped as static YAML."""

    all_vars: dict[str, Any] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)  # parent group -> child groups
    group_hosts: dict[str, list[str]] = field(default_factory=dict)
    group_vars: dict[str, dict[str, Any]] = field(default_factory=dict)
    host_vars: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, group: str, host: str, parent: str | None = None) -> None:
        hosts = self.group_hosts.get(group)
        if hosts is None:
            hosts = self.group_hosts[group] = []
            if parent is not None:
                self.children.setdefault(parent, []).append(group)
        hosts.append(host)

    def to_yaml_dict(self) -> dict[str, Any]:
        """The standard YAML inventory structure (what Ansible's yaml plugin reads)."""
        groups: dict[str, dict[str, Any]] = {}
        placed: set[str] = set()  # a host's variables are written once, where it first appears
        for name in [*self.group_hosts, *self.children, *self.group_vars]:
            if name in groups:
                continue
            entry: dict[str, Any] = {}
            if name in self.group_vars:
                entry["vars"] = self.group_vars[name]
            if name in self.group_hosts:
                entry["hosts"] = {}
                for host in self.group_hosts[name]:
                    entry["hosts"][host] = None if host in placed else (self.host_vars.get(host) or None)
                    placed.add(host)
            groups[name] = entry
        nested = {child for kids in self.children.values() for child in kids}
        for parent, kids in self.children.items():
            groups[parent]["children"] = {kid: groups[kid] for kid in kids}
        top = {name: groups[name] for name in sorted(groups) if name not in nested}
        return {"all": {"vars": self.all_vars, "children": top}}


def group_name(*parts: str | int) -> str:
    """Ansible group names are identifiers: switch names like compute-su1-r1-leaf1 become
    compute_su1_r1_leaf1."""
    return "_".join(str(part) for part in parts).replace("-", "_").replace(".", "_")


def build(plan: ClusterPlan) -> InventoryData:
    topology = plan.topology
    data = InventoryData()
    data.all_vars = {
        "clusterforge_cluster": topology.cluster.name,
        "clusterforge_domain": topology.cluster.domain,
        "clusterforge_topology_file": str(plan.path.resolve()),
        **topology.ansible.vars,
    }
    for type_name in topology.node_types:
        data.group_vars[group_name("type", type_name)] = _node_type_vars(plan, type_name)
    # A role has one node type and one site, so site and node-type groups hold role groups,
    # and a unit's number is a variable of its group: fewer per-host entries for Ansible.
    # No umbrella groups (all sites, all units): each group above a host costs Ansible work
    # for every host on every task.
    for role_name, role in topology.roles.items():
        site = role.site or topology.sites[0].name
        for group in (group_name("site", site), group_name("type", role.node_type)):
            data.children.setdefault(group, []).append(role_name)
    fabrics = {name: plan.fabrics[name] for name in leaf_group_fabrics(topology)}
    pods = {name: _leaf_group_pods(name, fabric) for name, fabric in fabrics.items()}
    host_template = topology.ansible.host
    for host in plan.hosts:
        data.add(host.role, host.name)
        if host.unit:
            unit_group = f"su{host.unit}"
            if unit_group not in data.group_vars:
                data.group_vars[unit_group] = {"clusterforge_unit": host.unit}
            data.add(unit_group, host.name)
        data.host_vars[host.name] = _host_vars(plan, host, host_template)
        for fabric_name, fabric in fabrics.items():
            for leaf_group in _leaf_groups(fabric_name, fabric, host):
                if leaf_group not in data.group_hosts:
                    _add_leaf_group(data, leaf_group, group_name("fabric", fabric_name), pods[fabric_name])
                data.add(leaf_group, host.name)
    return data


def leaf_group_fabrics(topology: Topology) -> list[str]:
    """The fabrics that get fabric, leaf and pod groups (ansible.leaf_groups)."""
    if topology.ansible.leaf_groups is not None:
        return list(topology.ansible.leaf_groups)
    return [name for name, fabric in topology.fabrics.items() if fabric.purpose in ("compute", "storage")]


def _add_leaf_group(data: InventoryData, leaf_group: str, fabric_group: str, pods: dict[str, str]) -> None:
    """A leaf group goes under its pod on three-tier fabrics, else under the fabric's group.
    Pods hold leaf groups, not hosts: fewer memberships for Ansible to track."""
    pod_group = pods.get(leaf_group)
    if pod_group is None:
        data.children.setdefault(fabric_group, []).append(leaf_group)
        return
    if pod_group not in data.children:
        data.children.setdefault(fabric_group, []).append(pod_group)
    data.children.setdefault(pod_group, []).append(leaf_group)


def _leaf_groups(fabric_name: str, fabric: FabricPlan, host: Host) -> list[str]:
    leaves = fabric.attachments.get(host.name)
    if not leaves:
        return []
    if fabric.spec.topology == "rail_optimized_fat_tree":
        # Every node of a unit shares that unit's rail leaves: one group per unit's leaf
        # set, not one per rail, keeps the group count linear.
        return [group_name(fabric_name, f"su{host.unit or 0}", "leaves")]
    return [group_name(leaf) for leaf in leaves]


def _leaf_group_pods(fabric_name: str, fabric: FabricPlan) -> dict[str, str]:
    """Leaf group -> pod group, for fabrics with a third tier."""
    pods: dict[str, str] = {}
    for leaf, pod in fabric.leaf_pods.items():
        switch_unit = leaf.split("-")[1]
        if fabric.spec.topology == "rail_optimized_fat_tree":
            unit = switch_unit.removeprefix("su") if switch_unit != "svc" else "0"
            pods.setdefault(group_name(fabric_name, f"su{unit}", "leaves"), group_name(fabric_name, "pod", pod))
        else:
            pods[group_name(leaf)] = group_name(fabric_name, "pod", pod)
    return pods


def _host_vars(plan: ClusterPlan, host: Host, template: str) -> dict[str, Any]:
    # IPoIB addresses (one per rail) are derived with the clusterforge_topology_host filter.
    addresses = plan.interface_addresses(host)
    found: dict[str, Any] = {
        "ansible_host": template.format(name=host.name, **addresses),
        "clusterforge_index": host.index,
    }
    for name, value in addresses.items():
        found[f"clusterforge_{name}_address"] = value
    return found


def _node_type_vars(plan: ClusterPlan, type_name: str) -> dict[str, Any]:
    """What the checks expect of every node of this type. HCA details (netdev, PCI address,
    NUMA node, nearest GPU) stay in the topology file; roles derive them with the
    clusterforge filters, so they are not repeated for every host of a large cluster."""
    node_type = plan.topology.node_types[type_name]
    gpu = node_type.gpu
    return {
        "clusterforge_node_type": type_name,
        "clusterforge_expected_gpus": gpu.count if gpu else 0,
        "clusterforge_expected_hca_rates": {hca.device: hca.rate_gbps for hca in node_type.hcas},
    }
