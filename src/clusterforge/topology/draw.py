"""An SVG picture of one fabric: scalable units holding their leaves, the spine tier (per pod
in three-tier trees), the core tier, or dragonfly groups, with links drawn as bundles
labelled with their counts.

Stdlib only, so that it works wherever the CLI does. Every label is placed on a layout that
measures text, and boxes collapse into counts ("8 leaves", "32 spines") once drawing them one
by one would make them too small to read, so the picture stays legible at any size."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clusterforge.topology.fabric import FabricPlan, Switch

if TYPE_CHECKING:  # the package imports this module's siblings; avoid a cycle at run time
    from clusterforge.topology import ClusterPlan

WIDTH = 1400
MARGIN = 20
GUTTER = 110  # left column for tier names and link totals
ROW_H = 30  # a switch row (boxes or a collapsed bar)
TIER_GAP = 84  # room between rows for bundles and their labels
UNIT_GAP = 10
POD_GAP = 18
PAD = 6
# Average advance per unit of font size, rounded up from DejaVu Sans (digits 0.636) so that
# estimated widths are never short of the rendered ones.
CHAR_WIDTH = 0.64
MIN_FONT = 9
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
TIMES = "\u00d7"
DASH = "\u2013"
DOT = " \u00b7 "
COLOURS = {  # fill, stroke
    "leaf": ("#e6f4e4", "#2e7d32"),
    "spine": ("#e3edfb", "#1565c0"),
    "core": ("#f1e6f8", "#6a1b9a"),
    "router": ("#fdebd8", "#d35400"),
    "unit": ("#fafafa", "#8a8a8a"),
    "pod": ("none", "#b0b0b0"),
}
LINK_COLOUR = "#607d8b"
PAIR_LINES_MAX = 48  # above this many leaf-spine pairs, bundles replace single lines
CIRCLE_MAX = 16  # dragonfly groups drawn on a circle with chords; more go in a grid
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
        _draw_dragonfly(canvas, fabric_plan, gpus, y)
    else:
        _draw_tree(canvas, fabric_plan, gpus, y, has_units=plan.topology.scalable_units is not None)
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


# --- canvas -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: Box, gap: float = 0) -> bool:
        return not (
            self.x + self.w + gap <= other.x
            or other.x + other.w + gap <= self.x
            or self.y + self.h + gap <= other.y
            or other.y + other.h + gap <= self.y
        )


def text_width(text: str, size: float) -> float:
    return CHAR_WIDTH * size * len(text)


def text_box(x: float, y: float, text: str, size: float, anchor: str = "middle") -> Box:
    """Where a label with baseline y will be drawn (ascent 0.8, descent 0.25 of the size)."""
    width = text_width(text, size)
    left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
    return Box(left, y - 0.8 * size, width, 1.05 * size)


def fit(options: list[str], width: float, size: float) -> tuple[str, float]:
    """The first (most detailed) option that fits `width`, shrinking the font before dropping
    detail; the last option is cut short with an ellipsis as the final resort."""
    sizes = sorted({size, max(MIN_FONT, size - 1), MIN_FONT}, reverse=True)
    for option in options:
        for candidate in sizes:
            if text_width(option, candidate) <= width:
                return option, candidate
    room = max(1, int(width / (CHAR_WIDTH * MIN_FONT)))
    return options[-1][: room - 1] + "\u2026", MIN_FONT


class Canvas:
    """Collects shapes in three layers (links, boxes, text) and remembers every label's box
    so that labels placed later can avoid the earlier ones."""

    def __init__(self, width: float):
        self.width = width
        self.bottom = 0.0
        self.links: list[ET.Element] = []
        self.shapes: list[ET.Element] = []
        self.labels: list[ET.Element] = []
        self.taken: list[Box] = []  # label boxes
        self.obstacles: list[Box] = []  # switch and group boxes that link labels must not cover

    def _grow(self, bottom: float) -> None:
        self.bottom = max(self.bottom, bottom)

    def rect(self, box: Box, colours: tuple[str, str], dashed: bool = False, obstacle: bool = False) -> None:
        fill, stroke = colours
        attrs = {"x": _n(box.x), "y": _n(box.y), "width": _n(box.w), "height": _n(box.h), "rx": "4"}
        attrs |= {"fill": fill, "stroke": stroke, "stroke-width": "1.2"}
        if dashed:
            attrs["stroke-dasharray"] = "5 4"
        self.shapes.append(ET.Element("rect", attrs))
        if obstacle:
            self.obstacles.append(box)
        self._grow(box.y + box.h)

    def line(self, x1: float, y1: float, x2: float, y2: float, width: float, opacity: float = 0.7) -> None:
        attrs = {"x1": _n(x1), "y1": _n(y1), "x2": _n(x2), "y2": _n(y2), "stroke": LINK_COLOUR}
        self.links.append(ET.Element("line", attrs | {"stroke-width": _n(width), "stroke-opacity": _n(opacity)}))

    def fan(self, bottom: tuple[float, float, float], top: tuple[float, float, float], opacity: float) -> None:
        """A bundle from a span (x0, x1, y) below to a span above, drawn as a translucent band."""
        (bx0, bx1, by), (tx0, tx1, ty) = bottom, top
        points = " ".join(f"{_n(x)},{_n(y)}" for x, y in ((bx0, by), (bx1, by), (tx1, ty), (tx0, ty)))
        attrs = {"points": points, "fill": LINK_COLOUR, "fill-opacity": _n(opacity), "stroke": "none"}
        self.links.append(ET.Element("polygon", attrs))

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float,
        anchor: str = "middle",
        bold: bool = False,
        halo: bool = False,
        colour: str = "#222",
    ) -> Box:
        box = text_box(x, y, text, size, anchor)
        if halo:  # a white backing keeps link labels legible over the bundles they name
            backing = Box(box.x - 2, box.y - 1, box.w + 4, box.h + 2)
            attrs = {"x": _n(backing.x), "y": _n(backing.y), "width": _n(backing.w), "height": _n(backing.h)}
            self.labels.append(ET.Element("rect", attrs | {"fill": "white", "fill-opacity": "0.9", "rx": "2"}))
        attrs = {"x": _n(x), "y": _n(y), "font-size": _n(size), "text-anchor": anchor, "fill": colour}
        if bold:
            attrs["font-weight"] = "bold"
        element = ET.Element("text", attrs)
        element.text = text
        self.labels.append(element)
        self.taken.append(box)
        self._grow(box.y + box.h)
        return box

    def free(self, box: Box, gap: float = 2) -> bool:
        inside = box.x >= MARGIN / 2 and box.x + box.w <= self.width - MARGIN / 2 and box.y >= 0
        clear = not any(box.overlaps(other, gap) for other in self.taken)
        return inside and clear and not any(box.overlaps(other) for other in self.obstacles)

    def to_svg(self) -> str:
        height = math.ceil(self.bottom + MARGIN)
        root = ET.Element(
            "svg",
            {
                "xmlns": "http://www.w3.org/2000/svg",
                "viewBox": f"0 0 {_n(self.width)} {height}",
                "width": _n(self.width),
                "height": str(height),
                "font-family": FONT,
            },
        )
        ET.SubElement(root, "rect", {"width": "100%", "height": "100%", "fill": "white"})
        for layer, elements in (("links", self.links), ("switches", self.shapes), ("labels", self.labels)):
            group = ET.SubElement(root, "g", {"class": layer})
            group.extend(elements)
        return ET.tostring(root, encoding="unicode")


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


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
        (None, _plural(nodes, "node")),
        (None, f"{sum(gpus.get(h, 0) for h in fabric.attachments)} GPUs"),
        (None, _plural(len(fabric.switches), "switch", "switches") + ":"),
    ]
    entries += [(tier, f"{tiers[tier]} {tier}") for tier in fabric.tiers()]
    entries.append((None, _plural(len(fabric.links), "link")))
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


# --- fat trees --------------------------------------------------------------------------------


@dataclass
class Part:
    """The leaves of one scalable unit inside one pod (a unit wider than a pod is split)."""

    unit: int
    leaves: list[Switch] = field(default_factory=list)
    nodes: int = 0
    gpus: int = 0
    uplinks: int = 0
    count: int = 1  # > 1: a run of identical consecutive units drawn as one box


@dataclass
class Pod:
    number: int | None  # None for a two-tier tree: one pod holding everything
    spines: list[Switch] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    uplinks: int = 0


def _tree_model(fabric: FabricPlan, gpus: dict[str, int]) -> tuple[list[Pod], list[Switch]]:
    """Pods with their spines and unit parts, and the cores."""
    if len(fabric.tiers()) > 1 and not any(link.tier == "leaf-spine" for link in fabric.links):
        raise ValueError(f"fabric {fabric.name} was generated without its links; load the topology with links=True")
    by_name = {s.name: s for s in fabric.switches}
    pods: dict[int | None, Pod] = {}
    for spine in (s for s in fabric.switches if s.tier == "spine"):
        pods.setdefault(spine.pod, Pod(spine.pod)).spines.append(spine)
    uplinks: Counter[str] = Counter()
    for link in fabric.links:
        if link.tier == "leaf-spine":
            uplinks[link.a] += 1
        elif link.tier == "spine-core":
            pods[by_name[link.a].pod].uplinks += 1
    parts: dict[tuple[int | None, int], Part] = {}
    for leaf in (s for s in fabric.switches if s.tier == "leaf"):
        pod = fabric.leaf_pods.get(leaf.name)
        part = parts.get((pod, leaf.unit or 0))
        if part is None:
            part = parts[(pod, leaf.unit or 0)] = Part(leaf.unit or 0)
            pods.setdefault(pod, Pod(pod)).parts.append(part)
        part.leaves.append(leaf)
        part.uplinks += uplinks[leaf.name]
    part_of = {leaf.name: part for part in parts.values() for leaf in part.leaves}
    for host, leaves in fabric.attachments.items():
        part_of[leaves[0]].nodes += 1
        part_of[leaves[0]].gpus += gpus.get(host, 0)
    cores = [s for s in fabric.switches if s.tier == "core"]
    ordered = sorted(pods.values(), key=lambda p: -1 if p.number is None else p.number)
    return [p for p in ordered if p.parts or p.spines], cores


def _runs(parts: list[Part]) -> list[Part]:
    """Consecutive units with the same leaves and nodes merged into one part each."""
    runs: list[Part] = []
    for part in parts:
        last = runs[-1] if runs else None
        same = (
            last is not None
            and part.unit
            and last.unit
            and part.unit == last.unit + last.count
            and len(part.leaves) * last.count == len(last.leaves)
            and part.nodes * last.count == last.nodes
        )
        if same:
            last.leaves.extend(part.leaves)
            last.nodes += part.nodes
            last.gpus += part.gpus
            last.uplinks += part.uplinks
            last.count += 1
        else:
            runs.append(Part(part.unit, list(part.leaves), part.nodes, part.gpus, part.uplinks))
    return runs


def _leaf_labels(part: Part) -> list[str]:
    """Short names inside leaf boxes: the rail (r3, or r3.2 with several leaves per rail) or L1.."""
    per_rail = Counter(leaf.rail for leaf in part.leaves)
    seen: Counter[int | None] = Counter()
    labels = []
    for leaf in part.leaves:
        seen[leaf.rail] += 1
        if leaf.rail is None:
            labels.append(f"L{seen[None]}" if len(part.leaves) > 1 else "leaf")
        else:
            labels.append(f"r{leaf.rail}" if per_rail[leaf.rail] == 1 else f"r{leaf.rail}.{seen[leaf.rail]}")
    return labels


def _unit_name(part: Part, has_units: bool) -> str:
    if part.unit and part.count > 1:
        return f"SU{part.unit}{DASH}SU{part.unit + part.count - 1}"
    if part.unit:
        return f"SU{part.unit}"
    return "service" if has_units else "nodes"


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


def _bundle(count: int, speeds: set[int]) -> str:
    return f"{count}{TIMES}{next(iter(speeds))}G" if len(speeds) == 1 else _plural(count, "link")


def _per_pair(pairs: Counter, what: str = "pair") -> str:
    low, high = min(pairs.values()), max(pairs.values())
    return f"{low} per {what}" if low == high else f"{low}{DASH}{high} per {what}"


@dataclass
class Layout:
    """How the units are drawn: 'leaves' (each leaf a box), 'units' (one box per unit or per
    run of identical units, `per_row` to a row in each column) or 'pods' (one box per pod)."""

    mode: str
    pods: list[Pod]
    columns: list[tuple[float, float]]
    per_row: list[int]


UNIT_TEXT = 10  # font size inside unit and switch boxes
LEAF_GAP = 4
MAX_UNIT_ROWS = 4  # more rows of unit boxes than this and identical units are merged


def _part_texts(part: Part, has_units: bool) -> list[list[str]]:
    """Option lists (most detailed first) for the lines of a collapsed unit box."""
    name = [_unit_name(part, has_units)]
    if part.count == 1:
        return [name, [_plural(len(part.leaves), "leaf", "leaves")], [_plural(part.nodes, "node")]]
    leaves, nodes = len(part.leaves) // part.count, part.nodes // part.count
    return [
        name,
        [f"{part.count} units"],
        [f"{_plural(leaves, 'leaf', 'leaves')} each", _plural(leaves, "leaf", "leaves")],
        [f"{_plural(nodes, 'node')} each", _plural(nodes, "node")],
    ]


def _min_width(option_lists: list[list[str]], size: float, shortest: bool = False) -> float:
    """Width that a box needs for its lines: at full detail, or with the shortest options."""
    if shortest:
        return max(text_width(options[-1], MIN_FONT) for options in option_lists) + 2 * PAD
    return max(text_width(options[0], size) for options in option_lists) + 2 * PAD


def _columns(pods: list[Pod], x0: float, x1: float) -> list[tuple[float, float]]:
    """Pod columns, as wide as their share of the unit parts."""
    weights = [max(1, len(p.parts)) for p in pods]
    room = x1 - x0 - POD_GAP * (len(pods) - 1)
    columns, x = [], x0
    for weight in weights:
        width = room * weight / sum(weights)
        columns.append((x, x + width))
        x += width + POD_GAP
    return columns


def _row_width(span: float, count: int, gap: float = UNIT_GAP) -> float:
    return (span - gap * (count - 1)) / count


def _leaves_fit(pods: list[Pod], columns: list[tuple[float, float]], has_units: bool) -> bool:
    """Whether every unit box can show its leaves one by one, with readable labels."""
    for pod, (c0, c1) in zip(pods, columns, strict=True):
        part_w = _row_width(c1 - c0, len(pod.parts))
        for part in pod.parts:
            leaf_w = max(20, max(text_width(label, UNIT_TEXT) for label in _leaf_labels(part)) + 8)
            needed = 2 * PAD + len(part.leaves) * leaf_w + LEAF_GAP * (len(part.leaves) - 1)
            if part_w < max(needed, _min_width(_part_texts(part, has_units)[:1], 11)):
                return False
    return True


def _per_row(pods: list[Pod], columns: list[tuple[float, float]], has_units: bool) -> list[int]:
    """Unit boxes per row in each column: at full detail where that fits, else abbreviated."""
    counts = []
    for pod, (c0, c1) in zip(pods, columns, strict=True):
        texts = [_part_texts(p, has_units) for p in pod.parts]
        fitting = 0
        for shortest in (False, True):
            unit_min = max(_min_width(t, UNIT_TEXT, shortest) for t in texts)
            fitting = min(len(pod.parts), int((c1 - c0 + UNIT_GAP) // (unit_min + UNIT_GAP)))
            if fitting >= 1:
                break
        counts.append(fitting)
    return counts


def _plan_layout(pods: list[Pod], x0: float, x1: float, has_units: bool) -> Layout:
    columns = _columns(pods, x0, x1)
    if _leaves_fit(pods, columns, has_units):
        return Layout("leaves", pods, columns, [len(p.parts) for p in pods])
    per_row = _per_row(pods, columns, has_units)
    if min(per_row) >= 1:
        rows = max(math.ceil(len(p.parts) / n) for p, n in zip(pods, per_row, strict=True))
        if rows <= MAX_UNIT_ROWS:
            return Layout("units", pods, columns, per_row)
        merged = [Pod(p.number, p.spines, _runs(p.parts), p.uplinks) for p in pods]
        per_row = _per_row(merged, columns, has_units)
        if min(per_row) >= 1:
            return Layout("units", merged, columns, per_row)
    return Layout("pods", pods, [(x0, x1)], [])


def _switch_row(canvas: Canvas, switches: list[Switch], span: tuple[float, float], y: float, bar: list[str]):
    """Switches side by side when their names fit, else one bar labelled with `bar` options.
    Returns the x centre of each switch drawn (empty for a bar) and the span covered."""
    x0, x1 = span
    names = [_short(s) for s in switches]
    fill = COLOURS[switches[0].tier]
    box_w = min(110.0, _row_width(x1 - x0, len(switches), 6))
    if box_w >= max(text_width(n, UNIT_TEXT) for n in names) + 8:
        total = box_w * len(switches) + 6 * (len(switches) - 1)
        left = (x0 + x1 - total) / 2
        centres = {}
        for i, (switch, name) in enumerate(zip(switches, names, strict=True)):
            bx = left + i * (box_w + 6)
            canvas.rect(Box(bx, y, box_w, ROW_H), fill, obstacle=True)
            canvas.text(bx + box_w / 2, y + ROW_H / 2 + 4, name, UNIT_TEXT)
            centres[switch.name] = bx + box_w / 2
        return centres, (left, left + total)
    canvas.rect(Box(x0, y, x1 - x0, ROW_H), fill, obstacle=True)
    label, size = fit(bar, x1 - x0 - 8, 11)
    canvas.text((x0 + x1) / 2, y + ROW_H / 2 + 4, label, size)
    return {}, (x0, x1)


def _short(switch: Switch) -> str:
    """A switch name without its fabric and pod: compute-pod2-spine07 -> spine07, compute-core03-01 -> core03-01."""
    name = switch.name.split("-", 1)[-1]  # fabric names cannot contain "-" (model.NAME_PATTERN)
    return name.removeprefix(f"pod{switch.pod}-") if switch.pod is not None else name


def _core_bar(cores: list[Switch], fabric: FabricPlan) -> list[str]:
    """Bar label options for collapsed cores, naming the core groups (cores that serve the
    same spines) when there are several."""
    serves: dict[str, set[str]] = defaultdict(set)
    for link in fabric.links:
        if link.tier == "spine-core":
            serves[link.b].add(link.a)
    groups = Counter(frozenset(v) for v in serves.values())
    sizes = set(groups.values())
    words = [f"{len(cores)} core switches", f"{len(cores)} cores"]
    if len(groups) > 1 and len(sizes) == 1:
        return [f"{words[0]}{DOT}{len(groups)} groups of {sizes.pop()}", *words]
    return words


def _gutter(canvas: Canvas, y: float, lines: list[str], bold: bool = False) -> None:
    """Tier names and link totals in the left column, centred on y."""
    top = y - (len(lines) - 1) * 7
    for i, line in enumerate(lines):
        text, size = fit([line], GUTTER - 10, 12 if bold else 11)
        canvas.text(MARGIN, top + i * 14 + 4, text, size, anchor="start", bold=bold, colour="#333")


@dataclass
class Links:
    """Link facts per tier (node-leaf, leaf-spine, spine-core): speeds and links per switch pair."""

    speeds: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    pairs: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))

    @classmethod
    def of(cls, fabric: FabricPlan) -> Links:
        found = cls()
        for link in fabric.links:
            found.speeds[link.tier].add(link.speed_gbps)
            found.pairs[link.tier][(link.a, link.b)] += 1
        return found

    def bundle(self, tier: str, count: int) -> str:
        return _bundle(count, self.speeds[tier])


@dataclass
class Column:
    """What was drawn for one pod: its unit boxes and the span of its spine row."""

    pod: Pod
    span: tuple[float, float]
    per_row: int
    boxes: list[Box]
    spine_span: tuple[float, float]
    singly: bool  # spines drawn one by one rather than as a bar


def _draw_tree(canvas: Canvas, fabric: FabricPlan, gpus: dict[str, int], top: float, has_units: bool) -> None:
    """Core row, then per pod its spine row over its unit boxes, then the link captions."""
    pods, cores = _tree_model(fabric, gpus)
    x0, x1 = MARGIN + GUTTER, canvas.width - MARGIN
    layout = _plan_layout(pods, x0, x1, has_units)
    links = Links.of(fabric)
    y = top + 10
    core_span = None
    if cores:
        _gutter(canvas, y + ROW_H / 2, ["core"], bold=True)
        _, core_span = _switch_row(canvas, cores, (x0, x1), y, _core_bar(cores, fabric))
        _gutter(canvas, y + ROW_H + TIER_GAP / 2, _tier_total(links.pairs["spine-core"]))
        y += ROW_H + TIER_GAP
    if layout.mode == "pods":
        bottom = _draw_pod_grid(canvas, layout.pods, (x0, x1), y, has_units)
        _gutter(canvas, (y + bottom) / 2, ["pods"], bold=True)
        if core_span:
            total = links.bundle("spine-core", sum(p.uplinks for p in layout.pods))
            _fan_with_label(canvas, (x0, x1, y), (*core_span, y - TIER_GAP), total)
    else:
        bottom = _draw_columns(canvas, layout, y, core_span, links, has_units)
    _captions(canvas, fabric, links, bottom + 24)


def _draw_columns(
    canvas: Canvas, layout: Layout, y: float, core_span: tuple[float, float] | None, links: Links, has_units: bool
) -> float:
    """Each pod's spines (with their bundle up to the cores) over its units; returns the y below."""
    has_spines = any(p.spines for p in layout.pods)
    spine_y, unit_y = y, y + (ROW_H + TIER_GAP if has_spines else 0)
    framed = len(layout.pods) > 1
    lines = max(len(_part_texts(part, has_units)) for pod in layout.pods for part in pod.parts)
    height = 76 if layout.mode == "leaves" else 14 + 14 * lines
    leaf_centres: dict[str, tuple[float, float]] = {}
    spine_centres: dict[str, float] = {}
    columns = []
    for pod, span, per_row in zip(layout.pods, layout.columns, layout.per_row, strict=True):
        spine_span, centres = span, {}
        if pod.spines:
            count = _plural(len(pod.spines), "spine")
            bar = [f"pod {pod.number}{DOT}{count}", count] if pod.number is not None else [count]
            centres, spine_span = _switch_row(canvas, pod.spines, span, spine_y, bar)
            spine_centres |= centres
            if core_span and pod.uplinks:
                upper = (*core_span, spine_y - TIER_GAP)
                _fan_with_label(canvas, (*spine_span, spine_y), upper, links.bundle("spine-core", pod.uplinks))
        boxes = _draw_parts(canvas, pod, span, (unit_y, height), layout.mode, per_row, has_units, leaf_centres)
        columns.append(Column(pod, span, per_row, boxes, spine_span, bool(centres)))
    bottom = max(box.y + box.h for column in columns for box in column.boxes)
    if framed:  # dashed frames show which units hang under which pod's spines
        for column in columns:
            x, right = column.span[0] - POD_GAP / 3, column.span[1] + POD_GAP / 3
            canvas.rect(Box(x, spine_y - 24, right - x, bottom + 30 - spine_y), COLOURS["pod"], dashed=True)
            name = f"pod {column.pod.number}"
            named = column.pod.number is None or not column.singly  # a spine bar names its pod
            if not named and canvas.free(text_box(x + 6, spine_y - 8, name, UNIT_TEXT, "start")):
                canvas.text(x + 6, spine_y - 8, name, UNIT_TEXT, anchor="start", bold=True, colour="#666")
        bottom += 6
    _gutter(canvas, (unit_y + bottom) / 2, ["leaf"], bold=True)
    if has_spines:
        _gutter(canvas, spine_y + ROW_H / 2, ["spine"], bold=True)
        singly = layout.mode == "leaves" and all(s.name in spine_centres for p in layout.pods for s in p.spines)
        total = _leaf_spine_links(canvas, columns, links, spine_y + ROW_H, (leaf_centres, spine_centres), singly)
        _gutter(canvas, spine_y + ROW_H + TIER_GAP / 2, total)
    return bottom


def _leaf_spine_links(
    canvas: Canvas,
    columns: list[Column],
    links: Links,
    spine_bottom: float,
    centres: tuple[dict[str, tuple[float, float]], dict[str, float]],
    singly: bool,
) -> list[str]:
    """A line per leaf-spine pair while there are few pairs and every switch has its own box,
    else a bundle per unit (or per column of units); returns the gutter lines for the tier."""
    pairs = links.pairs["leaf-spine"]
    total = _tier_total(pairs)
    if singly and len(pairs) <= PAIR_LINES_MAX:
        if not _pair_lines(canvas, pairs, *centres, spine_bottom, links.speeds["leaf-spine"]):
            counts = set(pairs.values())
            if len(counts) == 1:  # too crowded to label every line: say it once, in the gutter
                total.append(f"each line {links.bundle('leaf-spine', counts.pop())}")
        return total
    for column in columns:
        if column.pod.spines:
            spines = (*column.spine_span, spine_bottom)
            _unit_fans(canvas, column, spines, links.speeds["leaf-spine"])
    return total


def _tier_total(pairs: Counter) -> list[str]:
    return [_plural(sum(pairs.values()), "link"), _per_pair(pairs)] if pairs else []


def _draw_parts(
    canvas: Canvas,
    pod: Pod,
    column: tuple[float, float],
    at: tuple[float, float],
    mode: str,
    per_row: int,
    has_units: bool,
    leaf_centres: dict[str, tuple[float, float]],
) -> list[Box]:
    """The unit boxes of one pod column (top y and height `at`), `per_row` to a row."""
    y, height = at
    widest = max(len(p.leaves) for p in pod.parts)
    # no wider than their contents need, so a small fabric is not stretched over the page
    cap = max(240, 2 * PAD + widest * (64 + LEAF_GAP)) if mode == "leaves" else 160
    part_w = min(cap, _row_width(column[1] - column[0], per_row))
    left = (column[0] + column[1] - (part_w * per_row + UNIT_GAP * (per_row - 1))) / 2
    boxes = []
    for n, part in enumerate(pod.parts):
        row, col = divmod(n, per_row)
        box = Box(left + col * (part_w + UNIT_GAP), y + row * (height + UNIT_GAP), part_w, height)
        canvas.rect(box, COLOURS["unit"])
        if mode == "leaves":
            _leaf_box_contents(canvas, part, box, has_units, leaf_centres)
        else:
            _unit_box_contents(canvas, part, box, has_units)
        boxes.append(box)
    return boxes


def _unit_box_contents(canvas: Canvas, part: Part, box: Box, has_units: bool) -> None:
    for line, options in enumerate(_part_texts(part, has_units)):
        text, size = fit(options, box.w - 2 * PAD, 11 if line == 0 else UNIT_TEXT)
        canvas.text(box.x + box.w / 2, box.y + 18 + line * 14, text, size, bold=line == 0)


def _leaf_box_contents(
    canvas: Canvas, part: Part, box: Box, has_units: bool, leaf_centres: dict[str, tuple[float, float]]
) -> None:
    """A unit box with its leaves in a row: name on top, node and GPU counts below."""
    name, size = fit([_unit_name(part, has_units)], box.w - 2 * PAD, 11)
    canvas.text(box.x + box.w / 2, box.y + 15, name, size, bold=True)
    count = len(part.leaves)
    leaf_w = min(64.0, _row_width(box.w - 2 * PAD, count, LEAF_GAP))
    left = box.x + (box.w - (leaf_w * count + LEAF_GAP * (count - 1))) / 2
    for i, (leaf, label) in enumerate(zip(part.leaves, _leaf_labels(part), strict=True)):
        leaf_box = Box(left + i * (leaf_w + LEAF_GAP), box.y + 22, leaf_w, 26)
        canvas.rect(leaf_box, COLOURS["leaf"], obstacle=True)
        canvas.text(leaf_box.x + leaf_w / 2, leaf_box.y + 17, label, UNIT_TEXT)
        leaf_centres[leaf.name] = (leaf_box.x + leaf_w / 2, leaf_box.y)
    nodes = _plural(part.nodes, "node")
    text, size = fit([f"{nodes}{DOT}{part.gpus} GPUs" if part.gpus else nodes, nodes], box.w - 2 * PAD, UNIT_TEXT)
    canvas.text(box.x + box.w / 2, box.y + 66, text, size, colour="#444")


def _fan_with_label(
    canvas: Canvas, bottom: tuple[float, float, float], top: tuple[float, float, float], label: str
) -> None:
    """A bundle between two spans, labelled just above its lower end."""
    bx0, bx1, by = bottom
    inset = (bx1 - bx0) * 0.2
    canvas.fan((bx0 + inset, bx1 - inset, by), top, 0.14)
    text, size = fit([label, label.split(TIMES)[0]], bx1 - bx0 - 4, UNIT_TEXT)
    box = text_box((bx0 + bx1) / 2, by - 6, text, size)
    if canvas.free(box):
        canvas.text((bx0 + bx1) / 2, by - 6, text, size, halo=True)


def _unit_fans(canvas: Canvas, column: Column, spines: tuple[float, float, float], speeds: set[int]) -> None:
    """Bundles from units up to their pod's spines: one per unit when the units sit in one row,
    else one for the whole column from its top row."""
    boxes = column.boxes
    if len(boxes) <= column.per_row:
        for part, box in zip(column.pod.parts, boxes, strict=True):
            _fan_with_label(canvas, (box.x, box.x + box.w, box.y), spines, _bundle(part.uplinks, speeds))
        return
    top_row = boxes[: column.per_row]
    total = sum(p.uplinks for p in column.pod.parts)
    bottom = (top_row[0].x, top_row[-1].x + top_row[-1].w, top_row[0].y)
    _fan_with_label(canvas, bottom, spines, _bundle(total, speeds))


def _pair_lines(
    canvas: Canvas,
    pairs: Counter,
    leaves: dict[str, tuple[float, float]],
    spines: dict[str, float],
    spine_bottom: float,
    speeds: set[int],
) -> bool:
    """One line per leaf-spine pair; True when every line got its label."""
    lines = []
    for (leaf, spine), count in pairs.items():
        lx, ly = leaves[leaf]
        canvas.line(lx, ly, spines[spine], spine_bottom, min(1 + count / 2, 5))
        lines.append(((lx, ly), (spines[spine], spine_bottom), _bundle(count, speeds)))
    return _place_line_labels(canvas, lines)


LABEL_STEPS = (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82)


def _place_line_labels(canvas: Canvas, lines: list[tuple[tuple[float, float], tuple[float, float], str]]) -> bool:
    """Label each line on itself, clear of other labels and boxes, and if possible of the other
    lines too so that no label can be read as another line's; all labels or none. Labels that
    would have to sit on crossings are only worth it when they differ: identical ones are
    better said once by the caller."""
    segments = [(a, b) for a, b, _ in lines]
    differ = len({label for _, _, label in lines}) > 1
    for avoid in (segments, []) if differ else (segments,):
        chosen = _try_line_labels(canvas, lines, avoid)
        if chosen is not None:
            for x, y, label in chosen:
                canvas.text(x, y, label, UNIT_TEXT, halo=True)
            return True
    return False


def _try_line_labels(canvas: Canvas, lines, avoid: list) -> list[tuple[float, float, str]] | None:
    before = len(canvas.taken)
    chosen = []
    try:
        for i, ((ax, ay), (bx, by), label) in enumerate(lines):
            others = [segment for j, segment in enumerate(avoid) if j != i]
            for t in LABEL_STEPS:
                x, y = ax + (bx - ax) * t, ay + (by - ay) * t + 0.35 * UNIT_TEXT
                box = text_box(x, y, label, UNIT_TEXT)
                box = Box(box.x - 2, box.y - 1, box.w + 4, box.h + 2)  # the halo
                if canvas.free(box) and not any(_crosses(box, segment) for segment in others):
                    canvas.taken.append(box)
                    chosen.append((x, y, label))
                    break
            else:
                return None
        return chosen
    finally:
        del canvas.taken[before:]  # trial boxes only; the caller draws the labels for real


def _crosses(box: Box, segment: tuple[tuple[float, float], tuple[float, float]]) -> bool:
    """Whether a line segment passes through a box (Liang-Barsky clipping)."""
    (x1, y1), (x2, y2) = segment
    dx, dy = x2 - x1, y2 - y1
    low, high = 0.0, 1.0
    for p, q in ((-dx, x1 - box.x), (dx, box.x + box.w - x1), (-dy, y1 - box.y), (dy, box.y + box.h - y1)):
        if p == 0:
            if q < 0:
                return False
            continue
        r = q / p
        if p < 0:
            low = max(low, r)
        else:
            high = min(high, r)
        if low > high:
            return False
    return True


def _draw_pod_grid(canvas: Canvas, pods: list[Pod], span: tuple[float, float], y: float, has_units: bool) -> float:
    """Pods collapsed to one box each (spines, leaves, units), in as many rows as needed."""
    texts = [_pod_texts(pod, has_units) for pod in pods]
    per_row = 1
    for shortest in (False, True):
        min_w = max(_min_width(t, UNIT_TEXT, shortest) for t in texts)
        per_row = max(1, int((span[1] - span[0] + UNIT_GAP) // (min_w + UNIT_GAP)))
        if per_row * 8 >= len(pods):  # at most 8 rows before abbreviating
            break
    box_w = _row_width(span[1] - span[0], per_row)
    height = 18 + 14 * len(texts[0])
    for n, lines in enumerate(texts):
        row, col = divmod(n, per_row)
        box = Box(span[0] + col * (box_w + UNIT_GAP), y + row * (height + UNIT_GAP), box_w, height)
        canvas.rect(box, COLOURS["spine"])
        for line, options in enumerate(lines):
            text, size = fit(options, box_w - 2 * PAD, 11 if line == 0 else UNIT_TEXT)
            canvas.text(box.x + box_w / 2, box.y + 16 + 14 * line, text, size, bold=line == 0)
    rows = math.ceil(len(pods) / per_row)
    return y + rows * (height + UNIT_GAP) - UNIT_GAP


def _pod_texts(pod: Pod, has_units: bool) -> list[list[str]]:
    units = [p.unit for p in pod.parts]
    named = [_unit_name(p, has_units) for p in pod.parts]
    span = named[0] if len(named) == 1 else f"{named[0]}{DASH}{named[-1]}"
    leaves = sum(len(p.leaves) for p in pod.parts)
    return [
        [f"pod {pod.number}"],
        [_plural(len(pod.spines), "spine"), f"{len(pod.spines)} sp"],
        [_plural(leaves, "leaf", "leaves"), f"{leaves} lf"],
        [span, _plural(len(units), "unit"), f"{len(units)} u"],
    ]


def _captions(canvas: Canvas, fabric: FabricPlan, links: Links, y: float) -> None:
    """One line per link tier: count, speed and links per switch pair."""
    for tier in ("node-leaf", "leaf-spine", "spine-core"):
        pairs = links.pairs.get(tier)
        if not pairs:
            continue
        word = tier.replace("-", DASH)
        line = f"{word}: {links.bundle(tier, sum(pairs.values()))}"
        if tier == "node-leaf":
            detail = f"{line} from {_plural(len(fabric.attachments), 'node')}"
        else:
            detail = f"{line}{DOT}{_per_pair(pairs, f'{word} pair')}, {len(pairs)} pairs"
        text, size = fit([detail, line], canvas.width - 2 * MARGIN, 11)
        canvas.text(MARGIN, y, text, size, anchor="start", colour="#444")
        y += 16


# --- dragonfly --------------------------------------------------------------------------------


def _draw_dragonfly(canvas: Canvas, fabric: FabricPlan, gpus: dict[str, int], top: float) -> None:
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
    texts = {g: [[f"group {g}"], [_plural(size[g], "router")], [_plural(nodes[g], "node")]] for g in groups}
    box_w = max(_min_width(t, 11) for t in texts.values()) + 10
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
    for g in groups:
        _group_box(canvas, texts[g], centre_of[g], (box_w, box_h), size[g])
    labelled = chords and _place_line_labels(
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
    width = _row_width(span, per_row)
    centres = {}
    for n, group in enumerate(groups):
        row, col = divmod(n, per_row)
        centres[group] = (MARGIN + col * (width + UNIT_GAP) + width / 2, top + row * (box_h + UNIT_GAP) + box_h / 2)
    rows = math.ceil(len(groups) / per_row)
    return centres, top + rows * (box_h + UNIT_GAP) - UNIT_GAP


def _group_box(
    canvas: Canvas, lines: list[list[str]], centre: tuple[float, float], size: tuple[float, float], routers: int
) -> None:
    box_w, box_h = size
    box = Box(centre[0] - box_w / 2, centre[1] - box_h / 2, box_w, box_h)
    canvas.rect(box, COLOURS["router"], obstacle=True)
    for i, options in enumerate(lines):
        text, font = fit(options, box_w - 2 * PAD, 11 if i == 0 else UNIT_TEXT)
        canvas.text(centre[0], box.y + 16 + 14 * i, text, font, bold=i == 0)
    # a strip of small squares, one per router, when they fit at a visible size
    square = min(8.0, (box_w - 2 * PAD) / routers - 2)
    if square >= 3:
        left = centre[0] - (routers * (square + 2) - 2) / 2
        for i in range(routers):
            canvas.rect(Box(left + i * (square + 2), box.y + box_h - square - 5, square, square), ("#f5a25d", "none"))


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
        lines.append([f"{total}{DOT}{_per_pair(pairs)}{note}", total])
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
