"""The Ansible inventory a topology gives: groups per role, site, scalable unit, node
type, leaf and pod, the capability and orchestrator groups roles target (names in
clusterforge.topology.groups), and a few variables per host. The rest (what the checks
expect of a node) lives once per node-type group, so the inventory stays small at 100,000 GPUs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusterforge.topology import ClusterPlan, groups, nvlink
from clusterforge.topology.fabric import FabricPlan, Switch
from clusterforge.topology.hosts import Host
from clusterforge.topology.model import Topology

# Variables that do not come from the file's content, unlike every other: Ansible must never
# template them (a directory named "{{ lookup('pipe', ...) }}" would run on the controller).
PLAIN_DATA = frozenset({"clusterforge_topology_file"})


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

    def group_names(self) -> list[str]:
        """Every group, in order of first mention: with children, hosts or variables, or only
        named as a child (the group of a role with no hosts, count 0)."""
        named = [*self.children, *(kid for kids in self.children.values() for kid in kids)]
        return list(dict.fromkeys([*named, *self.group_hosts, *self.group_vars]))

    def to_yaml_dict(self) -> dict[str, Any]:
        """The standard YAML inventory structure (what Ansible's yaml plugin reads). Each group is
        written out once, where it first appears; under its other parents it is named only (the
        yaml plugin joins a group's mentions), and each host's variables come with its first listing."""
        written: set[str] = set()
        placed: set[str] = set()

        def entry(name: str) -> dict[str, Any] | None:
            if name in written:
                return None
            written.add(name)
            found: dict[str, Any] = {}
            if name in self.group_vars:
                found["vars"] = self.group_vars[name]
            if name in self.group_hosts:
                found["hosts"] = {}
                for host in self.group_hosts[name]:
                    found["hosts"][host] = None if host in placed else (self.host_vars.get(host) or None)
                    placed.add(host)
            if self.children.get(name):
                found["children"] = {kid: entry(kid) for kid in self.children[name]}
            return found

        nested = {child for kids in self.children.values() for child in kids}
        top = {name: entry(name) for name in sorted(self.group_names()) if name not in nested}
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
    # Capability and orchestrator groups hold node-type and role groups, not hosts, and exist
    # even when empty, so a play can target them on any cluster.
    for capability in groups.CAPABILITY_GROUPS:
        data.children[capability] = []
    for type_name in topology.node_types:
        for capability in capabilities(plan, type_name):
            data.children[capability].append(group_name("type", type_name))
    for orchestrator_group, roles in orchestrator_groups(topology).items():
        data.children[orchestrator_group] = [role for role in roles if role in topology.roles]
    data.children[groups.GPU_SOFTWARE] = [role for role in topology.ansible.gpu_software if role in topology.roles]
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
    switches = {name: {switch.name: switch for switch in fabric.switches} for name, fabric in fabrics.items()}
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
            for leaf_group in _leaf_groups(fabric_name, fabric, switches[fabric_name], host):
                if leaf_group not in data.group_hosts:
                    _add_leaf_group(data, leaf_group, group_name("fabric", fabric_name), pods[fabric_name])
                data.add(leaf_group, host.name)
    # One group per NVLink domain (named as the rendered IMEX files and Slurm blocks name it), under
    # nvlink_domain, which exists even when empty so that a play can target it on any cluster.
    data.children[groups.NVLINK_DOMAIN] = []
    for domain, trays in nvlink.named_domains(topology, plan.hosts):
        domain_group = group_name("nvlink", domain)
        data.group_vars[domain_group] = {"clusterforge_nvlink_domain": domain}
        data.children[groups.NVLINK_DOMAIN].append(domain_group)
        for tray in trays:
            data.add(domain_group, tray.name)
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


def _leaf_groups(fabric_name: str, fabric: FabricPlan, switches: dict[str, Switch], host: Host) -> list[str]:
    leaves = fabric.attachments.get(host.name) or ()
    return list(dict.fromkeys(_leaf_group(fabric_name, fabric, switches[leaf]) for leaf in leaves))


def _leaf_group(fabric_name: str, fabric: FabricPlan, leaf: Switch) -> str:
    if fabric.spec.topology == "rail_optimized_fat_tree":
        # Every node of a unit shares that unit's rail leaves: one group per unit's leaf
        # set, not one per rail, keeps the group count linear.
        return group_name(fabric_name, f"su{leaf.unit or 0}", "leaves")
    return group_name(leaf.name)


def _leaf_group_pods(fabric_name: str, fabric: FabricPlan) -> dict[str, str]:
    """Leaf group -> pod group, for fabrics with a third tier."""
    return {
        _leaf_group(fabric_name, fabric, switch): group_name(fabric_name, "pod", fabric.leaf_pods[switch.name])
        for switch in fabric.switches
        if switch.name in fabric.leaf_pods
    }


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
    """What the checks expect of every node of this type (clusterforge_expected_*). HCA details
    (netdev, PCI address, NUMA node, nearest GPU) stay in the topology file; roles derive them
    with the clusterforge filters, so they are not repeated for every host of a large cluster."""
    return {"clusterforge_node_type": type_name, **plan.expectations(type_name).inventory_vars()}


def capabilities(plan: ClusterPlan, type_name: str) -> list[str]:
    """The capability groups (clusterforge.topology.groups) every node of this type belongs to."""
    expected = plan.expectations(type_name)
    fabrics = plan.topology.fabrics
    hca_fabrics = [fabrics[hca.fabric] for hca in plan.topology.node_types[type_name].hcas]
    found = {
        groups.GPU: expected.gpus > 0,
        groups.NVSWITCH: expected.nvswitch,
        groups.INFINIBAND: any(f.link_layer == "infiniband" for f in hca_fabrics),
        groups.ROCE: any(f.link_layer == "ethernet" and f.purpose in groups.RDMA_PURPOSES for f in hca_fabrics),
    }
    return [group for group, member in found.items() if member]


def orchestrator_groups(topology: Topology) -> dict[str, tuple[str, ...]]:
    """Orchestrator group -> the roles it holds: the defaults, with the topology's overrides."""
    overrides = {name: tuple(roles) for name, roles in topology.ansible.orchestrator_groups.items()}
    return {**groups.ORCHESTRATOR_GROUPS, **overrides}
