"""Fabric generators against numbers worked out by hand: switches, links, ports and radix."""

from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from pathlib import Path

import pytest
import yaml

from clusterforge.topology import TopologyError, load
from clusterforge.topology.fabric import FabricPlan
from tests.paths import PROJECT

EXAMPLES = PROJECT / "inventories" / "examples"


def ports_by_switch(plan: FabricPlan) -> dict[str, list[int]]:
    """Every switch port a link uses; a link's `a` side is a switch unless it is a host."""
    switches = {s.name for s in plan.switches}
    used: dict[str, list[int]] = defaultdict(list)
    for link in plan.links:
        assert link.b in switches, link
        used[link.b].append(link.b_port)
        if link.a in switches:
            used[link.a].append(int(link.a_port))
    return used


def assert_cabling_is_sound(plan: FabricPlan) -> None:
    """No port above the radix, no port used twice, every switch reachable from every other."""
    radix = plan.spec.switch.radix
    for switch, ports in ports_by_switch(plan).items():
        assert len(ports) == len(set(ports)), f"{switch} uses a port twice"
        assert all(1 <= port <= radix for port in ports), f"{switch} uses a port outside 1..{radix}"
    names = {s.name for s in plan.switches}
    neighbours: dict[str, set[str]] = defaultdict(set)
    for link in plan.links:
        if link.a in names:
            neighbours[link.a].add(link.b)
            neighbours[link.b].add(link.a)
    start = plan.switches[0].name
    seen, todo = {start}, deque([start])
    while todo:
        for other in neighbours[todo.popleft()] - seen:
            seen.add(other)
            todo.append(other)
    assert seen == names, f"{len(names - seen)} switches are not connected to {start}"


def by_tier(plan: FabricPlan) -> tuple[Counter, Counter]:
    return Counter(s.tier for s in plan.switches), Counter(link.tier for link in plan.links)


def cluster(
    tmp_path: Path,
    *,
    fabric: dict,
    hcas: int = 1,
    count: int | None = None,
    units: tuple[int, int] | None = None,
    radix: int = 64,
) -> Path:
    """A cluster of identical compute nodes with `hcas` ports each on one compute fabric."""
    role = {"node_type": "node", "hostname": "n{index:05d}"}
    if units:
        role["placement"] = "scalable_units"
    else:
        role["count"] = count
    data = {
        "plugin": "topology",
        "cluster": {"name": "t", "domain": "t.example.com"},
        "sites": [{"name": "dc1"}],
        "node_types": {
            "node": {
                "hcas": [
                    {"device": f"mlx5_{i}", "netdev": f"ib{i}", "pci": f"0000:{i + 1:02x}:00.0", "rate_gbps": 400}
                    for i in range(hcas)
                ]
            }
        },
        "roles": {"compute": role},
        "fabrics": {
            "compute": {
                "purpose": "compute",
                "link_layer": "infiniband",
                "switch": {"model": "test", "radix": radix, "port_speed_gbps": 400},
                **fabric,
            }
        },
        "addressing": {"inband": "10.0.0.0/8"},
    }
    if units:
        data["scalable_units"] = {"count": units[0], "nodes_per_unit": units[1]}
    path = tmp_path / "cluster.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# --- the examples ------------------------------------------------------------------------------


EXAMPLE_COUNTS = {
    # file: hosts, GPUs, {fabric: (switches per tier, links per tier)}
    # 127 DGX, the UFM appliance, 2 head and 2 login hosts; 127 x 8 DGX ports + 4 UFM ports.
    "h100-superpod": (
        132,
        1016,
        {
            "compute": ({"leaf": 32, "spine": 16}, {"node-leaf": 1020, "leaf-spine": 32 * 16 * 2}),
            "inband": ({"leaf": 5, "spine": 2}, {"node-leaf": 132, "leaf-spine": 5 * 16}),
            "oob": ({"leaf": 5, "spine": 1}, {"node-leaf": 132, "leaf-spine": 5 * 8}),
        },
    ),
    "pcie-roce-small": (
        9,
        32,
        {
            "compute": ({"leaf": 1}, {"node-leaf": 16}),
            "inband": ({"leaf": 1}, {"node-leaf": 9}),
            "oob": ({"leaf": 1}, {"node-leaf": 9}),
        },
    ),
    "dragonfly-1k": (
        1287,
        5120,
        {
            "compute": ({"router": 80}, {"terminal": 1280, "local": 5 * 16 * 15 // 2, "global": 10 * 128}),
            "inband": ({"leaf": 27, "spine": 8}, {"node-leaf": 1287, "leaf-spine": 27 * 16}),
            "oob": ({"leaf": 33, "spine": 8}, {"node-leaf": 1287, "leaf-spine": 33 * 8}),
        },
    ),
}


@pytest.mark.parametrize(("name", "expected"), EXAMPLE_COUNTS.items(), ids=EXAMPLE_COUNTS.keys())
def test_example_counts(name, expected):
    hosts, gpus, fabrics = expected
    plan = load(EXAMPLES / f"{name}.topology.yml")
    assert len(plan.hosts) == hosts
    node_types = plan.topology.node_types
    assert sum(node_types[h.node_type].gpu.count for h in plan.hosts if node_types[h.node_type].gpu) == gpus
    assert set(plan.fabrics) == set(fabrics)
    for fabric_name, (switches, links) in fabrics.items():
        fabric = plan.fabrics[fabric_name]
        assert by_tier(fabric) == (Counter(switches), Counter(links)), fabric_name
        if len(fabric.switches) > 1:
            assert_cabling_is_sound(fabric)
    # Every host has an address in every subnet, all different.
    for subnet in ("inband", "oob"):
        addresses = [plan.addresses(h)[subnet] for h in plan.hosts]
        assert len(set(addresses)) == len(addresses)


# --- the SuperPOD in detail ------------------------------------------------------------------


@pytest.fixture(scope="module")
def superpod():
    return load(EXAMPLES / "h100-superpod.topology.yml")


def test_superpod_nodes_and_gpus(superpod):
    compute = [h for h in superpod.hosts if h.role == "compute"]
    assert len(compute) == 4 * 32 - 1 == 127
    assert (4, 32) not in {(h.unit, h.slot) for h in compute}
    assert [(h.name, h.role, h.unit, h.slot) for h in superpod.hosts if h.role == "management"] == [
        ("ufm01", "management", 4, 32)
    ]
    assert sum(superpod.topology.node_types[h.node_type].gpu.count for h in compute) == 1016


def test_superpod_compute_switches(superpod):
    fabric = superpod.fabrics["compute"]
    assert fabric.spec.switch.radix == 64
    leaves = [s for s in fabric.switches if s.tier == "leaf"]
    assert len(leaves) == 32 and len(fabric.switches) == 48
    assert {(s.unit, s.rail) for s in leaves} == {(u, r) for u in range(1, 5) for r in range(1, 9)}
    assert_cabling_is_sound(fabric)


def test_superpod_two_links_between_every_leaf_and_spine(superpod):
    fabric = superpod.fabrics["compute"]
    pairs = Counter((link.a, link.b) for link in fabric.links if link.tier == "leaf-spine")
    leaves = [s.name for s in fabric.switches if s.tier == "leaf"]
    spines = [s.name for s in fabric.switches if s.tier == "spine"]
    assert len(spines) == 16
    assert set(pairs) == {(leaf, spine) for leaf in leaves for spine in spines}
    assert set(pairs.values()) == {2}


def test_superpod_rail_r_of_unit_u_goes_to_leaf_u_r(superpod):
    fabric = superpod.fabrics["compute"]
    switch = {s.name: s for s in fabric.switches}
    host = {h.name: h for h in superpod.hosts}
    node_types = superpod.topology.node_types
    node_links = [link for link in fabric.links if link.tier == "node-leaf"]
    assert len(node_links) == 127 * 8 + 4
    for link in node_links:
        leaf = switch[link.b]
        rails = [hca.device for hca in node_types[host[link.a].node_type].hcas]
        assert (leaf.unit, leaf.rail) == (host[link.a].unit, rails.index(link.a_port) + 1)
        assert link.b_port == host[link.a].slot  # slot s uses port s of each rail leaf
        assert link.speed_gbps == 400
    assert Counter(len(leaves) for leaves in fabric.attachments.values()) == Counter({8: 127, 4: 1})  # DGX, UFM


def test_superpod_ufm_is_cabled_in_its_reserved_slot(superpod):
    """NVIDIA DGX SuperPOD H100 reference architecture, "Network Fabrics", Table 4 (compute fabric
    component count): 4 SUs = 127 nodes, 32 leaf and 16 spine switches, 1,020 "compute and UFM"
    cables and 1,024 spine-leaf cables; 1 SU = 31 nodes and 252 (31 x 8 + 4) cables. So the UFM
    takes 4 leaf ports: here ports 32 (slot 4/32) of unit 4's rail 1-4 leaves.
    https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html"""
    fabric = superpod.fabrics["compute"]
    node_links = [link for link in fabric.links if link.tier == "node-leaf"]
    assert len(node_links) == 1020
    assert sum(1 for link in fabric.links if link.tier == "leaf-spine") == 1024
    ufm = [(link.a_port, link.b, link.b_port) for link in node_links if link.a == "ufm01"]
    assert ufm == [(f"mlx5_{r - 1}", f"compute-su4-r{r}-leaf1", 32) for r in range(1, 5)]
    assert fabric.attachments["ufm01"] == [f"compute-su4-r{r}-leaf1" for r in range(1, 5)]


def test_superpod_leaves_are_non_blocking(superpod):
    fabric = superpod.fabrics["compute"]
    ports = ports_by_switch(fabric)
    for s in fabric.switches:
        down = [p for p in ports[s.name] if p <= 32]
        # Slot 4/32 holds the UFM, cabled to rails 1-4 only.
        assert len(ports[s.name]) == (63 if s.tier == "leaf" and (s.unit, s.rail) >= (4, 5) else 64)
        if s.tier == "leaf":
            assert len(down) == len(ports[s.name]) - 32  # 32 up whatever the leaf carries


@pytest.mark.parametrize("topology", ["fat_tree", "rail_optimized_fat_tree"])
def test_a_host_in_a_reserved_slot_is_cabled_where_its_slot_lies(tmp_path, topology):
    # 2 units of 4 slots on 8-port leaves (4 down); slot 1/2 holds a management host with one
    # port (fewer than the compute nodes' rails). Slot s of a unit is port s of its leaves, so
    # the three compute nodes of unit 1 take ports 1, 3 and 4 around it.
    rails = 2 if topology == "rail_optimized_fat_tree" else 1
    spec = {"topology": topology, **({"rails": rails} if rails > 1 else {})}
    path = cluster(tmp_path, fabric=spec, hcas=rails, units=(2, 4), radix=8)
    data = yaml.safe_load(path.read_text())
    data["node_types"]["manager"] = {
        "hcas": [{"device": "mlx5_0", "netdev": "ib0", "pci": "0000:01:00.0", "rate_gbps": 400}]
    }
    data["roles"]["management"] = {"node_type": "manager", "placement": "reserved_slots", "hostname": "mgr{index}"}
    data["scalable_units"]["reserved_slots"] = [{"unit": 1, "slot": 2, "role": "management"}]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    fabric = load(path).fabrics["compute"]
    unit1 = [(link.a, link.a_port, link.b, link.b_port) for link in fabric.links if "su1" in link.b]
    leaf = "compute-su1-r1-leaf1" if rails > 1 else "compute-su1-leaf1"
    expected = [("n00001", "mlx5_0", leaf, 1), ("mgr1", "mlx5_0", leaf, 2)]
    expected += [("n00002", "mlx5_0", leaf, 3), ("n00003", "mlx5_0", leaf, 4)]
    assert sorted(link for link in unit1 if link[2] == leaf and link[3] <= 4) == sorted(expected)
    assert fabric.attachments["mgr1"] == [leaf]  # one port: rail 1 only
    assert sum(1 for link in fabric.links if link.tier == "node-leaf") == 7 * rails + 1
    assert_cabling_is_sound(fabric)


# --- fat trees -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "ports", "radix", "leaves", "spines"),
    [
        # 100 ports on 32-port leaves at 1:1: 16 down, 16 up each; ceil(100/16) = 7 leaves;
        # 7 * 16 = 112 uplinks need at least 4 spines of 32, and 4 divides 16: 4 links per pair.
        (100, 1, 32, 7, 4),
        # 50 nodes x 2 ports on 64-port leaves: 32 down; ceil(100/32) = 4 leaves; 128 uplinks, 2 spines.
        (50, 2, 64, 4, 2),
        # 64 leaves of 64 ports (the most two tiers take): 32 spines, one link per pair.
        (2048, 1, 64, 64, 32),
        # 33 leaves: at least ceil(33*32/64) = 17 spines, 32 is the next count that divides 32.
        (1056, 1, 64, 33, 32),
    ],
)
def test_plain_fat_tree(tmp_path, nodes, ports, radix, leaves, spines):
    plan = load(cluster(tmp_path, fabric={"topology": "fat_tree"}, hcas=ports, count=nodes, radix=radix))
    fabric = plan.fabrics["compute"]
    up = radix // 2
    assert by_tier(fabric) == (
        Counter(leaf=leaves, spine=spines),
        Counter({"node-leaf": nodes * ports, "leaf-spine": leaves * up}),
    )
    pairs = Counter((link.a, link.b) for link in fabric.links if link.tier == "leaf-spine")
    assert len(pairs) == leaves * spines and set(pairs.values()) == {up // spines}
    assert_cabling_is_sound(fabric)


@pytest.mark.parametrize(
    ("radix", "ratio", "down", "up"),
    [(64, 1, 32, 32), (64, 2, 43, 21), (64, 3, 48, 16), (48, 5, 40, 8), (36, 1.25, 20, 16)],
)
def test_oversubscription_trades_uplinks_for_downlinks(tmp_path, radix, ratio, down, up):
    nodes = 10 * down + 1  # fills 10 leaves and spills one node onto an 11th
    fabric_spec = {"topology": "fat_tree", "oversubscription": ratio}
    fabric = load(cluster(tmp_path, fabric=fabric_spec, count=nodes, radix=radix)).fabrics["compute"]
    leaves = [s.name for s in fabric.switches if s.tier == "leaf"]
    assert len(leaves) == 11
    downlinks = Counter(link.b for link in fabric.links if link.tier == "node-leaf")
    uplinks = Counter(link.a for link in fabric.links if link.tier == "leaf-spine")
    assert max(downlinks.values()) == down and sum(downlinks.values()) == nodes
    assert set(uplinks.values()) == {up} and set(uplinks) == set(leaves)
    assert_cabling_is_sound(fabric)


@pytest.mark.parametrize(
    ("radix", "ratio", "built"),
    [
        # 64 / (1 + 2.5) = 18.3 uplinks: 18 up, 46 down, and 46 / 18 = 2.56.
        (64, 2.5, "built 46 down and 18 up, 2.56:1"),
        # 64 / 3 = 21.3: 21 up, 43 down, and 43 / 21 = 2.05.
        (64, 2, "built 43 down and 21 up, 2.05:1"),
    ],
)
def test_a_ratio_no_whole_split_reaches_is_built_and_reported(tmp_path, radix, ratio, built):
    path = cluster(tmp_path, fabric={"topology": "fat_tree", "oversubscription": ratio}, count=200, radix=radix)
    plan = load(path)
    [(location, line, message)] = plan.warnings
    assert location == ("fabrics", "compute", "oversubscription")
    assert path.read_text().splitlines()[line - 1].strip() == f"oversubscription: {ratio}"
    assert message == f"{ratio:g}:1 asked, but no split of a {radix}-port leaf into whole ports gives it: {built}"


@pytest.mark.parametrize(("radix", "ratio"), [(64, 1), (64, 3), (48, 5), (36, 1.25)])  # 32/32, 48/16, 40/8, 20/16
def test_a_ratio_whole_ports_reach_is_not_reported(tmp_path, radix, ratio):
    path = cluster(tmp_path, fabric={"topology": "fat_tree", "oversubscription": ratio}, count=200, radix=radix)
    assert load(path).warnings == []


def test_single_leaf_has_no_spine(tmp_path):
    fabric = load(cluster(tmp_path, fabric={"topology": "fat_tree"}, count=8, hcas=2, radix=32)).fabrics["compute"]
    assert by_tier(fabric) == (Counter(leaf=1), Counter({"node-leaf": 16}))
    assert fabric.tiers() == ["leaf"]
    assert sorted(link.b_port for link in fabric.links) == list(range(1, 17))


# --- the third tier ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("units", "pods", "cores"),
    [
        # 16 SUs x 8 rails = 128 leaves > 64 ports: pods of 32 leaves (4 SUs) = 4 pods, each with
        # 32 spines of 32 uplinks: 4 * 32 * 32 = 4096 links need 64 cores of 64 ports.
        (16, 4, 64),
        # 12 SUs = 96 leaves in 3 pods: 3 * 32 * 32 = 3072 links; 96 leaves / 64 ports rounds up to
        # 2 cores per spine of a pod, 32 * 2 = 64 cores (48 links each).
        (12, 3, 64),
        # 132 SUs = 33 pods: 33,792 links; 1056 leaves / 64 rounds up to 17: 32 * 17 = 544 cores.
        (132, 33, 32 * 17),
    ],
)
def test_three_tiers_when_leaves_outgrow_the_spine_radix(tmp_path, units, pods, cores):
    spec = {"topology": "rail_optimized_fat_tree", "rails": 8}
    plan = load(cluster(tmp_path, fabric=spec, hcas=8, units=(units, 32)))
    fabric = plan.fabrics["compute"]
    leaves = units * 8
    nodes = units * 32
    assert by_tier(fabric) == (
        Counter(leaf=leaves, spine=pods * 32, core=cores),
        Counter({"node-leaf": nodes * 8, "leaf-spine": leaves * 32, "spine-core": pods * 32 * 32}),
    )
    switch = {s.name: s for s in fabric.switches}
    leaf_pods: dict[str, set[int]] = defaultdict(set)
    spine_links: Counter = Counter()
    core_pods: dict[str, set[int]] = defaultdict(set)
    for link in fabric.links:
        if link.tier == "leaf-spine":
            assert switch[link.a].tier == "leaf" and switch[link.b].tier == "spine"
            leaf_pods[link.a].add(switch[link.b].pod)
            spine_links[link.b] += 1
        elif link.tier == "spine-core":
            assert switch[link.a].tier == "spine" and switch[link.b].tier == "core"
            core_pods[link.b].add(switch[link.a].pod)
            spine_links[link.a] += 1
    # Each leaf's 32 uplinks stay in one pod, and a scalable unit's leaves share it.
    assert all(len(p) == 1 for p in leaf_pods.values())
    unit_pods = {(switch[leaf].unit, next(iter(p))) for leaf, p in leaf_pods.items()}
    assert len(unit_pods) == units
    assert Counter(pod for _, pod in unit_pods) == Counter({p: units // pods for p in range(1, pods + 1)})
    # Spines are non-blocking (32 down, 32 up) and every core reaches every pod.
    assert set(spine_links.values()) == {64}
    assert all(p == set(range(1, pods + 1)) for p in core_pods.values()) and len(core_pods) == cores
    assert_cabling_is_sound(fabric)


SPREAD_CASES = {
    # 16 SUs: 128 leaves in 4 pods of 32, 32 spines per pod with 32 uplinks each; 4 pods x 32
    # spines x 32 = 4096 uplinks on 64-port cores = 64 cores. A spine can reach 32 of them, one
    # link each: losing a core takes 1 of 32 uplinks (NVIDIA's 16-SU table: 128 leaf, 128 spine,
    # 64 core switches, 4096 cables per tier).
    "superpod-16-su": (
        {"topology": "rail_optimized_fat_tree", "rails": 8},
        {"hcas": 8, "units": (16, 32)},
        {"core": 64, "links": 4096, "reach": {32: 128}, "most_lost": 1},
    ),
    # 16-port leaves at 7:1: 14 down, 2 up; 225 nodes = 17 leaves > 16, so pods of 8 leaves: 8, 8
    # and 1, with 2 spines each. 17 x 2 = 34 uplinks per tier, on ceil(17/16) x 2 = 4 cores. A
    # full pod's spine has 8 uplinks for 4 cores: 2 to each, so losing a core takes 2 of its 8;
    # the lone leaf's spines have 1 uplink, to 1 core.
    "oversubscribed-small": (
        {"topology": "fat_tree", "oversubscription": 7},
        {"count": 225, "radix": 16},
        {"core": 4, "links": 34, "reach": {4: 4, 1: 2}, "most_lost": 2},
    ),
}


@pytest.mark.parametrize(("spec", "size", "expected"), SPREAD_CASES.values(), ids=SPREAD_CASES.keys())
def test_each_spine_spreads_its_uplinks_evenly_over_as_many_cores_as_it_can(tmp_path, spec, size, expected):
    fabric = load(cluster(tmp_path, fabric=spec, **size)).fabrics["compute"]
    switches, links = by_tier(fabric)
    assert switches["core"] == expected["core"]
    assert links["leaf-spine"] == links["spine-core"] == expected["links"]
    per_spine: dict[str, Counter] = defaultdict(Counter)
    for link in fabric.links:
        if link.tier == "spine-core":
            per_spine[link.a][link.b] += 1
    cores = expected["core"]
    for spine, to_core in per_spine.items():
        uplinks = sum(to_core.values())
        assert len(to_core) == min(cores, uplinks), spine
        assert max(to_core.values()) - min(to_core.values()) <= 1, spine  # parallel links spread evenly
        # Losing the busiest core costs the spine at most ceil(uplinks / cores) of its uplinks.
        assert max(to_core.values()) <= math.ceil(uplinks / cores), spine
    assert Counter(len(to_core) for to_core in per_spine.values()) == Counter(expected["reach"])
    assert max(max(c.values()) for c in per_spine.values()) == expected["most_lost"]
    assert Counter(fabric.cores_reached().values()) == Counter(expected["reach"])
    assert_cabling_is_sound(fabric)


def test_too_many_pods_for_the_core_is_refused(tmp_path):
    # 8-port switches: 4 down, 4 up, pods of 4 leaves; 40 leaves = 10 pods > 8 ports on a core.
    with pytest.raises(TopologyError, match="40 leaves need 10 pods, more than a 8-port core switch"):
        load(cluster(tmp_path, fabric={"topology": "fat_tree"}, count=160, radix=8))


# --- dragonfly ------------------------------------------------------------------------------------


def dragonfly_file(tmp_path: Path, p: int, a: int, h: int, g: int, nodes: int) -> Path:
    df = {"terminals_per_router": p, "routers_per_group": a, "global_links_per_router": h, "groups": g}
    return cluster(tmp_path, fabric={"topology": "dragonfly", "dragonfly": df}, count=nodes, radix=p + (a - 1) + h)


# p, a, h, g, nodes; then the global links worked out by hand: g*a*h ports, two per link.
DRAGONFLIES = {
    "1k-example": (16, 16, 32, 5, 1280, 1280),  # 512 ports per group / 4 partners: 128 per pair
    "most-groups": (4, 4, 2, 9, 144, 36),  # g = a*h + 1: one link per pair
    "one-per-pair": (2, 3, 1, 4, 20, 6),  # 24 terminals, 20 used
    "two-groups-of-4": (3, 4, 5, 3, 30, 30),  # 20 ports over 2 partners: 10 per pair
    "12-over-5": (1, 4, 3, 6, 6, 36),  # 2 or 3 per pair; 72 ports
    "5-over-3": (1, 5, 1, 4, 4, 10),  # 1 or 2 per pair; 20 ports
    "6-over-5": (1, 3, 2, 6, 6, 18),  # 1 or 2 per pair, the extra to opposite groups; 36 ports
    "9-over-4-odd": (1, 3, 3, 5, 5, 22),  # 45 ports: odd, one stays free
    "7-over-6-odd": (1, 7, 1, 7, 7, 24),  # 49 ports: odd, one stays free
    "15-over-8-odd": (2, 5, 3, 9, 9, 67),  # remainder 7 = g - 2; 135 ports: one free
}


@pytest.mark.parametrize(("p", "a", "h", "g", "nodes", "global_links"), DRAGONFLIES.values(), ids=DRAGONFLIES.keys())
def test_dragonfly(tmp_path, p, a, h, g, nodes, global_links):
    fabric = load(dragonfly_file(tmp_path, p, a, h, g, nodes)).fabrics["compute"]
    switches, links = by_tier(fabric)
    assert switches == Counter(router=a * g)
    assert links["terminal"] == nodes and links["local"] == g * a * (a - 1) // 2
    assert links["global"] == global_links
    group = {s.name: s.group for s in fabric.switches}
    # Inside a group, every router links to every other exactly once.
    local = Counter(frozenset((link.a, link.b)) for link in fabric.links if link.tier == "local")
    assert set(local.values()) == {1} and all(len({group[r] for r in pair}) == 1 for pair in local)
    # Every pair of groups gets the floor or the ceiling of a*h / (g - 1) links.
    pairs = Counter(frozenset((group[link.a], group[link.b])) for link in fabric.links if link.tier == "global")
    assert len(pairs) == g * (g - 1) // 2 and all(len(pair) == 2 for pair in pairs)
    share = a * h / (g - 1)
    assert set(pairs.values()) <= {math.floor(share), math.ceil(share)}
    # Every global port is cabled but the one an odd total leaves; no router takes more than h.
    global_ports = Counter(r for link in fabric.links if link.tier == "global" for r in (link.a, link.b))
    assert max(global_ports.values()) <= h
    assert sum(global_ports.values()) == g * a * h - (g * a * h) % 2
    terminals = Counter(link.b for link in fabric.links if link.tier == "terminal")
    assert max(terminals.values()) <= p
    assert_cabling_is_sound(fabric)


@pytest.mark.parametrize(("p", "a", "h", "g", "nodes", "_"), DRAGONFLIES.values(), ids=DRAGONFLIES.keys())
def test_dragonfly_warns_of_the_port_an_odd_total_leaves_free(tmp_path, p, a, h, g, nodes, _):
    plan = load(dragonfly_file(tmp_path, p, a, h, g, nodes))
    fabric = plan.fabrics["compute"]
    planned = p + (a - 1) + h  # terminal, local and global ports of every router
    used = ports_by_switch(fabric)
    free = sorted((router, port) for router in used for port in range(p + 1, planned + 1) if port not in used[router])
    if g * a * h % 2 == 0:
        assert free == [] and plan.warnings == []
        return
    assert len(free) == 1
    router, port = free[0]
    [(location, line, message)] = plan.warnings
    assert location == ("fabrics", "compute", "dragonfly") and line is not None
    assert f"global port {port} of router {router} stays free" in message and f"= {g * a * h} " in message


def test_dragonfly_of_the_issue_cables_every_global_port(tmp_path):
    # 390 groups of 32 routers with 16 global ports each: 199,680 ports, 512 per group for 389
    # partners: 123 pairs per group get 2 links, 266 get 1, and 390 * 123 / 2 = 23,985 pairs have 2.
    fabric = load(dragonfly_file(tmp_path, 1, 32, 16, 390, 390)).fabrics["compute"]
    group = {s.name: s.group for s in fabric.switches}
    pairs = Counter(frozenset((group[link.a], group[link.b])) for link in fabric.links if link.tier == "global")
    assert pairs.total() == 99_840 and len(pairs) == 75_855
    assert Counter(pairs.values()) == {2: 23_985, 1: 75_855 - 23_985}
    global_ports = Counter(r for link in fabric.links if link.tier == "global" for r in (link.a, link.b))
    assert len(global_ports) == 390 * 32 and set(global_ports.values()) == {16}


@pytest.mark.parametrize(("p", "a", "h", "g", "nodes"), [(1, 3, 3, 5, 15), (4, 4, 2, 9, 144), (1, 4, 3, 6, 20)])
def test_dragonfly_without_links_has_the_same_switches_attachments_and_warnings(tmp_path, p, a, h, g, nodes):
    path = dragonfly_file(tmp_path, p, a, h, g, nodes)
    full, bare = load(path), load(path, links=False)
    assert bare.fabrics["compute"].links == [] and not bare.fabrics["compute"].complete
    assert bare.fabrics["compute"].switches == full.fabrics["compute"].switches
    assert bare.fabrics["compute"].attachments == full.fabrics["compute"].attachments
    assert bare.warnings == full.warnings


def test_dragonfly_example_uses_every_router_port_it_plans():
    fabric = load(EXAMPLES / "dragonfly-1k.topology.yml").fabrics["compute"]
    used = ports_by_switch(fabric)
    # 16 terminals + 15 local + 32 global = 63 of 64 ports on every router.
    assert {len(ports) for ports in used.values()} == {63} and len(used) == 80
    group = {s.name: s.group for s in fabric.switches}
    pairs = Counter(frozenset((group[link.a], group[link.b])) for link in fabric.links if link.tier == "global")
    assert len(pairs) == math.comb(5, 2) and set(pairs.values()) == {512 // 4}


def test_leaves_without_uplinks_are_refused(tmp_path):
    # 8-port leaves at 16:1 keep floor(8 / 17) = 0 uplinks: 20 nodes on 3 leaves that could reach nothing.
    fabric_spec = {"topology": "fat_tree", "oversubscription": 16}
    with pytest.raises(TopologyError, match=r"3 leaves need uplinks, but a 8-port leaf at 16\.0:1 has none"):
        load(cluster(tmp_path, fabric=fabric_spec, count=20, radix=8))
