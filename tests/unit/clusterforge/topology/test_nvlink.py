"""Rack-scale NVLink domains: the GB200 NVL72 example against NVIDIA's published figures, and
each count that does not fit refused at validate with file:line: field and what is valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.topology import load, nvlink
from clusterforge.topology.render import bom
from clusterforge.topology.render.summary import summarise
from tests.paths import NVL72_EXAMPLE as EXAMPLE
from tests.paths import SUPERPOD
from tests.unit.clusterforge.topology.test_schema import line_of, refused_edit

TEXT = EXAMPLE.read_text()


def test_example_matches_nvidia_reference_figures():
    # NVIDIA DGX SuperPOD GB200 reference architecture (docs.nvidia.com/dgx-superpod/
    # reference-architecture-scalable-infrastructure-gb200): "DGX SuperPOD Architecture" page,
    # "a single SU (8 DGX GB200 rack systems)", 1.2 MW TDP per SU; "Key Components" page, DGX
    # GB200 rack system: 72 GPUs in a rack-scale NVLink domain; NVIDIA Mission Control (BCM)
    # manual, "NVLink Switch Integration": "9 NVLink switch trays per rack". GB200 NVL72:
    # 18 compute trays of 2 GB200 superchips (4 GPUs), about 120-140 kW per rack.
    plan = load(EXAMPLE)
    domains = nvlink.domains(plan.topology, plan.hosts)
    domain, problems = nvlink.resolve(plan.topology.nvlink_domain)
    assert problems == []
    assert len(domains) == 8  # racks per SU
    assert [len(trays) for trays in domains] == [18] * 8  # compute trays per rack
    assert domain.gpus == 72 and domain.gpus_per_tray == 4 and domain.switch_trays_per_rack == 9
    assert sum(plan.topology.node_types[h.node_type].gpu.count for trays in domains for h in trays) == 576
    assert domains[0][0].name == "gb001" and domains[7][-1].name == "gb144"
    rack_kw = nvlink.rack_power_w(plan.topology, domain) / 1000
    assert 120 <= rack_kw <= 140
    assert 8 * rack_kw <= 1200  # within the SU's 1.2 MW
    # One NIC per GPU on a 4-rail, rail-optimised compute fabric: 576 node-leaf links.
    compute = plan.fabrics["compute"]
    assert compute.spec.rails == 4
    assert sum(1 for link in compute.links if link.tier == "node-leaf") == 576
    lines = {(line.category, line.tier): line for line in bom.bill(plan)}
    assert lines["nvlink", "switch tray"].quantity == 72
    assert lines["nvlink", "rack"].quantity == 8
    assert lines["nvlink", "rack"].item == f"liquid-cooled rack, {rack_kw:.1f} kW"


# NVIDIA Technical Blog, "NVIDIA Contributes NVIDIA GB200 NVL72 Designs to Open Compute Project"
# (2024-10-15, https://developer.nvidia.com/blog/nvidia-contributes-nvidia-gb200-nvl72-designs-to-open-compute-project/):
# "four NVLink cartridges mounted vertically at the rear of the rack" ... "These cartridges accommodate
# over 5,000 active copper cables". (Read as quoted verbatim by several public write-ups; the page itself
# is not in the stored corpus.) NVIDIA gives the cable count only as "over 5,000" and publishes no
# cables-per-link figure, so the model counts cartridges and links, not single copper cables.
NVIDIA_CARTRIDGES_PER_RACK = 4
# DGX SuperPOD GB200 RA (RA-11338-001), 4.1 Multi-node NVLink Fabric: "Each NVLink switch tray is
# equipped with 2 NVLink switch chips" ... "Each B200 GPU features 18 NVL5 links and has one dedicated
# NVL5 link connectivity to each one of the 18 switch chips".
RA_SWITCH_CHIPS_PER_TRAY, RA_LINKS_PER_GPU = 2, 18


def test_nvlink_wiring_in_bom_and_show_matches_nvidia_figures():
    plan = load(EXAMPLE)
    lines = {(line.category, line.tier): line for line in bom.bill(plan)}
    racks = 8
    assert lines["nvlink", "cable cartridge"].quantity == racks * NVIDIA_CARTRIDGES_PER_RACK  # 32
    links = lines["nvlink", "link"].quantity
    assert links == racks * 72 * RA_LINKS_PER_GPU  # 10,368: 1,296 per rack
    # The same links counted from the switch side: 9 trays x 2 chips, one port per GPU each.
    assert links == racks * 9 * RA_SWITCH_CHIPS_PER_TRAY * 72
    # Parts of the rack: counted, no price or power of their own (the rack line carries neither).
    assert lines["nvlink", "cable cartridge"].price_usd == lines["nvlink", "link"].power_w == 0
    shown = summarise(plan)["nvlink"]
    assert shown == {
        "domains": 8,
        "gpus_per_domain": 72,
        "racks": racks,
        "switch_trays": racks * 9,
        "cable_cartridges": racks * NVIDIA_CARTRIDGES_PER_RACK,
        "links": links,
        "rack_kw": 134.1,
        "cooling": "liquid",
    }


def test_nvl36x2_has_no_published_cartridge_count_so_none_is_billed():
    plan = load(EXAMPLE)
    spec = plan.topology.nvlink_domain.model_copy(update={"preset": "gb200_nvl36x2"})
    domain, _ = nvlink.resolve(spec)
    assert domain.cable_cartridges_per_rack is None and domain.nvlink_links == 72 * RA_LINKS_PER_GPU
    given = spec.model_copy(update={"cable_cartridges_per_rack": 2})
    assert nvlink.resolve(given)[0].cable_cartridges_per_rack == 2  # a field overrides the preset


def _refused(tmp_path: Path, old: str, new: str) -> tuple[str, str]:
    return refused_edit(tmp_path, TEXT, old, new)


@pytest.mark.parametrize(
    ("old", "new", "needle", "field", "expected"),
    [
        (
            "  preset: gb200_nvl72\n",
            "  preset: gb200_nvl72\n  gpus: 70\n",
            "gpus: 70",
            "nvlink_domain.gpus",
            "does not divide into whole trays of 4; expected a multiple of 4 (such as 68 or 72)",
        ),
        (
            "  preset: gb200_nvl72\n",
            "  preset: gb200_nvl72\n  gpus_per_tray: 8\n  gpus: 144\n",
            "gpus_per_tray: 8",
            "nvlink_domain.gpus_per_tray",
            "8 GPUs per tray, but a tray holds 4; expected 1 to 4",
        ),
        (
            "block_sizes: [18]",
            "block_sizes: [18, 5]",
            "block_sizes: [18, 5]",
            "nvlink_domain.block_sizes.1",
            "block size 5 does not divide the domain of 18 trays; expected one of 1, 2, 3, 6, 9, 18",
        ),
        (
            "rack_power_budget_kw: 140",
            "rack_power_budget_kw: 100",
            "rack_power_budget_kw: 100",
            "sites.0.rack_power_budget_kw",
            "draws 134.1 kW, over site dc1's rack budget of 100 kW; expected racks of at most 100 kW",
        ),
        (
            "nodes_per_unit: 144",
            "nodes_per_unit: 140",
            "",
            "nvlink_domain.node_type",
            "140 hosts of node type 'gb200_tray' do not fill whole NVLink domains of 18 trays; expected a multiple",
        ),
    ],
)
def test_bad_domain_refused_with_file_line_field(tmp_path, old, new, needle, field, expected):
    message, text = _refused(tmp_path, old, new)
    line = _nvlink_node_typeline_of(text) if field == "nvlink_domain.node_type" else line_of(text, needle)
    assert f"bad.topology.yml:{line}: {field}: " in message, message
    assert expected in message, message


def _nvlink_node_typeline_of(text: str) -> int:
    start = line_of(text, "nvlink_domain:")
    return next(n for n, line in enumerate(text.splitlines(), 1) if n > start and "node_type:" in line)


def test_preset_fields_needed_without_a_preset(tmp_path):
    message, text = _refused(tmp_path, "  preset: gb200_nvl72\n", "")
    line = line_of(text, "nvlink_domain:")
    assert f"bad.topology.yml:{line}: nvlink_domain.gpus: required without a preset" in message


def test_gpus_per_tray_must_match_the_node_type(tmp_path):
    message, text = _refused(
        tmp_path, "  preset: gb200_nvl72\n", "  preset: gb200_nvl72\n  gpus: 36\n  gpus_per_tray: 2\n"
    )
    line = line_of(text, "gpus_per_tray: 2")
    assert f":{line}: nvlink_domain.gpus_per_tray: 2 GPUs per tray, but node type 'gb200_tray' has 4" in message


def test_nvl36x2_spans_two_racks_per_domain():
    plan = load(EXAMPLE)
    spec = plan.topology.nvlink_domain.model_copy(update={"preset": "gb200_nvl36x2"})
    domain, problems = nvlink.resolve(spec)
    assert problems == [] and domain.racks == 2 and domain.trays_per_rack == 9 and domain.trays == 18


# --- render ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered():
    from clusterforge.topology.render import files

    plan = load(EXAMPLE)
    return plan, files(plan)


def test_block_topology_has_one_block_per_domain(rendered):
    _, found = rendered
    lines = [line for line in found["slurm/topology.block.conf"].splitlines() if not line.startswith("#")]
    assert lines[0] == "BlockName=nvl01 Nodes=gb[001-018]"
    assert lines[7] == "BlockName=nvl08 Nodes=gb[127-144]"
    assert lines[8:] == ["BlockSizes=18"]


def test_imex_node_list_holds_each_domains_tray_addresses(rendered):
    plan, found = rendered
    domains = nvlink.domains(plan.topology, plan.hosts)
    for number, trays in enumerate(domains, 1):
        text = found[f"imex/nvl{number:02d}/nodes_config.cfg"]
        assert text.splitlines() == [plan.interface_addresses(host)["inband"] for host in trays]
    assert (
        len(set(found["imex/nvl01/nodes_config.cfg"].split()) & set(found["imex/nvl02/nodes_config.cfg"].split())) == 0
    )


def test_nccl_multi_node_nvlink_only_for_domain_trays(rendered):
    _, found = rendered
    tray = found["nccl/gb200_tray.env"].splitlines()
    for setting in ("NCCL_MNNVL_ENABLE=1", "NCCL_NVLS_ENABLE=1", "NCCL_CUMEM_ENABLE=1"):
        assert setting in tray
    superpod = files_of(SUPERPOD)
    assert "MNNVL" not in superpod["nccl/dgx_h100.env"]
    assert not any(name.startswith("imex/") or name.endswith("block.conf") for name in superpod)


def files_of(path: Path) -> dict[str, str]:
    from clusterforge.topology.render import files

    return files(load(path))


def test_compute_domains_and_labels(rendered):
    import yaml

    _, found = rendered
    domains = list(yaml.safe_load_all(found["kubernetes/compute-domains.yml"]))
    assert [d["metadata"]["name"] for d in domains] == [f"nvl72-nvl{n:02d}" for n in range(1, 9)]
    assert {d["kind"] for d in domains} == {"ComputeDomain"}
    assert {d["spec"]["numNodes"] for d in domains} == {18}
    labels = yaml.safe_load(found["kubernetes/nvlink-domain-labels.yml"])
    assert labels["gb018"] == {"clusterforge.io/nvlink-domain": "nvl01"}
    assert labels["gb019"] == {"clusterforge.io/nvlink-domain": "nvl02"}


# --- draw ------------------------------------------------------------------------------------


def test_drawing_shows_each_rack_with_its_domain_and_rails():
    import xml.etree.ElementTree as ET

    from clusterforge.topology.draw import render_svg
    from clusterforge.topology.draw.canvas import rail_colours

    svg = ET.fromstring(render_svg(load(EXAMPLE)))
    ns = "{http://www.w3.org/2000/svg}"
    racks = [rect for rect in svg.iter(f"{ns}rect") if rect.get("class") == "rack"]
    titles = [rect.find(f"{ns}title").text for rect in racks]
    assert titles[0] == "nvl01 rack 1: gb[001-018], 18 trays, 9 NVLink switch trays"
    assert titles[-1].startswith("nvl08 rack 1: gb[127-144]")
    assert len(racks) == 8
    texts = [text.text for text in svg.iter(f"{ns}text")]
    assert any(t and t.startswith("NVLink racks: 8 racks") and "134.1 kW liquid-cooled" in t for t in texts), texts
    assert texts.count("18 trays \u00b7 72 GPUs") == 8
    # Each rack box holds one stripe per scale-out rail (4), inside the box.
    for rack in racks:
        x, y, w, h = (float(rack.get(k)) for k in ("x", "y", "width", "height"))
        stripes = [
            r
            for r in svg.iter(f"{ns}rect")
            if r.get("height") == "6" and x <= float(r.get("x")) <= x + w and y <= float(r.get("y")) <= y + h
        ]
        assert len(stripes) == 4
        # In rail order, each in its rail's colours (the colours the compute fabric's leaves have).
        assert [(r.get("fill"), r.get("stroke")) for r in sorted(stripes, key=lambda r: float(r.get("x")))] == [
            rail_colours(rail) for rail in (1, 2, 3, 4)
        ]
    superpod = render_svg(load(SUPERPOD))
    assert "NVLink racks" not in superpod


def test_domain_that_would_span_two_scalable_units_is_refused(tmp_path):
    # 2 units of 27 trays: 54 trays make 3 whole domains, but the second would span both units.
    old = "scalable_units:\n  count: 1\n  nodes_per_unit: 144\n"
    message, text = _refused(tmp_path, old, "scalable_units:\n  count: 2\n  nodes_per_unit: 27\n")
    assert f":{_nvlink_node_typeline_of(text)}: nvlink_domain.node_type: scalable unit 1 holds 27 trays" in message
