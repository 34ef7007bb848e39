"""An SVG picture of one fabric: scalable units holding their leaves, the spine tier (per pod
in three-tier trees), the core tier, or dragonfly groups, with links drawn as bundles
labelled with their counts.

Stdlib only, so that it works wherever the CLI does. Every label is placed on a layout that
measures text, and boxes collapse into counts ("8 leaves", "32 spines") once drawing them one
by one would make them too small to read, so the picture stays legible at any size."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from clusterforge.topology.fabric import FabricPlan
from clusterforge.topology.model import COMPUTE_ROLE

if TYPE_CHECKING:  # the package imports this module's siblings; avoid a cycle at run time
    from clusterforge.topology import ClusterPlan

from clusterforge.topology.draw.canvas import (
    COLOURS,
    DOT,
    MARGIN,
    NARROW,
    NODE_COLOURS,
    WIDTH,
    Box,
    Canvas,
    fit,
    plural,
    rail_colours,
    text_width,
)
from clusterforge.topology.draw.dragonfly import draw_dragonfly
from clusterforge.topology.draw.racks import draw_racks
from clusterforge.topology.draw.tree import Nodes, draw_tree

TOPOLOGY_NAMES = {
    "fat_tree": "fat tree",
    "rail_optimized_fat_tree": "rail-optimised fat tree",
    "dragonfly": "dragonfly",
}


def render_svg(plan: ClusterPlan, fabric: str | None = None) -> str:
    """The SVG text of a fabric of a ClusterPlan; by default the GPU fabric (ClusterPlan.gpu_fabric), else its first."""
    name = pick_fabric(plan, fabric)
    fabric_plan = plan.fabrics[name]
    gpus = _gpus_per_host(plan)
    # A fabric of one switch (or none) is drawn on a narrow page: a wide one would be mostly empty.
    canvas = Canvas(NARROW if len(fabric_plan.switches) <= 1 else WIDTH)
    y = _header(canvas, plan, fabric_plan, gpus)
    if not fabric_plan.switches:
        canvas.text(canvas.width / 2, y + 30, "no nodes are cabled to this fabric", 13)
    elif fabric_plan.spec.topology == "dragonfly":
        draw_dragonfly(canvas, fabric_plan, gpus, y)
    else:
        draw_tree(canvas, fabric_plan, gpus, y, has_units=plan.topology.scalable_units is not None, nodes=_nodes(plan))
    draw_racks(canvas, plan, fabric_plan, canvas.bottom)
    return canvas.to_svg()


def _nodes(plan: ClusterPlan) -> Nodes:
    """Hosts by name and the reserved slots of the scalable units, for the units' node rows."""
    units = plan.topology.scalable_units
    reserved = {(r.unit, r.slot): r for r in units.reserved_slots} if units else {}
    return Nodes({h.name: h for h in plan.hosts}, reserved, units.nodes_per_unit if units else 0)


def pick_fabric(plan: ClusterPlan, fabric: str | None) -> str:
    """The fabric to draw: the one named, else the fabric that carries GPU traffic, else the first."""
    if fabric is not None:
        if fabric not in plan.fabrics:
            raise KeyError(f"no fabric {fabric!r}; the topology has {', '.join(plan.fabrics) or 'none'}")
        return fabric
    if not plan.fabrics:
        raise KeyError("the topology has no fabrics to draw")
    return plan.gpu_fabric or next(iter(plan.fabrics))


def _gpus_per_host(plan: ClusterPlan) -> dict[str, int]:
    types = plan.topology.node_types
    return {h.name: (types[h.node_type].gpu.count if types[h.node_type].gpu else 0) for h in plan.hosts}


# --- header -----------------------------------------------------------------------------------


def _header(canvas: Canvas, plan: ClusterPlan, fabric: FabricPlan, gpus: dict[str, int]) -> float:
    """Title, fabric description and a legend with node, GPU and switch counts; returns the y below."""
    spec = fabric.spec
    width = canvas.width - 2 * MARGIN
    title, size = fit([f"{plan.topology.cluster.name}{DOT}{fabric.name} fabric", fabric.name], width, 18)
    canvas.text(MARGIN, MARGIN + 18, title, size, anchor="start", bold=True)
    kind = TOPOLOGY_NAMES[spec.topology]
    if spec.topology != "dragonfly" and "core" in fabric.tiers():
        kind += " (three tiers)"
    parts = [kind, "InfiniBand" if spec.link_layer == "infiniband" else "Ethernet"]
    parts.append(f"{spec.switch.model}, {spec.switch.radix} ports of {spec.switch.port_speed_gbps}G")
    if spec.topology != "dragonfly":
        parts.append(f"{spec.oversubscription:g}:1 oversubscription")
    if spec.topology == "rail_optimized_fat_tree":
        parts.append(f"{spec.rails} rails")
    if spec.topology == "dragonfly" and spec.dragonfly is not None:
        d = spec.dragonfly
        parts.insert(
            1,
            f"p={d.terminals_per_router} a={d.routers_per_group} h={d.global_links_per_router} g={d.groups}",
        )
    shorter = DOT.join(parts[:4] if spec.topology == "dragonfly" else parts[:3])
    line, size = fit([DOT.join(parts), shorter, DOT.join(parts[:2]), kind], width, 12)
    canvas.text(MARGIN, MARGIN + 40, line, size, anchor="start", colour="#444")
    units = plan.topology.scalable_units
    return _legend(canvas, plan, fabric, gpus, MARGIN + 64, reserved=bool(units and units.reserved_slots))


def _legend(
    canvas: Canvas, plan: ClusterPlan, fabric: FabricPlan, gpus: dict[str, int], y: float, reserved: bool = False
) -> float:
    """One row of counts with colour swatches for the switch tiers, wrapped if it runs out of width.
    Nodes are counted by role, as validate and `topology show` count them; the switches are this
    fabric's, next to the topology's total that validate reports."""
    tiers = Counter(s.tier for s in fabric.switches)
    entries: list[tuple[str | None, str]] = [(None, text) for text in attached_counts(plan, fabric)]
    entries.append((None, f"{sum(gpus.get(h, 0) for h in fabric.attachments)} GPUs"))
    switches = plural(len(fabric.switches), "switch", "switches")
    if plan.switch_count() != len(fabric.switches):  # validate counts every fabric's switches
        switches += f" of {plan.switch_count()} in all {len(plan.fabrics)} fabrics"
    entries.append((None, switches + ":"))
    entries += [(COLOURS[tier], f"{tiers[tier]} {tier}") for tier in fabric.tiers()]
    entries.append((None, plural(len(fabric.links), "link")))
    y = _legend_row(canvas, entries, y)
    rails = sorted({s.rail for s in fabric.switches if s.rail is not None})
    if rails:  # the colour of each rail's leaves (and of the rail stripes of collapsed units)
        y = _legend_row(canvas, [(None, "rails:"), *(((rail_colours(r)[1],) * 2, f"r{r}") for r in rails)], y + 20)
    if fabric.spec.topology != "dragonfly" and fabric.attachments:  # the units' node rows
        row = [(None, "node rows:"), (NODE_COLOURS["node"], "node")]
        if reserved:
            row.append((NODE_COLOURS["reserved"], "reserved slot (management)"))
        y = _legend_row(canvas, row, y + 20)
    return y + 24


def attached_counts(plan: ClusterPlan, fabric: FabricPlan) -> list[str]:
    """The hosts cabled to the fabric by role: "127 compute nodes", then "1 management host"..."""
    roles = {host.name: host.role for host in plan.hosts}
    counts = Counter(roles.get(name, COMPUTE_ROLE) for name in fabric.attachments)
    found = [plural(counts.pop(COMPUTE_ROLE, 0), "compute node")]
    return found + [plural(count, f"{role} host") for role, count in sorted(counts.items())]


def _legend_row(canvas: Canvas, entries: list[tuple[tuple[str, str] | None, str]], y: float) -> float:
    """Labels with optional colour swatches in a row, wrapped when it runs out of width; returns
    the y of the last row."""
    x, size = MARGIN, 12
    for colours, label in entries:
        needed = text_width(label, size) + (16 if colours else 0)
        if x + needed > canvas.width - MARGIN:
            x, y = MARGIN, y + 20
        if colours:
            canvas.rect(Box(x, y - 10, 11, 11), colours)
            x += 16
        canvas.text(x, y, label, size, anchor="start")
        x += text_width(label, size) + 18
    return y
