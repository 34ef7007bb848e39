"""ClusterPlan.expectations and ClusterPlan.gpu_fabric: one derivation, which the inventory's
node-type variables, the topology filter and the validation plan all give back unchanged."""

from __future__ import annotations

import pytest

from clusterforge.topology import NodeExpectations, load
from clusterforge.topology.expectations import VARIABLE_PREFIX, rail_gpus
from clusterforge.topology.inventory import build
from clusterforge.topology.model import Hca
from tests.paths import PROJECT
from tests.paths import filters as filters_of

EXAMPLES = PROJECT / "inventories" / "examples"
LAB = PROJECT / "inventories" / "lab" / "lab.topology.yml"
TOPOLOGIES = [*sorted(EXAMPLES.glob("*.topology.yml")), LAB]
SUPERPOD_HCAS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]


def topology_filter():
    return filters_of("plugins/filter/topology.py")["clusterforge_topology_host"]


def test_superpod_dgx_h100():
    plan = load(EXAMPLES / "h100-superpod.topology.yml", links=False)
    assert plan.gpu_fabric == plan.ipoib_fabric == plan.infiniband_fabric == "compute"
    assert plan.expectations("dgx_h100") == NodeExpectations(
        gpus=8,
        gpu_model="NVIDIA H100 80GB HBM3",
        nvlink_generation=4,
        nvswitch=True,
        hca_rates=dict.fromkeys(SUPERPOD_HCAS, 400),
        link_layers=dict.fromkeys(SUPERPOD_HCAS, "infiniband"),
        rail_hcas=SUPERPOD_HCAS,
        rails=8,
        nic_rate_gbps=400,
        hca_gpus={hca: gpu for gpu, hca in enumerate(SUPERPOD_HCAS)},  # each HCA's gpu: in the file
    )
    assert plan.expectations(plan.host("dgx127")) is plan.expectations("dgx_h100")
    assert plan.expectations(plan.host("head01")) == NodeExpectations()


def test_pcie_roce_servers():
    plan = load(EXAMPLES / "pcie-roce-small.topology.yml", links=False)
    assert plan.gpu_fabric == "compute"
    # RoCE: no IPoIB, and no InfiniBand cabling to check.
    assert plan.ipoib_fabric is None and plan.infiniband_fabric is None
    assert plan.expectations(plan.host("gpu01")) == NodeExpectations(
        gpus=4,
        gpu_model="NVIDIA L40S",
        nvlink_generation=None,
        nvswitch=False,
        hca_rates={"mlx5_0": 200, "mlx5_1": 200},
        link_layers={"mlx5_0": "ethernet", "mlx5_1": "ethernet"},
        rail_hcas=["mlx5_0", "mlx5_1"],
        rails=2,
        nic_rate_gbps=200,
        hca_gpus={"mlx5_0": 0, "mlx5_1": 2},  # gpu: 0 and gpu: 2 in the file (two rails, four GPUs)
    )


def test_the_lab_expects_its_model_port_and_no_gpu():
    plan = load(LAB, links=False)
    # The model's InfiniBand compute fabric is the lab's compute fabric, with IPoIB on its one rail;
    # no GPU, so no HCA-GPU pairing (no GPUDirect run, no NCCL settings).
    assert (plan.gpu_fabric, plan.ipoib_fabric, plan.infiniband_fabric) == ("ib", "ib", "ib")
    assert plan.expectations("lab_node").inventory_vars() == {
        "clusterforge_expected_gpus": 0,
        "clusterforge_expected_gpu_model": None,
        "clusterforge_expected_nvlink_generation": None,
        "clusterforge_expected_nvswitch": False,
        "clusterforge_expected_hca_rates": {"mlx5_0": 100},
        "clusterforge_expected_link_layers": {"mlx5_0": "infiniband"},
        "clusterforge_expected_rail_hcas": ["mlx5_0"],
        "clusterforge_expected_rails": 1,
        "clusterforge_expected_nic_rate_gbps": 100,
        "clusterforge_expected_hca_gpus": {},
    }


def test_gpu_fabric_is_the_compute_fabric_the_gpu_nodes_use(tmp_path):
    # A compute fabric listed first that no GPU node type has an HCA on must not take the GPU traffic.
    source = (EXAMPLES / "pcie-roce-small.topology.yml").read_text()
    extra = (
        "  cpu_compute:\n    purpose: compute\n    link_layer: infiniband\n    topology: fat_tree\n"
        "    switch: {model: QM8700, radix: 40, port_speed_gbps: 200}\n"
    )
    path = tmp_path / "two.topology.yml"
    path.write_text(source.replace("fabrics:\n", "fabrics:\n" + extra, 1))
    plan = load(path, links=False)
    assert next(iter(plan.topology.fabrics)) == "cpu_compute"
    assert plan.gpu_fabric == "compute"
    assert plan.infiniband_fabric == "cpu_compute"  # cabling is checked on the only InfiniBand fabric
    assert plan.ipoib_fabric is None  # the GPU fabric is Ethernet


def test_unknown_node_types_and_hosts_name_the_file():
    plan = load(LAB, links=False)
    with pytest.raises(
        KeyError, match=r"lab.topology.yml: node_types has no 'gpu_box'; expected one of \['lab_node'\]"
    ):
        plan.expectations("gpu_box")
    with pytest.raises(KeyError, match=r"lab.topology.yml: no host 'node99'"):
        plan.host("node99")


@pytest.mark.parametrize("source", TOPOLOGIES, ids=lambda p: p.name)
def test_inventory_and_filter_agree_on_every_host(source):
    plan = load(source, links=False)
    inventory = build(plan)
    topology_host = topology_filter()
    for host in plan.hosts:
        group_vars = inventory.group_vars[f"type_{host.node_type}"]
        from_inventory = {
            name.removeprefix(VARIABLE_PREFIX): value
            for name, value in group_vars.items()
            if name.startswith(VARIABLE_PREFIX)
        }
        from_filter = topology_host(host.name, str(source))["expected"]
        assert from_inventory == from_filter == plan.expectations(host).as_dict(), host.name


def _hcas(*gpus):
    return [
        Hca(device=f"mlx5_{i}", netdev=f"ib{i}", pci=f"0000:{16 + i:02x}:00.0", rate_gbps=400, gpu=gpu)
        for i, gpu in enumerate(gpus)
    ]


def test_rail_gpus_takes_the_named_gpu_else_gpu_i_on_rail_i():
    # No HCA names its GPU: rail i serves GPU i only when there are as many rails as GPUs.
    assert rail_gpus(_hcas(None, None, None, None), 4) == {"mlx5_0": 0, "mlx5_1": 1, "mlx5_2": 2, "mlx5_3": 3}
    assert rail_gpus(_hcas(None, None), 4) == {}
    # A named GPU wins, and the unnamed rail of a mismatched count stays out.
    assert rail_gpus(_hcas(3, None), 8) == {"mlx5_0": 3}
    assert rail_gpus(_hcas(1, 0), 2) == {"mlx5_0": 1, "mlx5_1": 0}
