"""The clusterforge_topology_host filter (plugins/filter/topology.py) on the example topologies."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from tests.paths import PROJECT
from tests.paths import filters as filters_of

EXAMPLES = PROJECT / "inventories" / "examples"
SUPERPOD = str(EXAMPLES / "h100-superpod.topology.yml")
PCIE = str(EXAMPLES / "pcie-roce-small.topology.yml")
RAIL_ORDER = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]


@pytest.fixture(scope="module")
def topology_host():
    return filters_of("plugins/filter/topology.py")["clusterforge_topology_host"]


def test_a_dgx_in_the_last_unit(topology_host):
    found = topology_host("dgx127", SUPERPOD)
    assert {key: found[key] for key in ("name", "role", "index", "unit", "slot", "site", "node_type")} == {
        "name": "dgx127",
        "role": "compute",
        "index": 127,
        "unit": 4,
        "slot": 31,  # slot 32 of unit 4 is reserved for the fabric manager
        "site": "dc1",
        "node_type": "dgx_h100",
    }
    # 2 head nodes, the UFM (management) and 2 login nodes come first in the in-band and
    # out-of-band plans: dgx127 is host 132, offset 10 + 131. On the IPoIB rails only the hosts
    # on the compute fabric count, the UFM and then the DGX: dgx127 is the 128th, 10 + 127.
    assert found["addresses"]["inband"] == "10.130.0.141"
    assert found["addresses"]["oob"] == "10.131.0.141"
    assert found["addresses"]["ipoib"] == [f"10.140.{rail}.137" for rail in range(8)]


def test_hcas_come_in_rail_order_with_their_ipoib_address(topology_host):
    hcas = topology_host("dgx001", SUPERPOD)["hcas"]
    assert [hca["device"] for hca in hcas] == RAIL_ORDER
    assert [hca["rail"] for hca in hcas] == list(range(1, 9))
    assert [hca["gpu"] for hca in hcas] == list(range(8))
    # The second host on the IPoIB rails, after the UFM: offset 10 + 1.
    assert [hca["ipoib_address"] for hca in hcas] == [f"10.140.{rail}.11" for rail in range(8)]
    assert hcas[4] == {
        "device": "mlx5_6",
        "netdev": "ibp154s0",
        "pci": "0000:9a:00.0",
        "numa": 1,
        "gpu": 4,
        "rate_gbps": 400,
        "fabric": "compute",
        "rail": 5,
        "link_layer": "infiniband",
        "ipoib_address": "10.140.4.11",
        "ipoib_prefix": 24,
        "ipoib_mode": "datagram",
        "ipoib_mtu": 2044,
        "ipoib_pkeys": [],
    }


def test_the_fabric_manager_has_an_ipoib_address_on_each_rail_it_is_cabled_to(topology_host):
    # The UFM's 4 HCAs take rails 1-4 of its reserved slot; it is the first host on the rails: offset 10.
    found = topology_host("ufm01", SUPERPOD)
    assert (found["role"], found["unit"], found["slot"]) == ("management", 4, 32)
    assert found["addresses"]["ipoib"] == [f"10.140.{rail}.10" for rail in range(4)]
    assert [(hca["rail"], hca["ipoib_address"]) for hca in found["hcas"]] == [
        (rail + 1, f"10.140.{rail}.10") for rail in range(4)
    ]


def test_expectations(topology_host):
    assert topology_host("dgx064", SUPERPOD)["expected"] | {"hca_rates": None, "link_layers": None} == {
        "gpus": 8,
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "nvlink_generation": 4,
        "nvswitch": True,
        "hca_rates": None,
        "link_layers": None,
        "rail_hcas": RAIL_ORDER,
        "rails": 8,
        "nic_rate_gbps": 400,
        "hca_gpus": {hca: gpu for gpu, hca in enumerate(RAIL_ORDER)},  # rail i's HCA names GPU i in the file
    }
    assert topology_host("head01", SUPERPOD)["expected"]["gpus"] == 0
    assert topology_host("head01", SUPERPOD)["hcas"] == []


def test_roce_hcas_have_no_ipoib_address(topology_host):
    found = topology_host("gpu08", PCIE)
    assert "ipoib" not in found["addresses"]
    assert [(hca["device"], hca["rail"], hca["link_layer"]) for hca in found["hcas"]] == [
        ("mlx5_0", 1, "ethernet"),
        ("mlx5_1", 2, "ethernet"),
    ]
    assert not any("ipoib_address" in hca for hca in found["hcas"])
    assert found["expected"]["link_layers"] == {"mlx5_0": "ethernet", "mlx5_1": "ethernet"}


def test_roce_hcas_carry_their_fabric_lossless_settings(topology_host, tmp_path):
    found = topology_host("gpu08", PCIE)
    # The example's compute fabric gives priority 3 and DSCP 26 with a 9000-byte MTU.
    assert [hca["roce"] for hca in found["hcas"]] == [
        {"netdev": netdev, "priority": 3, "dscp": 26, "ecn": True, "mtu": 9000, "gid_index": 3}
        for netdev in ("ens1f0np0", "ens5f0np0")
    ]
    assert not any("roce" in hca for hca in topology_host("dgx001", SUPERPOD)["hcas"])  # InfiniBand
    changed = tmp_path / "other.topology.yml"
    changed.write_text(Path(PCIE).read_text().replace("roce: {priority: 3,", "roce: {priority: 5,"))
    assert {hca["roce"]["priority"] for hca in topology_host("gpu08", str(changed))["hcas"]} == {5}


def test_an_unknown_host_is_named(topology_host):
    with pytest.raises(AnsibleFilterError, match=r"clusterforge_topology_host: dgx128 is not in .*h100-superpod"):
        topology_host("dgx128", SUPERPOD)


def test_a_missing_file_is_named(topology_host, tmp_path):
    missing = tmp_path / "nope.topology.yml"
    with pytest.raises(
        AnsibleFilterError, match=rf"cannot read the topology file '{missing}': No such file or directory"
    ):
        topology_host("dgx001", str(missing))


def test_an_invalid_topology_names_file_and_field(topology_host, tmp_path):
    broken = tmp_path / "broken.topology.yml"
    broken.write_text(Path(PCIE).read_text().replace("count: 8", "count: -1"))
    with pytest.raises(AnsibleFilterError, match=r"broken.topology.yml:\d+: roles.compute.count"):
        topology_host("gpu01", str(broken))
