"""The SuperPOD example against numbers worked out by hand, never by the code under test.

The expected values come from NVIDIA's "DGX SuperPOD Reference Architecture featuring NVIDIA DGX
H100" (RA-11333-001), its compute fabric component table for 4 scalable units: 127 DGX H100
(32 slots per unit, one slot of the fourth given to the UFM appliance), 1,016 GPUs, 32 leaf and
16 spine QM9700 switches, 1,020 node-and-UFM-to-leaf cables and 1,024 spine-leaf cables. The rest
is arithmetic on the example's own inputs (inventories/examples/h100-superpod.topology.yml: host
counts per role, the DGX H100's rail HCAs, the address plan), worked out below in comments.

tests/golden/h100-superpod.inventory.json is checked here too: it is a fixed file, reviewed by
hand and changed only deliberately (tests/golden/README.md), so it is held to these numbers, and
the plugin and the static inventory are held to it.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import pytest

from clusterforge.topology import load
from clusterforge.topology.render import cabling
from tests.paths import PROJECT, SUPERPOD

GOLDEN = PROJECT / "tests" / "golden" / "h100-superpod.inventory.json"

# RA-11333-001, compute fabric, 4 SUs.
RA_NODES, RA_GPUS, RA_LEAVES, RA_SPINES = 127, 1016, 32, 16
RA_NODE_LEAF_CABLES, RA_LEAF_SPINE_CABLES = 1020, 1024
# The example's roles: 2 head, 1 UFM (management), 2 login, then the DGX nodes.
HOSTS = 2 + 1 + 2 + RA_NODES  # 132
# DGX H100's compute ports in rail order, rail 1 = GPU 0 (DGX H100 user guide; the example's hcas).
RAILS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]


def dgx(first: int, last: int) -> list[str]:
    return [f"dgx{index:03d}" for index in range(first, last + 1)]


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def test_the_reference_architecture_counts_are_those_of_the_ra_table():
    # 4 units of 32 slots, one slot for the UFM: 4 * 32 - 1 = 127 nodes of 8 GPUs = 1016 GPUs.
    assert (RA_NODES, RA_GPUS) == (4 * 32 - 1, (4 * 32 - 1) * 8)
    # One leaf per rail per unit (8 * 4 = 32); a leaf's 64 ports are 32 down (one per slot) and 32 up
    # (2 to each of 16 spines): 32 * 32 = 1024 leaf-spine cables. Down: 127 * 8 DGX ports plus 4 UFM
    # ports = 1020.
    assert (RA_LEAVES, RA_SPINES) == (8 * 4, 32 * 32 // 64)
    assert (RA_NODE_LEAF_CABLES, RA_LEAF_SPINE_CABLES) == (127 * 8 + 4, 32 * 16 * 2)


def test_the_golden_inventory_holds_the_hand_counts(golden):
    hostvars = golden["_meta"]["hostvars"]
    assert len(hostvars) == HOSTS
    assert golden["head"]["hosts"] == ["head01", "head02"]
    assert golden["management"]["hosts"] == ["ufm01"]
    assert golden["login"]["hosts"] == ["login01", "login02"]
    assert golden["compute"]["hosts"] == dgx(1, 127)
    # Units of 32 slots in order; the fourth's last slot (128) is the UFM's.
    assert golden["su1"]["hosts"] == dgx(1, 32)
    assert golden["su2"]["hosts"] == dgx(33, 64)
    assert golden["su3"]["hosts"] == dgx(65, 96)
    assert sorted(golden["su4"]["hosts"]) == sorted([*dgx(97, 127), "ufm01"])
    # Each unit's rail leaves reach every host cabled in that unit.
    for unit in (1, 2, 3, 4):
        assert sorted(golden[f"compute_su{unit}_leaves"]["hosts"]) == sorted(golden[f"su{unit}"]["hosts"])
    assert sorted(golden["fabric_compute"]["children"]) == [f"compute_su{unit}_leaves" for unit in (1, 2, 3, 4)]
    # Capability and orchestrator groups (docs/topology.md): GPUs and NVSwitch on the DGX type only,
    # InfiniBand on the DGX and the UFM; Slurm and Kubernetes control on the heads.
    assert golden["gpu"]["children"] == golden["nvswitch"]["children"] == ["type_dgx_h100"]
    assert sorted(golden["infiniband"]["children"]) == ["type_dgx_h100", "type_ufm_appliance"]
    assert golden["slurm_controller"]["children"] == golden["k8s_control_plane"]["children"] == ["head"]
    assert golden["slurm_compute"]["children"] == golden["k8s_workers"]["children"] == ["compute"]
    assert golden["slurm_login"]["children"] == ["login"]
    # No host gets GPU software without GPUs here (no ansible.gpu_software): the group is empty,
    # so ansible-inventory lists it under all without an entry of its own.
    assert "gpu_software" in golden["all"]["children"] and "gpu_software" not in golden
    assert sum(v["clusterforge_expected_gpus"] for v in hostvars.values()) == RA_GPUS
    # Compute ports on the fabric: 8 per DGX, 4 on the UFM = the RA's node-and-UFM cables.
    assert sum(len(v["clusterforge_expected_hca_rates"]) for v in hostvars.values()) == RA_NODE_LEAF_CABLES


def test_the_golden_host_variables_are_the_hand_derived_ones(golden):
    hostvars = golden["_meta"]["hostvars"]
    node = hostvars["dgx127"]
    assert node["clusterforge_unit"] == 4 and node["clusterforge_index"] == 127
    assert node["clusterforge_expected_gpus"] == 8
    assert node["clusterforge_expected_gpu_model"] == "NVIDIA H100 80GB HBM3"
    assert (node["clusterforge_expected_nvlink_generation"], node["clusterforge_expected_nvswitch"]) == (4, True)
    assert node["clusterforge_expected_rail_hcas"] == RAILS
    assert node["clusterforge_expected_rails"] == 8
    assert node["clusterforge_expected_hca_gpus"] == {hca: gpu for gpu, hca in enumerate(RAILS)}
    assert node["clusterforge_expected_hca_rates"] == dict.fromkeys(RAILS, 400)
    assert node["clusterforge_expected_nic_rate_gbps"] == 400
    # Addresses in host order (2 head, UFM, 2 login, then dgx001...) from the subnets' first host
    # offset (addressing.first_host_offset, 10): dgx001 is the 6th host, dgx127 the 132nd.
    assert hostvars["head01"]["ansible_host"] == "10.130.0.10"
    assert (hostvars["dgx001"]["ansible_host"], hostvars["dgx001"]["clusterforge_oob_address"]) == (
        "10.130.0.15",
        "10.131.0.15",
    )
    assert node["ansible_host"] == f"10.130.0.{10 + HOSTS - 1}"
    ufm = hostvars["ufm01"]
    assert (ufm["clusterforge_expected_gpus"], len(ufm["clusterforge_expected_hca_rates"])) == (0, 4)
    assert hostvars["login02"]["clusterforge_expected_hca_rates"] == {}


def test_the_plan_has_the_reference_architectures_switches_and_cables():
    plan = load(SUPERPOD)
    rows = list(csv.DictReader(io.StringIO(cabling.cabling_csv(plan))))
    compute = [row for row in rows if row["fabric"] == "compute"]
    tiers = Counter(row["tier"] for row in compute)
    assert tiers == {"node-leaf": RA_NODE_LEAF_CABLES, "leaf-spine": RA_LEAF_SPINE_CABLES}
    leaves = {row["destination_device"] for row in compute if row["tier"] == "node-leaf"}
    spines = {row["destination_device"] for row in compute if row["tier"] == "leaf-spine"}
    assert (len(leaves), len(spines)) == (RA_LEAVES, RA_SPINES)
    # Every leaf: 32 down at most (31 on unit 4's rails 5-8, whose UFM slot has no port) and 32 up.
    down = Counter(row["destination_device"] for row in compute if row["tier"] == "node-leaf")
    up = Counter(row["source_device"] for row in compute if row["tier"] == "leaf-spine")
    assert sorted(Counter(down.values()).items()) == [(31, 4), (32, 28)]
    assert set(up.values()) == {32} and set(up) == leaves
    # Rail r of every DGX goes to a leaf of rail r.
    for row in compute:
        if row["tier"] == "node-leaf" and row["source_device"].startswith("dgx"):
            rail = RAILS.index(row["source_port"]) + 1
            assert f"-r{rail}-" in row["destination_device"], row
