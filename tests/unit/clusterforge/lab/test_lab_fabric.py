"""The lab's InfiniBand compute fabric, a model the containers have no device for: at every lab
size every node is in the infiniband group (the fabric stage runs on it), head01 is the OpenSM
host, each node gets an IPoIB address on ib0 (never eth0, the lab's connection), and no node
gets NCCL settings or a GPUDirect rail (no GPU), so the lab's CPU/gloo jobs see no NCCL_IB_*."""

from __future__ import annotations

import ipaddress

import pytest

from clusterforge.lab import cluster, spec
from clusterforge.topology import load
from clusterforge.topology.inventory import build
from clusterforge.topology.render import nccl
from tests.paths import LAB_TOPOLOGY, filters

topology_host = filters("plugins/filter/topology.py")["clusterforge_topology_host"]


@pytest.fixture(params=list(spec.SIZES))
def sized(request, state_dir):
    """The inventory `lab up --size` writes, for each size."""
    cluster.prepare(LAB_TOPOLOGY, request.param, "lab")
    return cluster.inventory_path("lab")


def test_every_lab_node_is_on_the_infiniband_fabric_at_every_size(sized):
    plan = load(sized, links=False)
    data = build(plan)
    assert data.children["infiniband"] == ["type_lab_node"]
    assert data.children["gpu"] == data.children["roce"] == []
    assert set(plan.fabrics["ib"].attachments) == {host.name for host in plan.hosts}


def test_head01_runs_opensm_and_the_compute_nodes_do_not(sized):
    duties = {name: topology_host(name, str(sized))["subnet_managers"] for name in ("head01", "node01")}
    assert duties["head01"] == [
        {"fabric": "ib", "kind": "opensm", "runs_opensm": True, "priority": 15, "guids": [], "routing_engine": "ftree"}
    ]
    assert [duty["runs_opensm"] for duty in duties["node01"]] == [False]


def test_each_node_gets_one_ipoib_address_on_ib0_never_on_the_lab_s_eth0(sized):
    plan = load(sized, links=False)
    subnet = ipaddress.IPv4Network("172.31.251.0/24")
    addresses = []
    for host in plan.hosts:
        (hca,) = topology_host(host.name, str(sized))["hcas"]
        assert (hca["netdev"], hca["rail"], hca["link_layer"]) == ("ib0", 1, "infiniband")
        assert (hca["ipoib_prefix"], hca["ipoib_mode"], hca["ipoib_mtu"]) == (24, "datagram", 2044)
        assert ipaddress.IPv4Address(hca["ipoib_address"]) in subnet
        addresses.append(hca["ipoib_address"])
    assert len(set(addresses)) == len(plan.hosts)


def test_no_lab_node_gets_nccl_settings_or_a_gpudirect_rail():
    """NCCL_IB_HCA on a node without the HCA would send NCCL to a device that does not exist: the
    lab's node type has no GPU, so it gets no NCCL file and no HCA-GPU pair to measure."""
    plan = load(LAB_TOPOLOGY)
    assert nccl.settings(plan, "lab_node") is None
    assert set(nccl.files(plan)) == {"nccl/hosts.yml"}
    assert plan.expectations("lab_node").hca_gpus == {}
