"""The GB200 NVL72 example's compute fabric against NVIDIA's DGX SuperPOD GB200 reference
architecture: "NVIDIA DGX SuperPOD: Next Generation Scalable Infrastructure for AI Leadership
Reference Architecture Featuring NVIDIA DGX GB200", RA-11338-001 V01 (2025-06-16), at
https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-gb200/latest/network-fabrics.html

The figures below are the RA's, each quoted where it is stated; every count the test checks is
worked out from them by hand in comments, never taken from the code under test.

4.2 Compute Fabric: "Each SU contains 4 SLGs to match with the number of IB rails (which equals the
number of GPUs per compute tray). There are 8 leaf switches (one for each compute rack) and 6 spine
switches in each SLG allowing a fully non-blocking fat tree topology for each SU to be attached to 6
core groups." Table 4.1 "Larger SuperPOD component counts" (per row: GPUs, SUs, core groups,
switches per core group, core switches, IB leaf per SU / total, IB spine per SU / total):
1152 2 6 3 18 32 64 24 48; 2304 4 6 6 36 32 128 24 96; 4608 8 6 12 72 32 256 24 192;
9216 16 6 24 144 32 512 24 384. Table 3.1: compute fabric "NVIDIA Quantum QM9700 InfiniBand
switches". 3.1.1: "The compute tray integrates four ConnectX-7 (CX-7) NICs to support InfiniBand
NDR (400Gbps)"; 18 compute trays per rack, 8 racks per SU.

The RA gives no cable counts for this fabric: the node-leaf and leaf-spine counts checked here
follow from its figures (4 NICs per tray; a non-blocking leaf sends up what it takes down).
Two RA sentences are not modelled: Table 3.1 says "eight NDR400 connections per system" (the
tray has four NICs; the phrase reads as carried over from DGX B200) and 4.2 says traffic
"between different rails, traverses the spine layer", which 6 spines per rail-group cannot do
for a leaf whose 18 uplinks all go to its own group's spines: the model follows the SLG counts.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from clusterforge.topology import load
from clusterforge.topology.render import bom
from tests.paths import NVL72_EXAMPLE as EXAMPLE
from tests.unit.clusterforge.topology.test_schema import line_of, refused_edit

RA_RAILS = 4  # SLGs per SU = IB rails = GPUs per tray
RA_RACKS_PER_SU, RA_TRAYS_PER_RACK, RA_NICS_PER_TRAY = 8, 18, 4
RA_LEAVES_PER_SLG, RA_SPINES_PER_SLG, RA_CORE_GROUPS = 8, 6, 6
RA_LEAVES_PER_SU, RA_SPINES_PER_SU = 32, 24  # Table 4.1, every row
# Table 4.1: SUs -> (switches per core group, core switches, leaf total, spine total)
RA_TABLE_4_1 = {2: (3, 18, 64, 48), 4: (6, 36, 128, 96), 8: (12, 72, 256, 192), 16: (24, 144, 512, 384)}


def test_the_ra_figures_agree_with_each_other():
    assert RA_LEAVES_PER_SU == RA_RAILS * RA_LEAVES_PER_SLG == RA_RAILS * RA_RACKS_PER_SU
    assert RA_SPINES_PER_SU == RA_RAILS * RA_SPINES_PER_SLG
    for sus, (per_group, cores, leaves, spines) in RA_TABLE_4_1.items():
        assert (cores, leaves, spines) == (RA_CORE_GROUPS * per_group, sus * 32, sus * 24)
        # Non-blocking: a spine takes 8 leaves x 3 links = 24 down and sends 24 up; the cores
        # (64-port QM9700) hold every spine uplink: sus * 24 spines * 24 / 64.
        assert cores * 64 == sus * RA_SPINES_PER_SU * 24


def _compute(plan):
    return plan.fabrics["compute"]


def test_one_su_matches_the_ra_compute_fabric():
    plan = load(EXAMPLE)
    fabric = _compute(plan)
    assert fabric.spec.switch.model == "QM9700"
    tiers = Counter(switch.tier for switch in fabric.switches)
    assert tiers == {"leaf": RA_LEAVES_PER_SU, "spine": RA_SPINES_PER_SU}  # one SU: no core tier
    links = Counter(link.tier for link in fabric.links)
    # 8 racks x 18 trays x 4 NICs = 576 node-leaf; 32 leaves x 18 uplinks (non-blocking) = 576.
    assert links == {"node-leaf": 576, "leaf-spine": 576}
    # One leaf per rack and rail: its 18 downlinks are the 18 trays of one NVLink rack.
    racks = {host.name: number for number, (_, trays) in enumerate(_domains(plan)) for host in trays}
    leaf_racks = defaultdict(set)
    for link in fabric.links:
        if link.tier == "node-leaf":
            leaf_racks[link.b].add(racks[link.a])
    assert len(leaf_racks) == RA_LEAVES_PER_SU and all(len(r) == 1 for r in leaf_racks.values())
    assert Counter(link.b for link in fabric.links if link.tier == "node-leaf") == dict.fromkeys(leaf_racks, 18)
    # Spine-leaf groups: a rail's 8 leaves reach only that rail's 6 spines, 3 links to each.
    rail = {switch.name: switch.rail for switch in fabric.switches}
    pairs = Counter((link.a, link.b) for link in fabric.links if link.tier == "leaf-spine")
    assert all(rail[a] == rail[b] for a, b in pairs)
    assert set(pairs.values()) == {18 // RA_SPINES_PER_SLG}
    per_rail = Counter(rail[s.name] for s in fabric.switches if s.tier == "spine")
    assert per_rail == dict.fromkeys(range(1, RA_RAILS + 1), RA_SPINES_PER_SLG)
    # The bill lists the same switches.
    lines = {(line.item, line.fabric, line.tier): line.quantity for line in bom.bill(plan)}
    assert lines["QM9700", "compute", "leaf"] == RA_LEAVES_PER_SU
    assert lines["QM9700", "compute", "spine"] == RA_SPINES_PER_SU


def _domains(plan):
    from clusterforge.topology import nvlink

    return nvlink.named_domains(plan.topology, plan.hosts)


def _scaled(tmp_path, sus: int):
    text = EXAMPLE.read_text()
    text = text.replace("scalable_units:\n  count: 1\n", f"scalable_units:\n  count: {sus}\n")
    text = text.replace("inband: 10.150.0.0/23", "inband: 10.150.0.0/16").replace(
        "oob: 10.151.0.0/23", "oob: 10.151.0.0/16"
    )
    for rail in range(4):
        text = text.replace(f"- 10.160.{rail}.0/24", f"- 10.{161 + rail}.0.0/16")
    path = tmp_path / f"gb200-{sus}su.topology.yml"
    path.write_text(text)
    return load(path)


@pytest.mark.parametrize("sus", sorted(RA_TABLE_4_1))
def test_scale_out_matches_ra_table_4_1(tmp_path, sus):
    per_group, cores, leaves, spines = RA_TABLE_4_1[sus]
    fabric = _compute(_scaled(tmp_path, sus))
    tiers = Counter(switch.tier for switch in fabric.switches)
    assert tiers == {"leaf": leaves, "spine": spines, "core": cores}
    groups = Counter(
        name.split("-cg")[1].split("-")[0] for name in (s.name for s in fabric.switches if s.tier == "core")
    )
    assert groups == {str(k): per_group for k in range(1, RA_CORE_GROUPS + 1)}
    links = Counter(link.tier for link in fabric.links)
    # Non-blocking at every tier: as many links up as down.
    assert links == {"node-leaf": sus * 576, "leaf-spine": sus * 576, "spine-core": sus * 576}
    # Units meet only at the cores: each unit is a pod (Slurm switches, NCCL pair distances).
    assert {leaf: pod for leaf, pod in fabric.leaf_pods.items()} == {
        s.name: s.unit for s in fabric.switches if s.tier == "leaf"
    }
    # Spine k of each group goes to core group k only.
    for link in fabric.links:
        if link.tier == "spine-core":
            assert link.a.endswith(f"spine{int(link.b.split('-cg')[1].split('-')[0]):02d}"), link


def _refused(tmp_path, old: str, new: str) -> tuple[str, str]:
    return refused_edit(tmp_path, EXAMPLE.read_text(), old, new)


def test_spine_leaf_groups_without_nvlink_domain_refused_at_itsline_of(tmp_path):
    text = EXAMPLE.read_text()
    section = text[text.index("\nnvlink_domain:") + 1 : text.index("\nfabrics:") + 1]
    assert section.startswith("nvlink_domain:") and section.endswith("[18]\n")
    message, text = _refused(tmp_path, section, "")
    line = line_of(text, "spine_leaf_groups: true")
    assert f"bad.topology.yml:{line}: fabrics.compute.spine_leaf_groups: " in message, message
    assert "no nvlink_domain; expected an nvlink_domain section, or spine_leaf_groups: false" in message


def test_spine_leaf_groups_on_a_plain_fat_tree_refused(tmp_path):
    old = "    topology: fat_tree\n    oversubscription: 3\n"
    message, _ = _refused(tmp_path, old, old + "    spine_leaf_groups: true\n")
    assert "fabrics.inband: " in message and "spine_leaf_groups applies to rail_optimized_fat_tree only" in message


def test_a_leaf_too_small_for_a_rack_refused(tmp_path):
    message, text = _refused(tmp_path, "switch: {model: QM9700, radix: 64", "switch: {model: QM9700, radix: 32")
    assert f":{line_of(text, 'radix: 32')}: fabrics.compute.switch.radix: " in message, message
    assert "takes its 18 trays on 18 ports and sends 18 up, 36 ports, more than the switch radix 32" in message
