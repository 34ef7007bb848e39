"""Which hosts each slice of `clusterforge run --slices N` runs: stable, disjoint, complete, units
and leaves whole, infrastructure in slice 1 alone; and the errors for bad N and I/N."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from clusterforge.errors import UsageError
from clusterforge.runner import slices
from clusterforge.topology import inventory as topology_inventory
from clusterforge.topology import load

EXAMPLES = Path(__file__).resolve().parents[4] / "inventories" / "examples"


def listing_of(topology_file: Path) -> dict:
    """`ansible-inventory --list` of a topology file, as the topology plugin's groups give it."""
    data = topology_inventory.build(load(topology_file, links=False))
    listing: dict = {"_meta": {"hostvars": data.host_vars}, "all": {"children": []}}
    for name in data.group_names():
        entry: dict = {}
        if data.group_hosts.get(name):
            entry["hosts"] = list(data.group_hosts[name])
        if data.children.get(name):
            entry["children"] = list(data.children[name])
        listing[name] = entry
    nested = {child for kids in data.children.values() for child in kids}
    listing["all"]["children"] = [name for name in data.group_names() if name not in nested]
    return listing


@pytest.fixture(scope="module")
def superpod() -> slices.Inventory:
    return slices.Inventory.from_list(listing_of(EXAMPLES / "h100-superpod.topology.yml"))


@pytest.fixture(scope="module")
def dragonfly() -> slices.Inventory:
    return slices.Inventory.from_list(listing_of(EXAMPLES / "dragonfly-1k.topology.yml"))


def flat(names: list[str]) -> slices.Inventory:
    return slices.Inventory.from_list(
        {"_meta": {"hostvars": {}}, "all": {"children": ["ungrouped"]}, "ungrouped": {"hosts": names}}
    )


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_slices_are_disjoint_and_cover_every_host(superpod, count):
    assigned = slices.assign(superpod, count)
    assert len(assigned) == count
    every = [host for hosts in assigned for host in hosts]
    assert len(every) == len(set(every))  # disjoint
    assert sorted(every) == sorted(superpod.hosts) and len(every) == 132


def test_the_same_inventory_and_n_give_the_same_slices(superpod):
    again = slices.Inventory.from_list(listing_of(EXAMPLES / "h100-superpod.topology.yml"))
    assert slices.assign(superpod, 3) == slices.assign(again, 3)


def test_group_order_in_the_listing_does_not_move_hosts(dragonfly):
    listing = listing_of(EXAMPLES / "dragonfly-1k.topology.yml")
    names = [name for name in listing if name != "_meta"]
    random.Random(4).shuffle(names)
    shuffled = {"_meta": listing["_meta"], **{name: listing[name] for name in names}}
    assert slices.assign(slices.Inventory.from_list(shuffled), 5) == slices.assign(dragonfly, 5)


def test_scalable_units_stay_whole_and_infrastructure_is_in_slice_1_alone(superpod):
    assigned = [set(hosts) for hosts in slices.assign(superpod, 3)]
    infrastructure = {"head01", "head02", "login01", "login02", "ufm01"}
    assert slices.infrastructure_hosts(superpod) == infrastructure
    assert infrastructure <= assigned[0]
    for unit in ("su1", "su2", "su3", "su4"):
        compute = superpod.group(unit) - infrastructure
        assert sum(1 for hosts in assigned if compute & hosts) == 1, unit  # the unit in one slice
    # The plays of the control planes' groups find their hosts in slice 1 only.
    for group in ("slurm_controller", "k8s_control_plane", "slurm_login"):
        assert superpod.group(group) and all(not (superpod.group(group) & hosts) for hosts in assigned[1:])


def test_units_spread_over_the_slices_by_size(superpod):
    sizes = [len(hosts) for hosts in slices.assign(superpod, 4)]
    # Four units of 32 (one slot holds the UFM appliance) over four slices, the five
    # infrastructure hosts with the first: every slice gets one unit.
    assert sorted(sizes) == [32, 32, 32, 36]


def test_leaf_groups_stay_whole_without_units(dragonfly):
    assigned = [set(hosts) for hosts in slices.assign(dragonfly, 4)]
    infrastructure = slices.infrastructure_hosts(dragonfly)
    leaves = [name for name, _hosts in slices.blocks(dragonfly, infrastructure)]
    assert leaves and not any(slices.UNIT_GROUP.match(name) for name in leaves)
    for leaf in leaves:
        hosts = dragonfly.group(leaf) - infrastructure
        assert sum(1 for found in assigned if hosts & found) == 1, leaf
    sizes = [len(hosts) for hosts in assigned]
    assert max(sizes) - min(sizes) <= 2 * max(len(dragonfly.group(leaf)) for leaf in leaves)


def test_hosts_outside_units_are_placed_by_their_name_alone():
    names = [f"node{i:03d}" for i in range(60)]
    assigned = slices.assign(flat(names), 3)
    assert all(hosts for hosts in assigned)
    # Adding hosts moves none of the others.
    more = slices.assign(flat([*names, "extra1", "extra2"]), 3)
    assert [[host for host in hosts if host in names] for hosts in more] == assigned


def test_without_a_compute_group_only_control_groups_are_infrastructure():
    listing = {
        "_meta": {"hostvars": {}},
        "all": {"children": ["ungrouped", "slurm_controller"]},
        "ungrouped": {"hosts": [f"n{i}" for i in range(10)]},
        "slurm_controller": {"hosts": ["ctl"]},
    }
    inventory = slices.Inventory.from_list(listing)
    assert slices.infrastructure_hosts(inventory) == {"ctl"}
    assert "ctl" in slices.assign(inventory, 3)[0]


def test_more_slices_than_blocks_leaves_some_empty():
    assigned = slices.assign(flat(["a"]), 3)
    assert sum(len(hosts) for hosts in assigned) == 1 and assigned.count([]) == 2


@pytest.mark.parametrize("count", [0, -2])
def test_n_below_1_is_refused(superpod, count):
    with pytest.raises(UsageError, match=r"expected N >= 1"):
        slices.assign(superpod, count)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3 / 3 ", (3, 3))],
)
def test_slice_i_of_n_is_read(text, expected):
    assert slices.parse_slice(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0/3", r"--slice 0/3: slice 0 is outside 1\.\.3"),
        ("4/3", r"--slice 4/3: slice 4 is outside 1\.\.3"),
        ("1/0", r"--slice: 0 slices; expected N >= 1"),
        ("2", r"--slice 2: expected I/N"),
        ("a/b", r"--slice a/b: expected I/N"),
        ("-1/3", r"expected I/N"),
    ],
)
def test_a_bad_slice_is_refused_with_what_was_expected(text, message):
    with pytest.raises(UsageError, match=message):
        slices.parse_slice(text)


def test_the_limit_file_names_each_host_on_a_line(tmp_path):
    argument = slices.write_limit_file(tmp_path / "hosts.txt", ["a", "b"])
    assert argument == f"@{tmp_path / 'hosts.txt'}"
    assert (tmp_path / "hosts.txt").read_text() == "a\nb\n"
    assert (tmp_path / "hosts.txt").stat().st_mode & 0o777 == 0o600
