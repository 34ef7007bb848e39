"""The ipoib role's filters (plugins/filter/ipoib.py) on the interfaces the topology filter gives a
SuperPOD node: the netplan document, the partition child interfaces, and their refusals. netplan's own
parser reads the document in Molecule's rdma scenario (netplan generate)."""

from __future__ import annotations

import copy

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.paths import PROJECT
from tests.paths import filters as filters_of

SUPERPOD = yaml.safe_load((PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml").read_text())


@pytest.fixture(scope="module")
def filters():
    found = filters_of("plugins/filter/ipoib.py")
    found.update(filters_of("plugins/filter/topology.py"))
    return found


def _interfaces(filters, tmp_path, **compute):
    data = copy.deepcopy(SUPERPOD)
    data["fabrics"]["compute"].update(compute)
    path = tmp_path / "ipoib.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    hcas = filters["clusterforge_topology_host"]("dgx001", str(path))["hcas"]
    return [hca for hca in hcas if "ipoib_address" in hca]


def test_the_netplan_document_has_each_rails_address_and_mtu_and_nothing_else(filters, tmp_path):
    interfaces = _interfaces(filters, tmp_path, ipoib_mode="connected", ipoib_mtu=65520)
    document = filters["clusterforge_ipoib_netplan"](interfaces)
    assert list(document) == ["network"] and document["network"]["version"] == 2
    ethernets = document["network"]["ethernets"]
    assert list(ethernets) == [hca["netdev"] for hca in interfaces]
    assert len(ethernets) == 8
    first = ethernets[interfaces[0]["netdev"]]
    assert first == {
        "renderer": "networkd",
        "addresses": ["10.140.0.11/24"],
        "mtu": 65520,
        "dhcp4": False,
        "dhcp6": False,
        "accept-ra": False,
        "link-local": [],
        "ignore-carrier": True,
        "optional": True,
    }
    # No global renderer: the site's other netplan files keep theirs.
    assert "renderer" not in document["network"]


def test_netplan_refuses_partition_keys(filters, tmp_path):
    interfaces = _interfaces(filters, tmp_path, ipoib_pkeys=["0x0010"])
    with pytest.raises(AnsibleFilterError, match="netplan has no IPoIB partition \\(child\\) interface type"):
        filters["clusterforge_ipoib_netplan"](interfaces)


def test_a_child_per_rail_and_key_named_as_linux_names_it(filters, tmp_path):
    interfaces = _interfaces(filters, tmp_path, ipoib_pkeys=["0x0010", "0x7ffe"])
    found = filters["clusterforge_ipoib_children"](interfaces)
    assert len(found) == 16
    assert found[:2] == [
        {
            "name": f"{interfaces[0]['netdev']}.8010",
            "parent": interfaces[0]["netdev"],
            "pkey": "0x8010",
            "mode": "datagram",
            "mtu": 2044,
            "rail": 1,
            "fabric": "compute",
        },
        {
            "name": f"{interfaces[0]['netdev']}.fffe",
            "parent": interfaces[0]["netdev"],
            "pkey": "0xfffe",
            "mode": "datagram",
            "mtu": 2044,
            "rail": 1,
            "fabric": "compute",
        },
    ]
    assert filters["clusterforge_ipoib_children"](_interfaces(filters, tmp_path)) == []


def test_a_child_name_over_the_kernels_limit_is_refused(filters, tmp_path):
    [first, *_] = _interfaces(filters, tmp_path, ipoib_pkeys=["0x0010"])
    with pytest.raises(AnsibleFilterError, match=r"ibp12s0f0np012\.8010 .* longer than the kernel's 15"):
        filters["clusterforge_ipoib_children"]([first | {"netdev": "ibp12s0f0np012"}])
