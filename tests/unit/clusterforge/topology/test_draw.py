"""The fabric drawing: valid SVG, the right counts, and labels that stay on the page and
never overlap, from a single leaf up to a three-tier SuperPOD of 16 scalable units."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from clusterforge.topology import TopologyError, load
from clusterforge.topology.draw import render_svg
from tests.paths import PROJECT
from tests.unit.clusterforge.topology.test_fuzz import clusters

SVG = "{http://www.w3.org/2000/svg}"
SUPERPOD = PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml"
# Glyph width per unit of font size used to estimate label extents; DejaVu Sans and Arial
# average about 0.6 for digits and lower case.
GLYPH = 0.6


def _superpod_units(tmp_path: Path, units: int) -> Path:
    """The SuperPOD example with `units` scalable units and subnets large enough for them
    (/20 in-band and out-of-band, /22 per IPoIB rail up to 16 units)."""
    data = yaml.safe_load(SUPERPOD.read_text())
    data["scalable_units"]["count"] = units
    data["scalable_units"]["reserved_slots"][0]["unit"] = units
    wider = 0 if units <= 16 else 2
    data["addressing"]["inband"] = f"10.128.0.0/{20 - wider}"
    data["addressing"]["oob"] = f"10.129.0.0/{20 - wider}"
    data["addressing"]["ipoib"] = [f"10.{140 + rail}.0.0/{22 - wider}" for rail in range(8)]
    path = tmp_path / f"superpod-{units}.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


BASE = {
    "plugin": "topology",
    "sites": [{"name": "lab"}],
    "node_types": {
        "gpu4": {
            "gpu": {"model": "L40S", "count": 4},
            "hcas": [{"device": "mlx5_0", "netdev": "ib0", "pci": "0000:01:00.0", "rate_gbps": 200}],
        }
    },
    "addressing": {"inband": "10.0.0.0/22"},
}


def _write(tmp_path: Path, name: str, **fields) -> Path:
    data = copy.deepcopy(BASE) | {"cluster": {"name": name, "domain": f"{name}.example.com"}} | fields
    path = tmp_path / f"{name}.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _single_leaf(tmp_path: Path, model: str = "QM8700") -> Path:
    """Six nodes on one leaf; a storage fabric that nothing is cabled to comes along."""
    fabric = {"link_layer": "infiniband", "topology": "fat_tree"}
    return _write(
        tmp_path,
        "tiny",
        roles={"compute": {"node_type": "gpu4", "count": 6, "hostname": "gpu{index:02d}"}},
        fabrics={
            "storage": fabric | {"purpose": "storage", "switch": {"model": "SN", "radix": 32, "port_speed_gbps": 100}},
            "compute": fabric | {"purpose": "compute", "switch": {"model": model, "radix": 40, "port_speed_gbps": 200}},
        },
    )


def _many_units(tmp_path: Path, units: int, radix: int) -> Path:
    """A fat tree of `units` four-node units, one leaf each: wide enough to need aggregation."""
    return _write(
        tmp_path,
        f"units{units}",
        roles={"compute": {"node_type": "gpu4", "placement": "scalable_units", "hostname": "n{index:04d}"}},
        scalable_units={"count": units, "nodes_per_unit": 4},
        fabrics={
            "compute": {
                "purpose": "compute",
                "link_layer": "infiniband",
                "topology": "fat_tree",
                "switch": {"model": "SW", "radix": radix, "port_speed_gbps": 200},
            }
        },
        addressing={"inband": "10.0.0.0/20"},
    )


def _dragonfly(tmp_path: Path) -> Path:
    return _write(
        tmp_path,
        "dfly",
        roles={"compute": {"node_type": "gpu4", "count": 288, "hostname": "nid{index:04d}"}},
        fabrics={
            "compute": {
                "purpose": "compute",
                "link_layer": "ethernet",
                "topology": "dragonfly",
                "dragonfly": {
                    "terminals_per_router": 4,
                    "routers_per_group": 8,
                    "global_links_per_router": 4,
                    "groups": 9,
                },
                "switch": {"model": "Rosetta", "radix": 32, "port_speed_gbps": 200},
            }
        },
    )


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _labels(root: ET.Element) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each text element with its estimated box (left, top, right, bottom)."""
    found = []
    for element in root.iter(f"{SVG}text"):
        text, size = element.text or "", float(element.get("font-size"))
        x, y = float(element.get("x")), float(element.get("y"))
        width = GLYPH * size * len(text)
        left = {"start": x, "middle": x - width / 2, "end": x - width}[element.get("text-anchor", "start")]
        found.append((text, (left, y - 0.75 * size, left + width, y + 0.2 * size)))
    return found


def _texts(svg: str) -> list[str]:
    return [text for text, _ in _labels(_parse(svg))]


def _outside(root: ET.Element) -> list[str]:
    x0, y0, width, height = (float(v) for v in root.get("viewBox").split())
    return [
        text
        for text, (left, top, right, bottom) in _labels(root)
        if left < x0 or top < y0 or right > x0 + width or bottom > y0 + height
    ]


def _overlapping(root: ET.Element) -> list[tuple[str, str]]:
    labels = _labels(root)
    return [
        (a, b)
        for i, (a, (al, at, ar, ab)) in enumerate(labels)
        for b, (bl, bt, br, bb) in labels[i + 1 :]
        if al < br and bl < ar and at < bb and bt < ab
    ]


# --- the checks themselves ---------------------------------------------------------------------


def test_the_layout_checks_catch_overlap_and_overflow():
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 100">'
        '<text x="10" y="20" font-size="12" text-anchor="start">spine01</text>'
        '<text x="40" y="24" font-size="12" text-anchor="start">spine02</text>'
        '<text x="190" y="90" font-size="12" text-anchor="middle">too wide</text></svg>'
    )
    root = _parse(svg)
    assert _overlapping(root) == [("spine01", "spine02")]
    assert _outside(root) == ["too wide"]


# --- what the pictures say ---------------------------------------------------------------------


def test_superpod_four_units_shows_every_leaf_and_spine():
    svg = render_svg(load(SUPERPOD))
    texts = _texts(svg)
    # 128 hosts on the fabric: 127 DGX, counted as validate counts compute nodes, and the UFM appliance.
    for expected in ("32 leaf", "16 spine", "127 compute nodes", "1 management host", "1016 GPUs", "1024 links"):
        assert expected in texts
    # The fabric drawn is named, and its switches told apart from validate's total of all fabrics.
    assert texts[0] == "superpod \u00b7 compute fabric"
    assert "48 switches of 61 in all 3 fabrics:" in texts and "2 per pair" in texts
    assert load(SUPERPOD).switch_count() == 61
    assert (
        "node\u2013leaf: 1020\u00d7400G: 1016 from 127 compute nodes \u00b7 "
        "4 management links from ufm01 in 1 reserved slot" in texts
    )
    assert [t for t in texts if re.fullmatch(r"spine\d+", t)] == [f"spine{n:02d}" for n in range(1, 17)]
    assert [t for t in texts if t.startswith("SU")] == ["SU1", "SU2", "SU3", "SU4"]
    # eight rail leaves per unit, and each rail once in the legend
    assert texts.count("r1") == 4 + 1 and texts.count("r8") == 4 + 1
    # one bundle per unit (8 leaves x 32 uplinks), all alike: said once, beside the tier
    assert texts.count("256\u00d7400G") == 1 and "per unit" in texts
    assert "31 nodes \u00b7 248 GPUs" in texts  # unit 4: 31 DGX, and the UFM marked in its reserved slot
    assert texts.count("32 nodes \u00b7 256 GPUs") == 3
    assert not any("core" in t for t in texts)


def test_superpod_sixteen_units_collapses_into_pods(tmp_path):
    plan = load(_superpod_units(tmp_path, 16))
    texts = _texts(render_svg(plan))
    for expected in ("128 leaf", "128 spine", "64 core", "511 compute nodes", "4088 GPUs", "4096 links"):  # and the UFM
        assert expected in texts
    # Each spine's 32 uplinks go to 32 cores in turn: spines 1, 3, ... of every pod reach cores
    # 1-32, spines 2, 4, ... cores 33-64, so two groups of 32 cores serve the same spines.
    assert "64 core switches \u00b7 2 groups of 32" in texts
    assert [t for t in texts if t.startswith("pod ")] == [f"pod {n} \u00b7 32 spines" for n in range(1, 5)]
    assert [t for t in texts if t.startswith("SU")] == [f"SU{n}" for n in range(1, 17)]
    assert texts.count("8 leaves") == 16
    # each pod's spines up to the cores, all alike: said once
    assert texts.count("1024\u00d7400G") == 1 and "per pod" in texts
    assert texts.count("r1") == 1  # leaves are counted, not drawn one by one (r1 is the legend's)


def test_single_leaf_has_no_spine_tier(tmp_path):
    texts = _texts(render_svg(load(_single_leaf(tmp_path))))
    assert "1 leaf" in texts and "6 compute nodes" in texts and "24 GPUs" in texts
    assert "1 switch:" in texts
    assert "6 nodes \u00b7 24 GPUs" in texts
    assert not any("spine" in t for t in texts)


def test_dragonfly_groups_and_global_links(tmp_path):
    texts = _texts(render_svg(load(_dragonfly(tmp_path))))
    assert [t for t in texts if t.startswith("group ")] == [f"group {g}" for g in range(1, 10)]
    assert texts.count("8 routers") == 9 and texts.count("32 nodes") == 9
    assert "72 router" in texts and "288 compute nodes" in texts and "1152 GPUs" in texts
    caption = next(t for t in texts if t.startswith("global:"))
    assert "144\u00d7200G" in caption and "36 group pairs" in caption and "4 per pair" in caption


def test_many_identical_units_share_one_box(tmp_path):
    texts = _texts(render_svg(load(_many_units(tmp_path, 100, 128))))
    assert "SU1\u2013SU100" in texts and "100 units" in texts and "1 leaf each" in texts
    assert "SU7" not in texts


def test_many_pods_collapse_into_a_grid(tmp_path):
    texts = _texts(render_svg(load(_many_units(tmp_path, 512, 32))))
    assert [t for t in texts if t.startswith("pod ")] == [f"pod {n}" for n in range(1, 33)]
    assert texts.count("16 spines") == 32 and "SU17\u2013SU32" in texts
    assert "pods" in texts and "512 leaf" in texts


def test_other_fabrics_can_be_chosen():
    plan = load(SUPERPOD)
    texts = _texts(render_svg(plan, "inband"))
    assert "superpod \u00b7 inband fabric" in texts
    assert "5 leaf" in texts and "2 spine" in texts
    # a line per leaf-spine pair, all of 8 links: labelled once, beside the tier
    assert texts.count("8\u00d7100G") == 1 and "each line" in texts
    with pytest.raises(KeyError, match="no fabric"):
        render_svg(plan, "storage")


def test_the_compute_fabric_is_the_default_and_an_empty_fabric_says_so(tmp_path):
    plan = load(_single_leaf(tmp_path))
    assert "tiny \u00b7 compute fabric" in _texts(render_svg(plan))
    assert "no nodes are cabled to this fabric" in _texts(render_svg(plan, "storage"))


def test_text_is_escaped(tmp_path):
    svg = render_svg(load(_single_leaf(tmp_path, model='Q<M>&"87"')))
    assert any('Q<M>&"87"' in t for t in _texts(svg))


def test_a_plan_without_links_is_refused():
    with pytest.raises(ValueError, match="without its links"):
        render_svg(load(SUPERPOD, links=False))


# --- legibility ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pictures(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("draw")
    plan = load(SUPERPOD)
    return {
        "superpod-4": render_svg(plan),
        "superpod-4-inband": render_svg(plan, "inband"),
        "superpod-16": render_svg(load(_superpod_units(tmp, 16))),
        "superpod-64": render_svg(load(_superpod_units(tmp, 64))),
        "single-leaf": render_svg(load(_single_leaf(tmp))),
        "runs": render_svg(load(_many_units(tmp, 100, 128))),
        "pod-grid": render_svg(load(_many_units(tmp, 512, 32))),
        "dragonfly": render_svg(load(_dragonfly(tmp))),
    }


CASES = [
    "superpod-4",
    "superpod-4-inband",
    "superpod-16",
    "superpod-64",
    "single-leaf",
    "runs",
    "pod-grid",
    "dragonfly",
]


@pytest.mark.parametrize("case", CASES)
def test_labels_stay_inside_the_picture(pictures, case):
    assert _outside(_parse(pictures[case])) == []


@pytest.mark.parametrize("case", CASES)
def test_no_two_labels_overlap(pictures, case):
    assert _overlapping(_parse(pictures[case])) == []


@pytest.mark.parametrize("case", CASES)
def test_labels_are_readable_sizes(pictures, case):
    sizes = {float(t.get("font-size")) for t in _parse(pictures[case]).iter(f"{SVG}text")}
    assert min(sizes) >= 9


# --- rails, node rows, ports and names ----------------------------------------------------------


def _rects(root: ET.Element, css: str) -> list[ET.Element]:
    """The rects whose class list holds css."""
    return [r for r in root.iter(f"{SVG}rect") if css in (r.get("class") or "").split()]


def _title(element: ET.Element) -> str:
    title = element.find(f"{SVG}title")
    return title.text if title is not None else ""


def test_every_leaf_is_coloured_by_its_rail_with_a_legend():
    from clusterforge.topology.draw.canvas import RAIL_COLOURS

    root = _parse(render_svg(load(SUPERPOD)))
    leaves = _rects(root, "leaf")
    assert len(leaves) == 32
    for leaf in leaves:
        rail = int(re.search(r": rail (\d+),", _title(leaf))[1])
        assert leaf.get("stroke") == RAIL_COLOURS[rail - 1]
    texts = _texts(ET.tostring(root, encoding="unicode"))
    assert "rails:" in texts and all(texts.count(f"r{n}") == 5 for n in range(1, 9))
    swatches = {r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("width") == "11"}
    assert set(RAIL_COLOURS) <= swatches


@pytest.mark.parametrize("units", [8, 16])
def test_rail_stripes_stay_when_units_collapse(tmp_path, units):
    from clusterforge.topology.draw.canvas import RAIL_COLOURS

    root = _parse(render_svg(load(_superpod_units(tmp_path, units))))
    assert _rects(root, "leaf") == []  # leaves are no longer drawn one by one
    stripes = _rects(root, "rail")
    assert len(stripes) == 8 * units
    assert [s.get("fill") for s in stripes[:8]] == list(RAIL_COLOURS)
    assert _title(stripes[0]) == "rail 1: compute-su1-r1-leaf1"


def test_a_node_row_per_unit_marks_the_reserved_slot():
    root = _parse(render_svg(load(SUPERPOD)))
    rows = _rects(root, "node-row")
    assert len(rows) == 4 and _title(rows[0]) == "SU1: 32 node slots (dgx001 \u2026 dgx032)"
    assert len(_rects(root, "slot")) == 4 * 32
    reserved = _rects(root, "reserved")
    assert [_title(r) for r in reserved] == ["SU4 slot 32 reserved: UFM fabric manager appliance (ufm01)"]
    texts = _texts(ET.tostring(root, encoding="unicode"))
    assert "reserved slot (management)" in texts
    caption = next(t for t in texts if t.startswith("node\u2013leaf:"))
    assert caption.endswith("4 management links from ufm01 in 1 reserved slot")


def test_collapsed_units_keep_a_node_row(tmp_path):
    root = _parse(render_svg(load(_superpod_units(tmp_path, 16))))
    assert len(_rects(root, "node-row")) == 16


def test_collapsed_pods_keep_a_node_row(tmp_path):
    rows = _rects(_parse(render_svg(load(_many_units(tmp_path, 512, 32)))), "node-row")
    assert len(rows) == 32 and _title(rows[0]) == "pod 1: 64 nodes in 16 units"


def test_each_leaf_has_its_port_budget():
    root = _parse(render_svg(load(SUPERPOD)))
    titles = {_title(leaf).split(":")[0]: _title(leaf) for leaf in _rects(root, "leaf")}
    assert titles["compute-su1-r1-leaf1"] == "compute-su1-r1-leaf1: rail 1, 32 down, 32 up of 64"
    # SU4 has 31 DGX; the UFM in its reserved slot is cabled to rails 1-4 only
    assert titles["compute-su4-r5-leaf1"] == "compute-su4-r5-leaf1: rail 5, 31 down, 32 up of 64"
    texts = _texts(ET.tostring(root, encoding="unicode"))
    assert "ports per switch: leaf 31\u201332 down, 32 up of 64; spine 64 down of 64" in texts


@pytest.mark.parametrize("units", [4, 16])
def test_every_switch_has_a_title_with_its_cabling_plan_name(tmp_path, units):
    plan = load(SUPERPOD if units == 4 else _superpod_units(tmp_path, units))
    root = _parse(render_svg(plan))
    titles = " ".join(t.text for t in root.iter(f"{SVG}title"))
    names = set(re.findall(r"compute-[\w-]+", titles))
    assert names == {s.name for s in plan.fabrics["compute"].switches}


def test_dragonfly_header_names_p_a_h_g_and_every_router(tmp_path):
    plan = load(_dragonfly(tmp_path))
    root = _parse(render_svg(plan))
    texts = _texts(ET.tostring(root, encoding="unicode"))
    assert any("p=4 a=8 h=4 g=9" in t for t in texts)
    routers = [_title(r) for r in _rects(root, "router")]
    assert sorted(routers) == sorted(s.name for s in plan.fabrics["compute"].switches)


def test_a_single_leaf_is_drawn_on_a_narrow_page(tmp_path):
    from clusterforge.topology.draw.canvas import NARROW, WIDTH

    root = _parse(render_svg(load(_single_leaf(tmp_path))))
    assert float(root.get("width")) == NARROW < WIDTH
    unit = _rects(root, "unit")[0]
    right = float(unit.get("x")) + float(unit.get("width"))
    assert right <= NARROW and right > NARROW / 2  # the drawing fills the page, no empty half


def test_the_readme_drawing_is_the_draw_commands_output():
    """docs/superpod-compute.svg, embedded in the README, is what `topology draw` makes now."""
    committed = (PROJECT / "docs" / "superpod-compute.svg").read_text()
    assert committed == render_svg(load(SUPERPOD)), (
        "stale: clusterforge topology draw inventories/examples/h100-superpod.topology.yml -o docs/superpod-compute.svg"
    )
    assert "![" in (readme := (PROJECT / "README.md").read_text()) and "(docs/superpod-compute.svg)" in readme


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=clusters())
def test_any_fabric_the_generators_build_is_drawn(tmp_path, data):
    """Random well-formed clusters (test_fuzz's): every one that loads draws as valid SVG whose
    switches all have titles."""
    path = tmp_path / "t.topology.yml"
    path.write_text(yaml.safe_dump({"plugin": "topology", **data}))
    try:
        plan = load(path)
    except (TopologyError, ValueError):
        return  # refused: test_fuzz covers how
    root = _parse(render_svg(plan))
    assert root.tag == f"{SVG}svg"
    titles = " ".join(t.text or "" for t in root.iter(f"{SVG}title"))
    fabric = plan.fabrics[plan.gpu_fabric or next(iter(plan.fabrics))]
    if fabric.spec.topology != "dragonfly" and len(fabric.switches) <= 64:
        assert all(s.name in titles for s in fabric.switches)


def test_each_rail_can_be_followed_from_its_leaves_to_every_spine():
    """The SuperPOD's leaf-spine links as a lane per rail in the rail's colour: every leaf of the
    rail drops from its box to the lane, and the lane rises into every spine's box (each leaf
    reaches all 16 spines), so no rail is lost in one grey band."""
    from clusterforge.topology.draw.canvas import RAIL_COLOURS

    root = _parse(render_svg(load(SUPERPOD)))
    spines = {_title(r).split(":")[0]: r for r in _rects(root, "spine")}
    leaves = {_title(r).split(":")[0]: r for r in _rects(root, "leaf")}
    assert len(spines) == 16 and len(leaves) == 32
    lines = list(next(g for g in root.iter(f"{SVG}g") if g.get("class") == "links").iter(f"{SVG}line"))
    lanes = [line for line in lines if _title(line).startswith("rail ")]
    assert [_title(lane) for lane in lanes] == [f"rail {r}: 128 links from 4 leaves to 16 spines" for r in range(1, 9)]
    assert not list(root.iter(f"{SVG}polygon"))  # no grey bundle over them
    for rail, lane in enumerate(lanes, start=1):
        colour, lane_y = RAIL_COLOURS[rail - 1], float(lane.get("y1"))
        assert lane.get("stroke") == colour and lane.get("y2") == lane.get("y1")
        verticals = [
            line
            for line in lines
            if line.get("stroke") == colour and line is not lane and line.get("x1") == line.get("x2")
        ]
        ends = {(float(v.get("x1")), float(v.get("y1")), float(v.get("y2"))) for v in verticals}
        for name, box in spines.items():  # a tap from the lane up to the bottom of each spine's box
            x0, bottom = float(box.get("x")), float(box.get("y")) + float(box.get("height"))
            assert any(x0 < x < x0 + float(box.get("width")) and y1 == lane_y and y2 == bottom for x, y1, y2 in ends), (
                rail,
                name,
            )
        own = [box for name, box in leaves.items() if f"-r{rail}-" in name]
        assert len(own) == 4
        for box in own:  # a drop from the top of each of the rail's leaves to the lane
            centre = float(box.get("x")) + float(box.get("width")) / 2
            assert any(abs(x - centre) < 0.1 and y1 == float(box.get("y")) and y2 == lane_y for x, y1, y2 in ends)
        x0, x1 = sorted((float(lane.get("x1")), float(lane.get("x2"))))
        assert all(x0 - 0.1 <= x <= x1 + 0.1 for x, _, _ in ends)  # the lane joins them all
