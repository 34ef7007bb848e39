"""Slurm topology.conf for the tree plugin (TopologyPlugin=topology/tree in slurm.conf).

Only compute nodes are Slurm nodes; head, login and storage hosts are left out. With
scalable units, one switch per unit lists its nodes; without them, one switch per leaf (or
dragonfly router) of the GPU fabric (ClusterPlan.gpu_fabric), a node belonging to the switch of its first port,
and above those one switch per spine pod of a three-tier tree or per dragonfly group. One
top switch lists the rest, so Slurm packs a job into a unit, leaf, pod or group before
spreading it further."""

from __future__ import annotations

from collections.abc import Collection

from hostlist import collect_hostlist

from clusterforge.topology import ClusterPlan
from clusterforge.topology.render.common import generated_by, gpu_fabric

TOP_SWITCH = "top"
UNPLACED = "other"  # compute nodes outside any unit, or not cabled to the GPU fabric


def switch_groups(plan: ClusterPlan, nodes: Collection[str] | None = None) -> dict[str, list[str]]:
    """Bottom-level switch name -> its compute nodes, in host order; with `nodes`, only those of
    them (a switch left without nodes is left out)."""
    groups: dict[str, list[str]] = {}
    compute = [host for host in plan.hosts if host.role == "compute" and (nodes is None or host.name in nodes)]
    fabric = gpu_fabric(plan)
    for host in compute:
        if plan.topology.scalable_units is not None:
            name = f"su{host.unit}" if host.unit else UNPLACED
        else:
            leaves = fabric.attachments.get(host.name) if fabric else None
            name = leaves[0] if leaves else UNPLACED
        groups.setdefault(name, []).append(host.name)
    # The catch-all goes last, whatever order the hosts came in.
    if UNPLACED in groups:
        groups[UNPLACED] = groups.pop(UNPLACED)
    return groups


def middle_switches(plan: ClusterPlan, bottom: list[str]) -> dict[str, list[str]]:
    """Pod or dragonfly-group switch -> the bottom switches under it; empty with scalable
    units (a unit is already the block a job should stay in)."""
    fabric = gpu_fabric(plan)
    if fabric is None or plan.topology.scalable_units is not None:
        return {}
    parent: dict[str, str] = {}
    for switch in fabric.switches:
        if switch.group is not None:
            parent[switch.name] = f"{fabric.name}-g{switch.group:02d}"
    for leaf, pod in fabric.leaf_pods.items():
        parent[leaf] = f"{fabric.name}-pod{pod}"
    middle: dict[str, list[str]] = {}
    for name in bottom:
        if name in parent:
            middle.setdefault(parent[name], []).append(name)
    return middle


def topology_conf(plan: ClusterPlan, nodes: Collection[str] | None = None) -> str:
    """The file; with `nodes`, only the compute nodes Slurm knows so far (slurmctld refuses a
    topology.conf naming a node that slurm.conf lacks), such as before a node is added."""
    groups = switch_groups(plan, nodes)
    middle = middle_switches(plan, list(groups))
    lines = [
        f"# Slurm topology.conf for cluster {plan.topology.cluster.name}, {generated_by(plan)}.",
        "# Needs TopologyPlugin=topology/tree in slurm.conf.",
    ]
    for name, nodes in groups.items():
        lines.append(f"SwitchName={name} Nodes={collect_hostlist(nodes)}")
    for name, children in middle.items():
        lines.append(f"SwitchName={name} Switches={collect_hostlist(children)}")
    under_middle = {child for children in middle.values() for child in children}
    top = [*middle, *(name for name in groups if name not in under_middle)]
    if top:
        lines.append(f"SwitchName={TOP_SWITCH} Switches={collect_hostlist(top)}")
    return "\n".join(lines) + "\n"


def files(plan: ClusterPlan) -> dict[str, str]:
    return {"slurm/topology.conf": topology_conf(plan)}
