"""The fabric's subnet manager and IPoIB settings: the schema, the host references checked after
expansion, and each host's duties (ClusterPlan.subnet_managers), on the SuperPOD example."""

from __future__ import annotations

import copy

import pytest
import yaml

from clusterforge.topology import TopologyError, load
from tests.paths import PROJECT

SUPERPOD = yaml.safe_load((PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml").read_text())


def _load(tmp_path, **compute):
    data = copy.deepcopy(SUPERPOD)
    data["fabrics"]["compute"].update(compute)
    path = tmp_path / "sm.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load(path, links=False)


def _problems(tmp_path, **compute):
    with pytest.raises(TopologyError) as caught:
        _load(tmp_path, **compute)
    return [(tuple(location), message) for location, _, message in caught.value.problems]


OPENSM = {
    "kind": "opensm",
    "hosts": [
        {"host": "ufm01", "priority": 15, "guids": ["0x0002c9030002fce9"]},
        {"host": "dgx001", "priority": 14},
    ],
}


def test_the_named_hosts_run_opensm_with_their_priority_guids_and_the_fat_tree_engine(tmp_path):
    plan = _load(tmp_path, subnet_manager=OPENSM)
    assert plan.subnet_managers(plan.host("ufm01")) == [
        {
            "fabric": "compute",
            "kind": "opensm",
            "runs_opensm": True,
            "priority": 15,
            "guids": ["0x0002c9030002fce9"],
            "routing_engine": "ftree",
        }
    ]
    standby = plan.subnet_managers(plan.host("dgx001"))[0]
    assert (standby["runs_opensm"], standby["priority"], standby["guids"]) == (True, 14, [])
    other = plan.subnet_managers(plan.host("dgx002"))[0]
    assert (other["kind"], other["runs_opensm"], other["priority"]) == ("opensm", False, None)


def test_a_host_off_the_infiniband_fabrics_has_no_duty(tmp_path):
    plan = _load(tmp_path, subnet_manager=OPENSM)
    head = next(h for h in plan.hosts if h.role == "head")
    assert plan.subnet_managers(head) == []


def test_the_routing_engine_given_wins(tmp_path):
    plan = _load(tmp_path, subnet_manager=OPENSM | {"routing_engine": "updn"})
    assert plan.subnet_managers(plan.host("dgx001"))[0]["routing_engine"] == "updn"


def test_ufm_declared_means_no_opensm_anywhere(tmp_path):
    plan = _load(tmp_path, subnet_manager={"kind": "ufm"})
    duties = [d for h in plan.hosts for d in plan.subnet_managers(h)]
    assert duties and all(d["kind"] == "ufm" and not d["runs_opensm"] for d in duties)
    assert {d["routing_engine"] for d in duties} == {None}


def test_an_unknown_or_uncabled_host_is_named_with_its_field(tmp_path):
    head = next(h for h in _load(tmp_path).hosts if h.role == "head").name
    hosts = [{"host": "dgx999"}, {"host": head}]
    assert _problems(tmp_path, subnet_manager={"kind": "opensm", "hosts": hosts}) == [
        (
            ("fabrics", "compute", "subnet_manager", "hosts", 0, "host"),
            "unknown host 'dgx999'; expected a host of the topology (roles and scalable units)",
        ),
        (
            ("fabrics", "compute", "subnet_manager", "hosts", 1, "host"),
            f"host {head!r} is not cabled to fabric compute; a subnet manager needs a port on it",
        ),
    ]


@pytest.mark.parametrize(
    ("compute", "location", "expected"),
    [
        ({"subnet_manager": {"kind": "opensm"}}, ("subnet_manager",), "kind opensm needs hosts"),
        (
            {"subnet_manager": {"kind": "opensm", "routing_engine": "fattree", "hosts": [{"host": "dgx001"}]}},
            ("subnet_manager", "routing_engine"),
            "Input should be 'ftree', 'updn'",
        ),
        (
            {"subnet_manager": {"kind": "opensm", "hosts": [{"host": "dgx001", "priority": 16}]}},
            ("subnet_manager", "hosts", 0, "priority"),
            "less than or equal to 15",
        ),
        (
            {"subnet_manager": {"kind": "opensm", "hosts": [{"host": "dgx001", "guids": ["0002c9030002fce9"]}]}},
            ("subnet_manager", "hosts", 0, "guids", 0),
            "should match pattern",
        ),
        (
            {"subnet_manager": {"kind": "opensm", "hosts": [{"host": "dgx001"}, {"host": "dgx001"}]}},
            ("subnet_manager",),
            "host(s) listed twice: dgx001",
        ),
        ({"ipoib_mtu": 65520}, (), "ipoib_mtu 65520 in datagram mode; expected at most 4092"),
    ],
)
def test_bad_settings_are_named_with_their_field(tmp_path, compute, location, expected):
    problems = _problems(tmp_path, **compute)
    assert len(problems) == 1, problems
    assert problems[0][0] == ("fabrics", "compute", *location)
    assert expected in problems[0][1]


def test_connected_mode_takes_the_large_mtu(tmp_path):
    plan = _load(tmp_path, ipoib_mode="connected", ipoib_mtu=65520)
    assert plan.topology.fabrics["compute"].ipoib_mtu == 65520


def test_an_ethernet_fabric_has_no_subnet_manager(tmp_path):
    data = copy.deepcopy(SUPERPOD)
    data["fabrics"]["inband"]["subnet_manager"] = {"kind": "ufm"}
    path = tmp_path / "eth.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(TopologyError) as caught:
        load(path)
    [(location, _, message)] = caught.value.problems
    assert tuple(location) == ("fabrics", "inband")
    assert "subnet_manager is given for an ethernet fabric" in message
