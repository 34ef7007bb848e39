"""What the validation playbook derives from the topology: the GPU nodes' placement on the fabric
NCCL uses (for pairs), what each node is expected to have, and where the cabling is checked."""

from __future__ import annotations

from typing import Any

from clusterforge.topology import ClusterPlan
from clusterforge.validation.pairs import Placement, select_pairs


def nccl_fabric(plan: ClusterPlan) -> str | None:
    """The fabric inter-node NCCL traffic takes: the compute fabric the GPU nodes' HCAs are on,
    else the first fabric the GPU nodes are cabled to (in-band Ethernet in a small lab)."""
    topology = plan.topology
    gpu_types = {name for name, node_type in topology.node_types.items() if node_type.gpu}
    for name, fabric in topology.fabrics.items():
        if fabric.purpose == "compute" and any(
            hca.fabric == name for t in gpu_types for hca in topology.node_types[t].hcas
        ):
            return name
    gpu_hosts = [h.name for h in plan.hosts if h.node_type in gpu_types]
    for name, fabric_plan in plan.fabrics.items():
        if any(host in fabric_plan.attachments for host in gpu_hosts):
            return name
    return None


def gpu_hosts(plan: ClusterPlan, hosts: list[str] | None = None) -> list[str]:
    wanted = set(hosts) if hosts is not None else None
    types = plan.topology.node_types
    return [h.name for h in plan.hosts if types[h.node_type].gpu and (wanted is None or h.name in wanted)]


def placements(plan: ClusterPlan, hosts: list[str] | None = None, fabric: str | None = None) -> list[Placement]:
    """The GPU nodes (restricted to `hosts`, in topology order) and their leaves on the fabric."""
    fabric = fabric or nccl_fabric(plan)
    fabric_plan = plan.fabrics.get(fabric) if fabric else None
    switches = {s.name: s for s in fabric_plan.switches} if fabric_plan else {}
    found = []
    for host in gpu_hosts(plan, hosts):
        leaves: tuple[str, ...] = ()
        pod = None
        if fabric_plan is not None:
            leaves = tuple(dict.fromkeys(fabric_plan.attachments.get(host, [])))
            if leaves:
                pod = fabric_plan.leaf_pods.get(leaves[0])
                switch = switches.get(leaves[0])
                if pod is None and switch is not None and switch.tier == "router":
                    pod = switch.group  # dragonfly: the group plays the pod's part
        found.append(Placement(host, leaves, pod))
    return found


def node_expectations(plan: ClusterPlan, host_name: str) -> dict[str, Any]:
    """What the checks expect of one node, from its node type."""
    host = next(h for h in plan.hosts if h.name == host_name)
    node_type = plan.topology.node_types[host.node_type]
    fabrics = plan.topology.fabrics
    nccl = nccl_fabric(plan)
    rails = [hca for hca in node_type.hcas if hca.fabric == nccl]
    gpu = node_type.gpu
    return {
        "gpus": gpu.count if gpu else 0,
        "gpu_model": gpu.model if gpu else None,
        "nvlink_generation": gpu.nvlink_generation if gpu else None,
        "nvswitch": gpu.nvswitch if gpu else False,
        "hca_rates": {hca.device: hca.rate_gbps for hca in node_type.hcas},
        "link_layers": {hca.device: fabrics[hca.fabric].link_layer for hca in node_type.hcas if hca.fabric in fabrics},
        "rails": len(rails) or None,
        "nic_rate_gbps": min((hca.rate_gbps for hca in rails), default=None),
    }


def infiniband_fabric(plan: ClusterPlan) -> str | None:
    """The InfiniBand fabric whose cabling is checked: the compute one first."""
    candidates = [
        (f.purpose != "compute", name) for name, f in plan.topology.fabrics.items() if f.link_layer == "infiniband"
    ]
    return min(candidates)[1] if candidates else None


def cabling_host(plan: ClusterPlan, hosts: list[str] | None = None) -> str | None:
    """A host that can run ibnetdiscover on the InfiniBand fabric: the first in role order (head
    nodes first) with an HCA on it; else the first head node (which reports no hardware)."""
    wanted = [h for h in plan.hosts if hosts is None or h.name in set(hosts)]
    fabric = infiniband_fabric(plan)
    if fabric is not None:
        for host in wanted:
            if any(hca.fabric == fabric for hca in plan.topology.node_types[host.node_type].hcas):
                return host.name
    heads = [h.name for h in wanted if h.role == "head"]
    return (heads or [h.name for h in wanted] or [None])[0]


def validation_plan(plan: ClusterPlan, hosts: list[str] | None = None) -> dict[str, Any]:
    """Everything the playbook needs at once (plain data, JSON-safe)."""
    fabric = nccl_fabric(plan)
    nodes = placements(plan, hosts, fabric)
    pairs = select_pairs(nodes)
    return {
        "nccl_fabric": fabric,
        "gpu_hosts": [n.host for n in nodes],
        "placements": {n.host: {"leaves": list(n.leaves), "pod": n.pod} for n in nodes},
        "pairs": pairs.as_dict(),
        "cabling": {"host": cabling_host(plan, hosts), "fabric": infiniband_fabric(plan)},
    }
