"""Dragonfly: router groups on a circle (or a grid when there are many) with their global links."""

from __future__ import annotations

import math
from collections import Counter

from clusterforge.topology.draw.canvas import (
    CIRCLE_MAX,
    COLOURS,
    DOT,
    MARGIN,
    PAD,
    UNIT_GAP,
    UNIT_TEXT,
    Box,
    Canvas,
    Links,
    fit,
    min_width,
    per_pair,
    place_line_labels,
    plural,
    row_width,
)
from clusterforge.topology.fabric import FabricPlan

# --- dragonfly --------------------------------------------------------------------------------


def draw_dragonfly(canvas: Canvas, fabric: FabricPlan, gpus: dict[str, int], top: float) -> None:
    """Groups as boxes with their router and node counts, joined by bundles of global links:
    on a circle with a chord per group pair while that stays legible, else in a grid."""
    routers = [s for s in fabric.switches if s.tier == "router"]
    group_of = {s.name: s.group for s in routers}
    groups = sorted({s.group for s in routers})
    size = Counter(s.group for s in routers)
    nodes: Counter[int] = Counter()
    for leaves in fabric.attachments.values():
        nodes[group_of[leaves[0]]] += 1
    links = Links.of(fabric)
    global_pairs: Counter[tuple[int, int]] = Counter()
    for (a, b), count in links.pairs["global"].items():
        global_pairs[(min(group_of[a], group_of[b]), max(group_of[a], group_of[b]))] += count
    texts = {g: [[f"group {g}"], [plural(size[g], "router")], [plural(nodes[g], "node")]] for g in groups}
    box_w = max(min_width(t, 11) for t in texts.values()) + 10
    box_h = 18 + 14 * 3 + 4
    chords = len(groups) <= CIRCLE_MAX
    if chords:
        centre_of, bottom = _circle(canvas, groups, (box_w, box_h), top + 20)
        # many chords: thinner and fainter, so that the crossings do not turn into a blot
        scale, opacity = (1.0, 0.55) if len(global_pairs) <= 40 else (0.6, 0.35)
        for (a, b), count in global_pairs.items():
            (ax, ay), (bx, by) = centre_of[a], centre_of[b]
            canvas.line(ax, ay, bx, by, min(1 + count / 2, 6) * scale, opacity)
    else:
        centre_of, bottom = _grid(canvas, groups, (box_w, box_h), top + 20)
    names: dict[int, list[str]] = {}
    for router in routers:
        names.setdefault(router.group, []).append(router.name)
    for g in groups:
        _group_box(canvas, texts[g], centre_of[g], (box_w, box_h), names[g])
    labelled = chords and place_line_labels(
        canvas,
        [
            (
                _edge(centre_of[a], centre_of[b], box_w, box_h),
                _edge(centre_of[b], centre_of[a], box_w, box_h),
                links.bundle("global", count),
            )
            for (a, b), count in global_pairs.items()
        ],
    )
    note = "" if labelled or not chords else " (each line)"
    _dragonfly_captions(canvas, links, global_pairs, len(groups), bottom + 30, note)


def _circle(canvas: Canvas, groups: list[int], box: tuple[float, float], top: float):
    """Centres of the group boxes on a circle wide enough that neighbours keep apart."""
    box_w, box_h = box
    count = len(groups)
    spacing = math.hypot(box_w, box_h) + 24
    radius = max(150.0, spacing / (2 * math.sin(math.pi / count))) if count > 1 else 0.0
    cx, cy = canvas.width / 2, top + radius + box_h / 2
    centres = {}
    for i, group in enumerate(groups):
        angle = 2 * math.pi * i / count - math.pi / 2  # group 1 at the top, then clockwise
        centres[group] = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
    return centres, cy + radius + box_h / 2


def _grid(canvas: Canvas, groups: list[int], box: tuple[float, float], top: float):
    box_w, box_h = box
    span = canvas.width - 2 * MARGIN
    per_row = max(1, int((span + UNIT_GAP) // (box_w + UNIT_GAP)))
    width = row_width(span, per_row)
    centres = {}
    for n, group in enumerate(groups):
        row, col = divmod(n, per_row)
        centres[group] = (MARGIN + col * (width + UNIT_GAP) + width / 2, top + row * (box_h + UNIT_GAP) + box_h / 2)
    rows = math.ceil(len(groups) / per_row)
    return centres, top + rows * (box_h + UNIT_GAP) - UNIT_GAP


def _group_box(
    canvas: Canvas, lines: list[list[str]], centre: tuple[float, float], size: tuple[float, float], names: list[str]
) -> None:
    """A group's box (its <title> names its routers as the cabling plan does), with a square per
    router, each titled with its name, when they fit at a visible size."""
    box_w, box_h = size
    box = Box(centre[0] - box_w / 2, centre[1] - box_h / 2, box_w, box_h)
    routers = len(names)
    shown = ", ".join(names) if routers <= 12 else f"{', '.join(names[:10])}, \u2026, {names[-1]}"
    canvas.rect(box, COLOURS["router"], obstacle=True, title=f"{lines[0][0]}: {shown}", css="group")
    for i, options in enumerate(lines):
        text, font = fit(options, box_w - 2 * PAD, 11 if i == 0 else UNIT_TEXT)
        canvas.text(centre[0], box.y + 16 + 14 * i, text, font, bold=i == 0)
    # a strip of small squares, one per router, when they fit at a visible size
    square = min(8.0, (box_w - 2 * PAD) / routers - 2)
    if square >= 3:
        left = centre[0] - (routers * (square + 2) - 2) / 2
        for i in range(routers):
            square_box = Box(left + i * (square + 2), box.y + box_h - square - 5, square, square)
            canvas.rect(square_box, ("#f5a25d", "none"), title=names[i], css="switch router")


def _edge(a: tuple[float, float], b: tuple[float, float], box_w: float, box_h: float) -> tuple[float, float]:
    """Where the line from box centre a to b leaves box a, so labels sit between the boxes."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    scale = min(box_w / 2 / abs(dx) if dx else math.inf, box_h / 2 / abs(dy) if dy else math.inf)
    return a[0] + dx * scale, a[1] + dy * scale


def _dragonfly_captions(canvas: Canvas, links: Links, pairs: Counter, groups: int, y: float, note: str) -> None:
    width = canvas.width - 2 * MARGIN
    lines = []
    if pairs:
        every = "all " if len(pairs) == groups * (groups - 1) // 2 else ""
        total = f"global: {links.bundle('global', pairs.total())} between {every}{len(pairs)} group pairs"
        lines.append([f"{total}{DOT}{per_pair(pairs)}{note}", total])
    local = links.pairs.get("local")
    if local:
        lines.append([f"local: {links.bundle('local', local.total())}, all-to-all inside each group"])
    terminal = links.pairs.get("terminal")
    if terminal:
        lines.append([f"terminal: {links.bundle('terminal', terminal.total())} to nodes"])
    for options in lines:
        text, size = fit(options, width, 11)
        canvas.text(MARGIN, y, text, size, anchor="start", colour="#444")
        y += 16
