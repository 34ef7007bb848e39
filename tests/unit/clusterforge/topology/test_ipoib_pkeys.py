"""An InfiniBand fabric's IPoIB partition keys (fabrics.<name>.ipoib_pkeys): the 15-bit keys a site
gives, each refused with its field when it is not one, and the child keys the filter hands the ipoib
role (the full-membership bit set, as Linux's ipoib driver sets it), on the SuperPOD example."""

from __future__ import annotations

import copy

import pytest
import yaml

from clusterforge.topology import TopologyError, load
from tests.paths import PROJECT
from tests.paths import filters as filters_of

SUPERPOD = yaml.safe_load((PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml").read_text())


def _write(tmp_path, fabric="compute", **settings):
    data = copy.deepcopy(SUPERPOD)
    data["fabrics"][fabric].update(settings)
    path = tmp_path / "pkeys.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _problems(path):
    with pytest.raises(TopologyError) as caught:
        load(path, links=False)
    return [(tuple(location), message) for location, _, message in caught.value.problems]


def test_keys_are_normalised_and_children_are_full_members(tmp_path):
    plan = load(_write(tmp_path, ipoib_pkeys=["0x10", "0x7FFE", "0x0001"]), links=False)
    fabric = plan.topology.fabrics["compute"]
    assert fabric.ipoib_pkeys == ["0x0010", "0x7ffe", "0x0001"]
    assert fabric.ipoib_child_pkeys == ["0x8010", "0xfffe", "0x8001"]


def test_unquoted_keys_read_as_yaml_integers_are_the_same_keys(tmp_path):
    path = _write(tmp_path, ipoib_pkeys=["KEY1", "KEY2"])
    path.write_text(path.read_text().replace("KEY1", "0x0010").replace("KEY2", "0x7ffe"))
    assert yaml.safe_load(path.read_text())["fabrics"]["compute"]["ipoib_pkeys"] == [16, 0x7FFE]
    assert load(path, links=False).topology.fabrics["compute"].ipoib_pkeys == ["0x0010", "0x7ffe"]
    path.write_text(path.read_text().replace("0x0010", "0x8010"))
    [(_, message)] = _problems(path)
    assert "without the full-membership bit" in message


def test_no_keys_by_default(tmp_path):
    plan = load(_write(tmp_path), links=False)
    assert plan.topology.fabrics["compute"].ipoib_child_pkeys == []


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("0x8010", "without the full-membership bit 0x8000"),
        ("0xffff", "without the full-membership bit 0x8000"),
        ("0x7fff", "0x7fff is the default partition"),
        ("0x0", "0x0000 is invalid"),
        ("16", "expected 0x and 1-4 hex digits"),
        ("0x10000", "expected 0x and 1-4 hex digits"),
        ("0xg1", "expected 0x and 1-4 hex digits"),
    ],
)
def test_a_bad_key_is_refused_naming_its_field(tmp_path, key, expected):
    [(location, message)] = _problems(_write(tmp_path, ipoib_pkeys=[key]))
    assert location == ("fabrics", "compute", "ipoib_pkeys", 0)
    assert expected in message, message


def test_a_key_given_twice_is_refused(tmp_path):
    [(location, message)] = _problems(_write(tmp_path, ipoib_pkeys=["0x10", "0x0010"]))
    assert location == ("fabrics", "compute")
    assert "ipoib_pkeys lists partition key(s) twice: 0x0010" in message


def test_an_ethernet_fabric_has_no_partition_keys(tmp_path):
    [(location, message)] = _problems(_write(tmp_path, fabric="inband", ipoib_pkeys=["0x10"]))
    assert location == ("fabrics", "inband")
    assert "ipoib_pkeys is given for an ethernet fabric" in message


def test_the_filter_gives_each_ipoib_hca_the_child_keys(tmp_path):
    topology_host = filters_of("plugins/filter/topology.py")["clusterforge_topology_host"]
    path = _write(tmp_path, ipoib_pkeys=["0x0010", "0x0020"])
    hcas = [hca for hca in topology_host("dgx001", str(path))["hcas"] if "ipoib_address" in hca]
    assert len(hcas) == 8
    assert {tuple(hca["ipoib_pkeys"]) for hca in hcas} == {("0x8010", "0x8020")}
