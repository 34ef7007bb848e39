"""What the validation playbook derives from the topology: the GPU nodes' placement on the fabric
NCCL uses (for pairs), what each node is expected to have, and where the cabling is checked."""

from __future__ import annotations

from typing import Any

from clusterforge.topology import ClusterPlan
from clusterforge.validation.pairs import Placement, select_pairs


def gpu_hosts(plan: ClusterPlan, hosts: list[str] | None = None) -> list[str]:
    wanted = set(hosts) if hosts is not None else None
    types = plan.topology.node_types
    return [h.name for h in plan.hosts if types[h.node_type].gpu and (wanted is None or h.name in wanted)]


def placements(plan: ClusterPlan, hosts: list[str] | None = None, fabric: str | None = None) -> list[Placement]:
    """The GPU nodes (restricted to `hosts`, in topology order) and their leaves on the fabric."""
    fabric = fabric or plan.gpu_fabric
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


def cabling_host(plan: ClusterPlan, hosts: list[str] | None = None) -> str | None:
    """A host that can run ibnetdiscover on the InfiniBand fabric: the first in role order (head
    nodes first) with an HCA on it; else the first head node (which reports no hardware)."""
    wanted = [h for h in plan.hosts if hosts is None or h.name in set(hosts)]
    fabric = plan.infiniband_fabric
    if fabric is not None:
        for host in wanted:
            if any(hca.fabric == fabric for hca in plan.topology.node_types[host.node_type].hcas):
                return host.name
    heads = [h.name for h in wanted if h.role == "head"]
    return (heads or [h.name for h in wanted] or [None])[0]


def validation_plan(plan: ClusterPlan, hosts: list[str] | None = None) -> dict[str, Any]:
    """Everything the playbook needs at once (plain data, JSON-safe)."""
    fabric = plan.gpu_fabric
    nodes = placements(plan, hosts, fabric)
    pairs = select_pairs(nodes)
    return {
        "nccl_fabric": fabric,
        "gpu_hosts": [n.host for n in nodes],
        "placements": {n.host: {"leaves": list(n.leaves), "pod": n.pod} for n in nodes},
        "pairs": pairs.as_dict(),
        "cabling": {"host": cabling_host(plan, hosts), "fabric": plan.infiniband_fabric},
    }
