"""The counts an engineer checks first, as one stable JSON-able document: hosts per role,
GPUs per model, the NVLink domains' racks, switch trays, cable cartridges and links, and per
fabric its switches and links per tier, its cables by kind, with a core tier how many cores each
spine reaches, and for a dragonfly its global ports used and available."""

from __future__ import annotations

from collections import Counter
from typing import Any

from clusterforge.topology import ClusterPlan, nvlink
from clusterforge.topology.model import ROLES
from clusterforge.topology.render import bom


def require_links(plan: ClusterPlan) -> None:
    """Link and cable counts need every link: refuse a plan loaded with links=False."""
    partial = sorted(name for name, fabric in plan.fabrics.items() if not fabric.complete)
    if partial:
        raise ValueError(f"fabric(s) {', '.join(partial)} were generated without their uplinks (load(links=False))")


def summarise(plan: ClusterPlan, prices: dict | None = None) -> dict[str, Any]:
    """Keys come in a fixed order (roles in ROLES order, tiers leaf to core, links from the
    nodes up); names that have no natural order (node types, GPU models, fabrics) are sorted."""
    require_links(plan)
    topology = plan.topology
    roles = Counter(host.role for host in plan.hosts)
    node_types = Counter(host.node_type for host in plan.hosts)
    gpus: Counter[str] = Counter()
    for type_name, count in node_types.items():
        gpu = topology.node_types[type_name].gpu
        if gpu:
            gpus[gpu.model] += gpu.count * count
    units = topology.scalable_units
    return {
        "cluster": topology.cluster.name,
        "domain": topology.cluster.domain,
        "hosts": {
            "total": len(plan.hosts),
            "by_role": {role: roles[role] for role in ROLES if roles[role]},
            "by_node_type": {name: node_types[name] for name in sorted(node_types)},
        },
        "gpus": {
            "total": sum(gpus.values()),
            "by_model": {model: gpus[model] for model in sorted(gpus)},
        },
        "scalable_units": None
        if units is None
        else {
            "count": units.count,
            "nodes_per_unit": units.nodes_per_unit,
            "reserved_slots": len(units.reserved_slots),
        },
        "switches": plan.switch_count(),
        "nvlink": nvlink.totals(topology, plan.hosts),
        "fabrics": {name: _fabric(plan, name) for name in sorted(plan.fabrics)},
        "bom": bom.totals(bom.bill(plan, prices)),
    }


def _fabric(plan: ClusterPlan, name: str) -> dict[str, Any]:
    fabric = plan.fabrics[name]
    spec = fabric.spec
    switches = Counter(s.tier for s in fabric.switches)
    links = Counter(link.tier for link in fabric.links)
    found = {
        "purpose": spec.purpose,
        "link_layer": spec.link_layer,
        "topology": spec.topology,
        "rails": spec.rails if spec.topology == "rail_optimized_fat_tree" else 1,
        "switch_model": spec.switch.model,
        "port_speed_gbps": spec.switch.port_speed_gbps,
        "attached_hosts": len(fabric.attachments),
        "switches": {tier: switches[tier] for tier in fabric.tiers()},
        "links": {tier: links[tier] for tier in bom.LINK_TIERS if links[tier]},
        "cables": bom.media_counts(fabric),
    }
    if spec.topology == "dragonfly":
        df = spec.dragonfly
        found["global_ports"] = {
            "used": 2 * links["global"],
            "available": df.groups * df.routers_per_group * df.global_links_per_router,
        }
    reached = fabric.cores_reached().values()
    if reached:  # how widely spines spread their uplinks: what losing one core costs them
        found["cores_per_spine"] = {"min": min(reached), "max": max(reached)}
    return found
