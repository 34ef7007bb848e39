"""The NVLink racks under a fabric drawing: one box per rack with its NVLink domain, its trays,
GPUs, switch trays, draw and cooling, and a stripe per scale-out rail its trays reach, in the
rail's colour, so the drawing shows both networks a tray sits on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostlist import collect_hostlist

from clusterforge.topology import nvlink
from clusterforge.topology.draw.canvas import DOT, MARGIN, Box, Canvas, fit, plural, rail_colours

if TYPE_CHECKING:
    from clusterforge.topology import ClusterPlan
    from clusterforge.topology.fabric import FabricPlan

RACK_H = 64
RACK_GAP = 8
RACK_COLOURS = ("#eef6ee", "#4a7c59")
RACKS_DRAWN_MAX = 32  # beyond this many, one summary line replaces the boxes


def draw_racks(canvas: Canvas, plan: ClusterPlan, fabric: FabricPlan, top: float) -> None:
    spec = plan.topology.nvlink_domain
    if spec is None:
        return
    domain, _ = nvlink.resolve(spec)
    domains = nvlink.domains(plan.topology, plan.hosts)
    rack_kw = nvlink.rack_power_w(plan.topology, domain) / 1000
    racks = [
        (f"nvl{number:02d}", rack, trays[rack * domain.trays_per_rack : (rack + 1) * domain.trays_per_rack])
        for number, trays in enumerate(domains, 1)
        for rack in range(domain.racks)
    ]
    y = top + 20
    heading = (
        f"NVLink racks: {plural(len(racks), 'rack')}{DOT}{plural(len(domains), 'NVLink domain')} of "
        f"{domain.gpus} GPUs{DOT}{rack_kw:.1f} kW {domain.cooling}-cooled each"
    )
    canvas.text(MARGIN, y, fit([heading, "NVLink racks"], canvas.width - 2 * MARGIN, 13)[0], 13, "start", bold=True)
    if len(racks) > RACKS_DRAWN_MAX:
        canvas.text(MARGIN, y + 22, f"{len(racks)} racks: too many to draw one by one", 12, "start")
        return
    per_row = min(len(racks), 8)
    width = (canvas.width - 2 * MARGIN - (per_row - 1) * RACK_GAP) / per_row
    rails = sorted({s.rail for s in fabric.switches if s.rail is not None})
    for index, (name, rack, trays) in enumerate(racks):
        x = MARGIN + (index % per_row) * (width + RACK_GAP)
        box = Box(x, y + 14 + (index // per_row) * (RACK_H + RACK_GAP), width, RACK_H)
        hosts = collect_hostlist([host.name for host in trays])
        title = (
            f"{name} rack {rack + 1}: {hosts}, {len(trays)} trays, {domain.switch_trays_per_rack} NVLink switch trays"
        )
        canvas.rect(box, RACK_COLOURS, obstacle=True, title=title, css="rack")
        label = name if domain.racks == 1 else f"{name}/{rack + 1}"
        canvas.text(x + width / 2, box.y + 16, label, 12, bold=True)
        gpus = len(trays) * domain.gpus_per_tray
        line = fit([f"{len(trays)} trays{DOT}{gpus} GPUs", f"{gpus} GPUs"], width - 8, 10)
        canvas.text(x + width / 2, box.y + 30, line[0], line[1])
        line = fit([f"{domain.switch_trays_per_rack} NVLink sw", f"{domain.switch_trays_per_rack} sw"], width - 8, 10)
        canvas.text(x + width / 2, box.y + 43, line[0], line[1])
        stripe = (width - 8) / max(len(rails), 1)
        for offset, rail in enumerate(rails):  # one stripe per scale-out rail the rack's trays reach
            canvas.rect(Box(x + 4 + offset * stripe, box.y + RACK_H - 12, stripe - 2, 6), rail_colours(rail), radius=1)
