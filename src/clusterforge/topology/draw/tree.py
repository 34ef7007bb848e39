"""Fat trees: scalable units holding their leaves, the spine tier (per pod in three-tier trees)
and the core tier, with leaf-spine links drawn as lines or labelled bundles."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import pairwise

from clusterforge.topology.draw.canvas import (
    COLOURS,
    DASH,
    DOT,
    GUTTER,
    MARGIN,
    NODE_COLOURS,
    PAD,
    PAIR_LINES_MAX,
    POD_GAP,
    ROW_H,
    TIER_GAP,
    TIMES,
    UNIT_GAP,
    UNIT_TEXT,
    Box,
    Canvas,
    Links,
    bundle,
    fit,
    min_width,
    per_pair,
    place_line_labels,
    plural,
    rail_colours,
    row_width,
    text_box,
    text_width,
)
from clusterforge.topology.fabric import FabricPlan, Switch
from clusterforge.topology.hosts import Host
from clusterforge.topology.model import COMPUTE_ROLE

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
    hosts: list[str] = field(default_factory=list)  # cabled to this part (of the first unit of a run)
    marks: tuple[int, ...] = ()  # its reserved slots


@dataclass
class Nodes:
    """The hosts by name and the units' reserved slots ((unit, slot) -> ReservedSlot), for the node
    row drawn in each unit: one square per slot, a reserved slot (a management host) marked."""

    hosts: dict[str, Host] = field(default_factory=dict)
    reserved: dict = field(default_factory=dict)
    per_unit: int = 0

    def is_compute(self, name: str) -> bool:
        """A compute node (the compute role); a host not known here counts as one."""
        host = self.hosts.get(name)
        return host is None or host.role == COMPUTE_ROLE

    def in_reserved_slot(self, name: str) -> bool:
        host = self.hosts.get(name)
        return host is not None and (host.unit, host.slot) in self.reserved


@dataclass
class Pod:
    number: int | None  # None for a two-tier tree: one pod holding everything
    spines: list[Switch] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    uplinks: int = 0


@dataclass
class Ports:
    """Each switch's port budget: links down (to nodes or the tier below) and up, of its radix."""

    radix: int
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, fabric: FabricPlan) -> Ports:
        down: Counter[str] = Counter()
        up: Counter[str] = Counter()
        for link in fabric.links:
            if link.tier == "node-leaf":
                down[link.b] += 1
            elif link.tier in ("leaf-spine", "spine-core"):
                up[link.a] += 1
                down[link.b] += 1
        return cls(fabric.spec.switch.radix, {s.name: (down[s.name], up[s.name]) for s in fabric.switches})

    def text(self, name: str) -> str:
        """ "32 down, 32 up of 64" """
        down, up = self.budgets.get(name, (0, 0))
        return f"{down} down, {up} up of {self.radix}" if up else f"{down} down of {self.radix}"

    def tier_text(self, switches: list[Switch]) -> str:
        """One budget for the tier ("32 down, 32 up of 64"), or ranges where its switches differ."""
        values = [self.budgets.get(s.name, (0, 0)) for s in switches]
        downs, ups = [d for d, _ in values], [u for _, u in values]

        def span(numbers: list[int]) -> str:
            low, high = min(numbers), max(numbers)
            return str(low) if low == high else f"{low}{DASH}{high}"

        return (
            f"{span(downs)} down, {span(ups)} up of {self.radix}" if max(ups) else f"{span(downs)} down of {self.radix}"
        )


def _named(switches: list[Switch], limit: int = 256) -> str:
    """Cabling-plan names of switches, the middle left out of a long list."""
    names = [s.name for s in switches]
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[: limit - 2]) + f", \u2026 ({len(names) - limit + 1} more), " + names[-1]


def _tree_model(fabric: FabricPlan, gpus: dict[str, int], nodes: Nodes | None = None) -> tuple[list[Pod], list[Switch]]:
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
        # Nodes are counted as validate and `topology show` count them: by role, so a management
        # host in a reserved slot (a UFM appliance) is marked in the node row, not counted a node.
        if nodes is None or nodes.is_compute(host):
            part_of[leaves[0]].nodes += 1
        part_of[leaves[0]].gpus += gpus.get(host, 0)
        part_of[leaves[0]].hosts.append(host)
    if nodes is not None:
        for part in parts.values():
            part.marks = tuple(sorted(slot for unit, slot in nodes.reserved if unit == part.unit))
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
            and part.marks == last.marks
        )
        if same:
            last.leaves.extend(part.leaves)
            last.nodes += part.nodes
            last.gpus += part.gpus
            last.uplinks += part.uplinks
            last.count += 1
        else:
            runs.append(
                Part(
                    part.unit,
                    list(part.leaves),
                    part.nodes,
                    part.gpus,
                    part.uplinks,
                    hosts=list(part.hosts),
                    marks=part.marks,
                )
            )
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


@dataclass
class Layout:
    """How the units are drawn: 'leaves' (each leaf a box), 'units' (one box per unit or per
    run of identical units, `per_row` to a row in each column) or 'pods' (one box per pod)."""

    mode: str
    pods: list[Pod]
    columns: list[tuple[float, float]]
    per_row: list[int]


LEAF_GAP = 4
LEAVES_BOX_H = 80  # a unit box with its leaves, node row and counts
MAX_UNIT_ROWS = 4  # more rows of unit boxes than this and identical units are merged


def _part_texts(part: Part, has_units: bool) -> list[list[str]]:
    """Option lists (most detailed first) for the lines of a collapsed unit box."""
    name = [_unit_name(part, has_units)]
    if part.count == 1:
        return [name, [plural(len(part.leaves), "leaf", "leaves")], [plural(part.nodes, "node")]]
    leaves, nodes = len(part.leaves) // part.count, part.nodes // part.count
    return [
        name,
        [f"{part.count} units"],
        [f"{plural(leaves, 'leaf', 'leaves')} each", plural(leaves, "leaf", "leaves")],
        [f"{plural(nodes, 'node')} each", plural(nodes, "node")],
    ]


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


def _leaves_fit(pods: list[Pod], columns: list[tuple[float, float]], has_units: bool) -> bool:
    """Whether every unit box can show its leaves one by one, with readable labels."""
    for pod, (c0, c1) in zip(pods, columns, strict=True):
        part_w = row_width(c1 - c0, len(pod.parts))
        for part in pod.parts:
            leaf_w = max(20, max(text_width(label, UNIT_TEXT) for label in _leaf_labels(part)) + 8)
            needed = 2 * PAD + len(part.leaves) * leaf_w + LEAF_GAP * (len(part.leaves) - 1)
            if part_w < max(needed, min_width(_part_texts(part, has_units)[:1], 11)):
                return False
    return True


def _per_row(pods: list[Pod], columns: list[tuple[float, float]], has_units: bool) -> list[int]:
    """Unit boxes per row in each column: at full detail where that fits, else abbreviated."""
    counts = []
    for pod, (c0, c1) in zip(pods, columns, strict=True):
        texts = [_part_texts(p, has_units) for p in pod.parts]
        fitting = 0
        for shortest in (False, True):
            unit_min = max(min_width(t, UNIT_TEXT, shortest) for t in texts)
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


def _switch_row(
    canvas: Canvas, switches: list[Switch], span: tuple[float, float], y: float, bar: list[str], ports: Ports
):
    """Switches side by side when their names fit, else one bar labelled with `bar` options; each
    switch's <title> (the bar's) gives its cabling-plan name and port budget.
    Returns the x centre of each switch drawn (empty for a bar) and the span covered."""
    x0, x1 = span
    names = [_short(s) for s in switches]
    fill = COLOURS[switches[0].tier]
    box_w = min(110.0, row_width(x1 - x0, len(switches), 6))
    if box_w >= max(text_width(n, UNIT_TEXT) for n in names) + 8:
        total = box_w * len(switches) + 6 * (len(switches) - 1)
        left = (x0 + x1 - total) / 2
        centres = {}
        for i, (switch, name) in enumerate(zip(switches, names, strict=True)):
            bx = left + i * (box_w + 6)
            title = f"{switch.name}: {ports.text(switch.name)}"
            canvas.rect(Box(bx, y, box_w, ROW_H), fill, obstacle=True, title=title, css=f"switch {switch.tier}")
            canvas.text(bx + box_w / 2, y + ROW_H / 2 + 4, name, UNIT_TEXT)
            centres[switch.name] = bx + box_w / 2
        return centres, (left, left + total)
    title = f"{plural(len(switches), switches[0].tier)} ({ports.tier_text(switches)} each): {_named(switches)}"
    canvas.rect(Box(x0, y, x1 - x0, ROW_H), fill, obstacle=True, title=title, css=f"switches {switches[0].tier}")
    label, size = fit(bar, x1 - x0 - 8, 11)
    canvas.text((x0 + x1) / 2, y + ROW_H / 2 + 4, label, size)
    return {}, (x0, x1)


def _short(switch: Switch) -> str:
    """A switch name without its fabric and pod: compute-pod2-spine07 -> spine07, compute-core003 -> core003."""
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
class Column:
    """What was drawn for one pod: its unit boxes and the span of its spine row."""

    pod: Pod
    span: tuple[float, float]
    per_row: int
    boxes: list[Box]
    spine_span: tuple[float, float]
    singly: bool  # spines drawn one by one rather than as a bar


@dataclass
class Drawing:
    """What every part of a fat-tree picture reads: links, ports, nodes and the unit naming."""

    links: Links
    ports: Ports
    nodes: Nodes
    has_units: bool


def draw_tree(
    canvas: Canvas,
    fabric: FabricPlan,
    gpus: dict[str, int],
    top: float,
    has_units: bool,
    nodes: Nodes | None = None,
) -> None:
    """Core row, then per pod its spine row over its unit boxes, then the link captions."""
    nodes = nodes or Nodes()
    pods, cores = _tree_model(fabric, gpus, nodes)
    x0, x1 = MARGIN + GUTTER, canvas.width - MARGIN
    layout = _plan_layout(pods, x0, x1, has_units)
    links = Links.of(fabric)
    drawing = Drawing(links, Ports.of(fabric), nodes, has_units)
    y = top + 10
    core_span = None
    # Bundles up to the cores: one label for them all when every pod's is the same.
    up = [links.bundle("spine-core", p.uplinks) for p in layout.pods if p.uplinks and p.spines]
    same_up = up[0] if len(up) > 1 and len(set(up)) == 1 else None
    if cores:
        _gutter(canvas, y + ROW_H / 2, ["core"], bold=True)
        _, core_span = _switch_row(canvas, cores, (x0, x1), y, _core_bar(cores, fabric), drawing.ports)
        each = [same_up, "per pod"] if same_up and layout.mode != "pods" else []
        _gutter(canvas, y + ROW_H + TIER_GAP / 2, _tier_total(links.pairs["spine-core"]) + each)
        y += ROW_H + TIER_GAP
    if layout.mode == "pods":
        bottom = _draw_pod_grid(canvas, layout.pods, (x0, x1), y, has_units)
        _gutter(canvas, (y + bottom) / 2, ["pods"], bold=True)
        if core_span:
            total = links.bundle("spine-core", sum(p.uplinks for p in layout.pods))
            _fan_with_label(canvas, (x0, x1, y), (*core_span, y - TIER_GAP), total)
    else:
        bottom = _draw_columns(canvas, layout, y, core_span, drawing, label_up=same_up is None)
    _captions(canvas, fabric, drawing, bottom + 24)


def _draw_columns(
    canvas: Canvas,
    layout: Layout,
    y: float,
    core_span: tuple[float, float] | None,
    drawing: Drawing,
    label_up: bool = True,
) -> float:
    """Each pod's spines (with their bundle up to the cores) over its units; returns the y below."""
    links, has_units = drawing.links, drawing.has_units
    has_spines = any(p.spines for p in layout.pods)
    spine_y, unit_y = y, y + (ROW_H + TIER_GAP if has_spines else 0)
    framed = len(layout.pods) > 1
    lines = max(len(_part_texts(part, has_units)) for pod in layout.pods for part in pod.parts)
    height = LEAVES_BOX_H if layout.mode == "leaves" else 32 + 14 * lines
    leaf_centres: dict[str, tuple[float, float]] = {}
    spine_centres: dict[str, float] = {}
    columns = []
    for pod, span, per_row in zip(layout.pods, layout.columns, layout.per_row, strict=True):
        spine_span, centres = span, {}
        if pod.spines:
            count = plural(len(pod.spines), "spine")
            bar = [f"pod {pod.number}{DOT}{count}", count] if pod.number is not None else [count]
            centres, spine_span = _switch_row(canvas, pod.spines, span, spine_y, bar, drawing.ports)
            spine_centres |= centres
            if core_span and pod.uplinks:
                upper = (*core_span, spine_y - TIER_GAP)
                label = links.bundle("spine-core", pod.uplinks) if label_up else None
                _fan_with_label(canvas, (*spine_span, spine_y), upper, label)
        boxes = _draw_parts(canvas, pod, span, (unit_y, height), layout.mode, per_row, drawing, leaf_centres)
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
        counts = set(pairs.values())
        # Lines that are all alike are labelled once, in the gutter, not each on itself.
        alike = len(counts) == 1 and len(pairs) > 1
        labelled = _pair_lines(canvas, pairs, *centres, spine_bottom, links.speeds["leaf-spine"], label=not alike)
        if not labelled and len(counts) == 1:
            total += [links.bundle("leaf-spine", counts.pop()), "each line"]
        return total
    fans, railed = [], set()
    for number, column in enumerate(columns):
        if column.pod.spines:
            spines = (*column.spine_span, spine_bottom)
            fans += [(*fan, number) for fan in _unit_fans(column, spines, links.speeds["leaf-spine"])]
            if _rail_lanes(canvas, column, centres, spine_bottom, pairs):
                railed.add(number)
    labels = {label for _, _, label, _, _ in fans}
    same = len(fans) > 1 and len(labels) == 1  # every bundle the same: say it once, in the gutter
    for bottom, top, label, _, number in fans:
        # A column drawn in rail lanes has its bundle's label only (the lanes are the bundle).
        _fan_with_label(canvas, bottom, top, None if same else label, band=number not in railed)
    return [*total, labels.pop(), f"per {fans[0][3]}"] if same else total


def _rail_lanes(
    canvas: Canvas,
    column: Column,
    centres: tuple[dict[str, tuple[float, float]], dict[str, float]],
    spine_bottom: float,
    pairs: Counter,
) -> bool:
    """A rail-optimised tree drawn switch by switch: each rail's leaf-spine links as a lane in the
    rail's colour, so that a rail is followed from its leaves to the spines. Each leaf drops to its
    rail's lane; the lane rises into every spine its leaves reach, at the rail's place in the
    spine's box. (A grey band per unit would merge every rail into one.) Returns whether it drew."""
    leaf_centres, spine_centres = centres
    parts, boxes = column.pod.parts, column.boxes
    leaves = [leaf for part in parts for leaf in part.leaves]
    if not (leaves and column.singly) or len(boxes) > column.per_row:  # a second row: drops would cross the first
        return False
    if any(leaf.rail is None or leaf.name not in leaf_centres for leaf in leaves):
        return False
    rails = sorted({leaf.rail for leaf in leaves})
    xs = sorted(spine_centres[s.name] for s in column.pod.spines if s.name in spine_centres)
    pitch = min((b - a for a, b in pairwise(xs)), default=60.0)
    step_x = min(6.0, (pitch - 16) / len(rails))
    step_y = min(7.0, (min(box.y for box in boxes) - spine_bottom - 24) / len(rails))
    if step_x < 1.5 or step_y < 3:  # too many rails for the room: the grey bands say it
        return False
    reached: defaultdict[int, set[str]] = defaultdict(set)
    links: Counter[int] = Counter()
    rail_of = {leaf.name: leaf.rail for leaf in leaves}
    for (leaf, spine), count in pairs.items():
        if leaf in rail_of and spine in spine_centres:
            reached[rail_of[leaf]].add(spine)
            links[rail_of[leaf]] += count
    for index, rail in enumerate(rails):
        colour = rail_colours(rail)[1]
        lane_y = spine_bottom + 12 + index * step_y
        own = [leaf for leaf in leaves if leaf.rail == rail]
        title = (
            f"rail {rail}: {plural(links[rail], 'link')} from {plural(len(own), 'leaf', 'leaves')} "
            f"to {plural(len(reached[rail]), 'spine')}"
        )
        taps = [spine_centres[s] + (index - (len(rails) - 1) / 2) * step_x for s in sorted(reached[rail])]
        drops = [leaf_centres[leaf.name] for leaf in own]
        ends = [*taps, *(x for x, _ in drops)]
        if not taps:
            continue
        canvas.line(min(ends), lane_y, max(ends), lane_y, 1.6, 0.9, colour, title)
        for x in taps:
            canvas.line(x, lane_y, x, spine_bottom, 1.2, 0.9, colour)
        for x, top in drops:
            canvas.line(x, top, x, lane_y, 1.6, 0.9, colour)
    return True


def _tier_total(pairs: Counter) -> list[str]:
    return [plural(sum(pairs.values()), "link"), per_pair(pairs)] if pairs else []


def _draw_parts(
    canvas: Canvas,
    pod: Pod,
    column: tuple[float, float],
    at: tuple[float, float],
    mode: str,
    per_row: int,
    drawing: Drawing,
    leaf_centres: dict[str, tuple[float, float]],
) -> list[Box]:
    """The unit boxes of one pod column (top y and height `at`), `per_row` to a row."""
    y, height = at
    widest = max(len(p.leaves) for p in pod.parts)
    # no wider than their contents need, so a small fabric is not stretched over the page
    cap = max(240, 2 * PAD + widest * (64 + LEAF_GAP)) if mode == "leaves" else 160
    part_w = min(cap, row_width(column[1] - column[0], per_row))
    left = (column[0] + column[1] - (part_w * per_row + UNIT_GAP * (per_row - 1))) / 2
    boxes = []
    for n, part in enumerate(pod.parts):
        row, col = divmod(n, per_row)
        box = Box(left + col * (part_w + UNIT_GAP), y + row * (height + UNIT_GAP), part_w, height)
        name = _unit_name(part, drawing.has_units)
        leaves = plural(len(part.leaves), "leaf", "leaves")
        title = f"{name}: {leaves} ({drawing.ports.tier_text(part.leaves)} each): {_named(part.leaves)}"
        canvas.rect(box, COLOURS["unit"], title=title, css="unit")
        if mode == "leaves":
            _leaf_box_contents(canvas, part, box, drawing, leaf_centres)
        else:
            _unit_box_contents(canvas, part, box, drawing)
        boxes.append(box)
    return boxes


def _unit_box_contents(canvas: Canvas, part: Part, box: Box, drawing: Drawing) -> None:
    """A collapsed unit: its name and counts, its node row, and a stripe of its leaves' rails."""
    texts = _part_texts(part, drawing.has_units)
    for line, options in enumerate(texts):
        text, size = fit(options, box.w - 2 * PAD, 11 if line == 0 else UNIT_TEXT)
        canvas.text(box.x + box.w / 2, box.y + 18 + line * 14, text, size, bold=line == 0)
    below = box.y + 14 * len(texts) + 10
    _node_row(canvas, part, Box(box.x + PAD, below, box.w - 2 * PAD, 7), drawing)
    _rail_stripe(canvas, part, Box(box.x + PAD, below + 10, box.w - 2 * PAD, 5))


def _leaf_box_contents(
    canvas: Canvas, part: Part, box: Box, drawing: Drawing, leaf_centres: dict[str, tuple[float, float]]
) -> None:
    """A unit box with its leaves in a row, coloured by rail: name on top, the node row and the
    node and GPU counts below."""
    name, size = fit([_unit_name(part, drawing.has_units)], box.w - 2 * PAD, 11)
    canvas.text(box.x + box.w / 2, box.y + 15, name, size, bold=True)
    count = len(part.leaves)
    leaf_w = min(64.0, row_width(box.w - 2 * PAD, count, LEAF_GAP))
    left = box.x + (box.w - (leaf_w * count + LEAF_GAP * (count - 1))) / 2
    for i, (leaf, label) in enumerate(zip(part.leaves, _leaf_labels(part), strict=True)):
        leaf_box = Box(left + i * (leaf_w + LEAF_GAP), box.y + 22, leaf_w, 26)
        colours = rail_colours(leaf.rail) if leaf.rail is not None else COLOURS["leaf"]
        rail = f"rail {leaf.rail}, " if leaf.rail is not None else ""
        title = f"{leaf.name}: {rail}{drawing.ports.text(leaf.name)}"
        canvas.rect(leaf_box, colours, obstacle=True, title=title, css="switch leaf")
        canvas.text(leaf_box.x + leaf_w / 2, leaf_box.y + 17, label, UNIT_TEXT)
        leaf_centres[leaf.name] = (leaf_box.x + leaf_w / 2, leaf_box.y)
    _node_row(canvas, part, Box(box.x + PAD, box.y + 52, box.w - 2 * PAD, 7), drawing)
    nodes = plural(part.nodes, "node")
    text, size = fit([f"{nodes}{DOT}{part.gpus} GPUs" if part.gpus else nodes, nodes], box.w - 2 * PAD, UNIT_TEXT)
    canvas.text(box.x + box.w / 2, box.y + 72, text, size, colour="#444")


def _slots(part: Part, nodes: Nodes) -> list[tuple[str, str | None]]:
    """The node row of a unit, slot by slot: (kind, tooltip), kind node, reserved or empty. A
    service part (no unit) lists its hosts."""
    if not (nodes.per_unit and part.unit):
        return [("reserved" if nodes.in_reserved_slot(h) else "node", None) for h in part.hosts]
    by_slot = {nodes.hosts[h].slot: h for h in part.hosts if h in nodes.hosts}
    row = []
    for slot in range(1, nodes.per_unit + 1):
        reserved = nodes.reserved.get((part.unit, slot))
        host = by_slot.get(slot)
        if reserved is not None:
            who = host or "empty"
            row.append(("reserved", f"SU{part.unit} slot {slot} reserved: {reserved.purpose or 'reserved'} ({who})"))
        else:
            row.append(("node" if host else "empty", None))
    return row


def _node_row(canvas: Canvas, part: Part, area: Box, drawing: Drawing) -> None:
    """One square per node slot of the unit (of the first unit of a run), a reserved slot in its
    own colour; one grey bar when the squares would be too small to see."""
    slots = _slots(part, drawing.nodes)
    if not slots:
        return
    each = " each" if part.count > 1 else ""
    names = f"{part.hosts[0]} \u2026 {part.hosts[-1]}" if len(part.hosts) > 1 else "".join(part.hosts)
    title = f"{_unit_name(part, drawing.has_units)}: {plural(len(slots), 'node slot')}{each} ({names})"
    square = min(7.0, (area.w + 1) / len(slots) - 1)
    if square < 1.5:
        canvas.rect(area, NODE_COLOURS["node"], title=title, css="node-row", radius=1)
        return
    width = len(slots) * (square + 1) - 1
    left = area.x + (area.w - width) / 2
    canvas.rect(Box(left - 1, area.y - 1, width + 2, area.h + 2), ("#f0f0f0", "none"), title=title, css="node-row")
    for i, (kind, tip) in enumerate(slots):
        colours = NODE_COLOURS.get(kind, ("white", "#bdbdbd"))
        box = Box(left + i * (square + 1), area.y, square, area.h)
        canvas.rect(box, colours, title=tip, css=f"slot {kind}", radius=1)


def _rail_stripe(canvas: Canvas, part: Part, area: Box) -> None:
    """A collapsed unit's leaves as a stripe, one segment per leaf in its rail's colour."""
    per_unit = len(part.leaves) // part.count
    if per_unit == 0 or all(leaf.rail is None for leaf in part.leaves):
        return
    width = area.w / per_unit
    for i in range(per_unit):
        same = part.leaves[i::per_unit]  # this leaf in every unit of a run
        rail = same[0].rail
        colours = rail_colours(rail) if rail is not None else COLOURS["leaf"]
        title = f"rail {rail}: {_named(same, 6)}" if rail is not None else _named(same, 6)
        canvas.rect(
            Box(area.x + i * width, area.y, width, area.h), (colours[1], "none"), title=title, css="rail", radius=0
        )


def _fan_with_label(
    canvas: Canvas,
    bottom: tuple[float, float, float],
    top: tuple[float, float, float],
    label: str | None,
    band: bool = True,
) -> None:
    """A bundle between two spans, labelled just above its lower end (unless label is None);
    band=False: the label only, where the bundle is drawn otherwise (rail lanes)."""
    bx0, bx1, by = bottom
    inset = (bx1 - bx0) * 0.2
    if band:
        canvas.fan((bx0 + inset, bx1 - inset, by), top, 0.14)
    if label is None:
        return
    text, size = fit([label, label.split(TIMES)[0]], bx1 - bx0 - 4, UNIT_TEXT)
    box = text_box((bx0 + bx1) / 2, by - 6, text, size)
    if canvas.free(box):
        canvas.text((bx0 + bx1) / 2, by - 6, text, size, halo=True)


def _unit_fans(column: Column, spines: tuple[float, float, float], speeds: set[int]) -> list[tuple]:
    """Bundles from units up to their pod's spines, as (bottom span, top span, label, what each
    is): one per unit when the units sit in one row, else one for the whole column from its top row."""
    boxes = column.boxes
    if len(boxes) <= column.per_row:
        return [
            ((box.x, box.x + box.w, box.y), spines, bundle(part.uplinks, speeds), "unit")
            for part, box in zip(column.pod.parts, boxes, strict=True)
        ]
    top_row = boxes[: column.per_row]
    total = sum(p.uplinks for p in column.pod.parts)
    bottom = (top_row[0].x, top_row[-1].x + top_row[-1].w, top_row[0].y)
    return [(bottom, spines, bundle(total, speeds), "pod")]


def _pair_lines(
    canvas: Canvas,
    pairs: Counter,
    leaves: dict[str, tuple[float, float]],
    spines: dict[str, float],
    spine_bottom: float,
    speeds: set[int],
    label: bool = True,
) -> bool:
    """One line per leaf-spine pair; True when every line got its label (never without label)."""
    lines = []
    for (leaf, spine), count in pairs.items():
        lx, ly = leaves[leaf]
        canvas.line(lx, ly, spines[spine], spine_bottom, min(1 + count / 2, 5))
        lines.append(((lx, ly), (spines[spine], spine_bottom), bundle(count, speeds)))
    return label and place_line_labels(canvas, lines)


def _draw_pod_grid(canvas: Canvas, pods: list[Pod], span: tuple[float, float], y: float, has_units: bool) -> float:
    """Pods collapsed to one box each (spines, leaves, units), in as many rows as needed."""
    texts = [_pod_texts(pod, has_units) for pod in pods]
    per_row = 1
    for shortest in (False, True):
        min_w = max(min_width(t, UNIT_TEXT, shortest) for t in texts)
        per_row = max(1, int((span[1] - span[0] + UNIT_GAP) // (min_w + UNIT_GAP)))
        if per_row * 8 >= len(pods):  # at most 8 rows before abbreviating
            break
    box_w = row_width(span[1] - span[0], per_row)
    railed = any(leaf.rail is not None for pod in pods for part in pod.parts for leaf in part.leaves)
    height = 14 * len(texts[0]) + (30 if railed else 22)
    for n, (pod, lines) in enumerate(zip(pods, texts, strict=True)):
        row, col = divmod(n, per_row)
        box = Box(span[0] + col * (box_w + UNIT_GAP), y + row * (height + UNIT_GAP), box_w, height)
        leaves = [leaf for part in pod.parts for leaf in part.leaves]
        canvas.rect(box, COLOURS["spine"], title=f"pod {pod.number}: {_named(pod.spines + leaves)}", css="pod")
        for line, options in enumerate(lines):
            text, size = fit(options, box_w - 2 * PAD, 11 if line == 0 else UNIT_TEXT)
            canvas.text(box.x + box_w / 2, box.y + 16 + 14 * line, text, size, bold=line == 0)
        # the pod's nodes as one node row, and the rails of its first unit as a stripe, so both
        # stay when pods collapse
        below = box.y + 14 * len(lines) + 10
        nodes = sum(part.nodes for part in pod.parts)
        title = f"pod {pod.number}: {plural(nodes, 'node')} in {plural(len(pod.parts), 'unit')}"
        canvas.rect(Box(box.x + PAD, below, box_w - 2 * PAD, 6), NODE_COLOURS["node"], title=title, css="node-row")
        first = Part(pod.parts[0].unit, pod.parts[0].leaves[: len(pod.parts[0].leaves) // pod.parts[0].count])
        _rail_stripe(canvas, first, Box(box.x + PAD, below + 9, box_w - 2 * PAD, 5))
    rows = math.ceil(len(pods) / per_row)
    return y + rows * (height + UNIT_GAP) - UNIT_GAP


def _pod_texts(pod: Pod, has_units: bool) -> list[list[str]]:
    units = [p.unit for p in pod.parts]
    named = [_unit_name(p, has_units) for p in pod.parts]
    span = named[0] if len(named) == 1 else f"{named[0]}{DASH}{named[-1]}"
    leaves = sum(len(p.leaves) for p in pod.parts)
    return [
        [f"pod {pod.number}"],
        [plural(len(pod.spines), "spine"), f"{len(pod.spines)} sp"],
        [plural(leaves, "leaf", "leaves"), f"{leaves} lf"],
        [span, plural(len(units), "unit"), f"{len(units)} u"],
    ]


def _captions(canvas: Canvas, fabric: FabricPlan, drawing: Drawing, y: float) -> None:
    """One line per link tier: count, speed and links per switch pair; the management links of
    hosts in reserved slots; then each tier's port budget."""
    links, nodes = drawing.links, drawing.nodes
    for tier in ("node-leaf", "leaf-spine", "spine-core"):
        pairs = links.pairs.get(tier)
        if not pairs:
            continue
        word = tier.replace("-", DASH)
        line = f"{word}: {links.bundle(tier, sum(pairs.values()))}"
        if tier == "node-leaf":
            compute = plural(sum(1 for host in fabric.attachments if nodes.is_compute(host)), "compute node")
            detail = f"{line} from {compute}"
            managed: Counter[str] = Counter()
            for (host, _), n in pairs.items():
                if nodes.in_reserved_slot(host):
                    managed[host] += n
            if managed:
                hosts = ", ".join(sorted(managed))
                links_word = plural(managed.total(), "management link")
                from_nodes = sum(pairs.values()) - managed.total()
                where = f"from {hosts} in {plural(len(managed), 'reserved slot')}"
                detail = f"{line}: {from_nodes} from {compute}{DOT}{links_word} {where}"
        else:
            detail = f"{line}{DOT}{per_pair(pairs, f'{word} pair')}, {len(pairs)} pairs"
        text, size = fit([detail, line], canvas.width - 2 * MARGIN, 11)
        canvas.text(MARGIN, y, text, size, anchor="start", colour="#444")
        y += 16
    budgets = []
    for tier in fabric.tiers():
        switches = [s for s in fabric.switches if s.tier == tier]
        budgets.append(f"{tier} {drawing.ports.tier_text(switches)}")
    if budgets:
        line = f"ports per switch: {'; '.join(budgets)}"
        text, size = fit([line, budgets[0]], canvas.width - 2 * MARGIN, 11)
        canvas.text(MARGIN, y, text, size, anchor="start", colour="#444")
