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

if TYPE_CHECKING:  # the package imports this module's siblings; avoid a cycle at run time
    from clusterforge.topology import ClusterPlan

from clusterforge.topology.draw.canvas import (
    COLOURS,
    DOT,
    MARGIN,
    WIDTH,
    Box,
    Canvas,
    fit,
    plural,
    text_width,
)
from clusterforge.topology.draw.dragonfly import draw_dragonfly
from clusterforge.topology.draw.tree import draw_tree

TOPOLOGY_NAMES = {
    "fat_tree": "fat tree",
    "rail_optimized_fat_tree": "rail-optimised fat tree",
    "dragonfly": "dragonfly",
}


def render_svg(plan: ClusterPlan, fabric: str | None = None) -> str:
    """The SVG text of a fabric of a ClusterPlan; by default the GPU fabric (ClusterPlan.gpu_fabric), else its first."""
    name = _pick_fabric(plan, fabric)
    fabric_plan = plan.fabrics[name]
    gpus = _gpus_per_host(plan)
    canvas = Canvas(WIDTH)
    y = _header(canvas, plan, fabric_plan, gpus)
    if not fabric_plan.switches:
        canvas.text(WIDTH / 2, y + 30, "no nodes are cabled to this fabric", 13)
    elif fabric_plan.spec.topology == "dragonfly":
        draw_dragonfly(canvas, fabric_plan, gpus, y)
    else:
        draw_tree(canvas, fabric_plan, gpus, y, has_units=plan.topology.scalable_units is not None)
    return canvas.to_svg()


def _pick_fabric(plan: ClusterPlan, fabric: str | None) -> str:
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
    line, size = fit([DOT.join(parts), DOT.join(parts[:3]), kind], width, 12)
    canvas.text(MARGIN, MARGIN + 40, line, size, anchor="start", colour="#444")
    return _legend(canvas, fabric, gpus, MARGIN + 64)


def _legend(canvas: Canvas, fabric: FabricPlan, gpus: dict[str, int], y: float) -> float:
    """One row of counts with colour swatches for the switch tiers, wrapped if it runs out of width."""
    tiers = Counter(s.tier for s in fabric.switches)
    nodes = len(fabric.attachments)
    entries: list[tuple[str | None, str]] = [
        (None, plural(nodes, "node")),
        (None, f"{sum(gpus.get(h, 0) for h in fabric.attachments)} GPUs"),
        (None, plural(len(fabric.switches), "switch", "switches") + ":"),
    ]
    entries += [(tier, f"{tiers[tier]} {tier}") for tier in fabric.tiers()]
    entries.append((None, plural(len(fabric.links), "link")))
    x, size = MARGIN, 12
    for tier, label in entries:
        needed = text_width(label, size) + (16 if tier else 0)
        if x + needed > canvas.width - MARGIN:
            x, y = MARGIN, y + 20
        if tier:
            canvas.rect(Box(x, y - 10, 11, 11), COLOURS[tier])
            x += 16
        canvas.text(x, y, label, size, anchor="start")
        x += text_width(label, size) + 18
    return y + 24
