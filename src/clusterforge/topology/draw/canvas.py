"""The drawing surface: measured text, boxes that must not overlap, and the SVG they become.
Shared by the fat-tree and dragonfly pictures, with the label placement and link counts both use."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterforge.topology.fabric import FabricPlan

WIDTH = 1400
NARROW = 760  # the page of a fabric with a single switch
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
# One colour per rail (stroke; the fill is a light tint of it), repeating after eight: rail 1 is
# the first HCA (GPU 0) of every node, and its leaves carry only that rail's traffic.
RAIL_COLOURS = ("#1f77b4", "#e6550d", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#d6338f", "#17becf")
NODE_COLOURS = {  # fill, stroke of a node's square in a unit's node row
    "node": ("#9e9e9e", "none"),
    "reserved": ("#fdd835", "#8d6e00"),  # a reserved slot, with the management host in it if any
}
PAIR_LINES_MAX = 48  # above this many leaf-spine pairs, bundles replace single lines
CIRCLE_MAX = 16  # dragonfly groups drawn on a circle with chords; more go in a grid

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


def rail_colours(rail: int) -> tuple[str, str]:
    """(fill, stroke) of a rail's leaves: the rail's colour and a light tint of it."""
    stroke = RAIL_COLOURS[(rail - 1) % len(RAIL_COLOURS)]
    r, g, b = (int(stroke[i : i + 2], 16) for i in (1, 3, 5))
    tint = "#" + "".join(f"{round(c + (255 - c) * 0.8):02x}" for c in (r, g, b))
    return tint, stroke


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

    def rect(
        self,
        box: Box,
        colours: tuple[str, str],
        dashed: bool = False,
        obstacle: bool = False,
        title: str | None = None,
        css: str | None = None,
        radius: float = 4,
    ) -> ET.Element:
        """A box; title becomes its tooltip (<title>: a switch's cabling-plan name), css its class."""
        fill, stroke = colours
        attrs = {"x": _n(box.x), "y": _n(box.y), "width": _n(box.w), "height": _n(box.h), "rx": _n(radius)}
        attrs |= {"fill": fill, "stroke": stroke, "stroke-width": "1.2"}
        if dashed:
            attrs["stroke-dasharray"] = "5 4"
        if css:
            attrs["class"] = css
        element = ET.Element("rect", attrs)
        if title:
            ET.SubElement(element, "title").text = title
        self.shapes.append(element)
        if obstacle:
            self.obstacles.append(box)
        self._grow(box.y + box.h)
        return element

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        width: float,
        opacity: float = 0.7,
        colour: str = LINK_COLOUR,
        title: str | None = None,
    ) -> None:
        attrs = {"x1": _n(x1), "y1": _n(y1), "x2": _n(x2), "y2": _n(y2), "stroke": colour}
        line = ET.Element("line", attrs | {"stroke-width": _n(width), "stroke-opacity": _n(opacity)})
        if title is not None:
            ET.SubElement(line, "title").text = title
        self.links.append(line)

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


def plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


def bundle(count: int, speeds: set[int]) -> str:
    return f"{count}{TIMES}{next(iter(speeds))}G" if len(speeds) == 1 else plural(count, "link")


def per_pair(pairs: Counter, what: str = "pair") -> str:
    low, high = min(pairs.values()), max(pairs.values())
    return f"{low} per {what}" if low == high else f"{low}{DASH}{high} per {what}"


UNIT_TEXT = 10  # font size inside unit and switch boxes


def min_width(option_lists: list[list[str]], size: float, shortest: bool = False) -> float:
    """Width that a box needs for its lines: at full detail, or with the shortest options."""
    if shortest:
        return max(text_width(options[-1], MIN_FONT) for options in option_lists) + 2 * PAD
    return max(text_width(options[0], size) for options in option_lists) + 2 * PAD


def row_width(span: float, count: int, gap: float = UNIT_GAP) -> float:
    return (span - gap * (count - 1)) / count


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
        return bundle(count, self.speeds[tier])


LABEL_STEPS = (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82)


def place_line_labels(canvas: Canvas, lines: list[tuple[tuple[float, float], tuple[float, float], str]]) -> bool:
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
