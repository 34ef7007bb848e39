"""The GPU-NIC affinity judge on real ``nvidia-smi topo -m`` outputs.

The pairings below were read off the matrices by hand: in the DGX A100 capture NIC<i> is mlx5_<i>,
GPU0/GPU1 are PXB to NIC0/NIC1, GPU2/GPU3 to NIC2/NIC3 and so on, NIC8/NIC9 (storage) SYS to
every GPU. In the 17-NIC capture NIC<i> is mlx5_<i+2>: NIC0-NIC3 are PXB to GPU0/GPU1, NIC4-NIC7
to GPU2/GPU3, NIC8-NIC11 to GPU4/GPU5, NIC12-NIC15 to GPU6/GPU7; the bond (NIC16) is SYS to all.
"""

from __future__ import annotations

import pytest
from ansible.module_utils.nic_affinity_judge import judge_nic_affinity
from ansible.module_utils.nvidia_topo import parse_topo_matrix

from .samples import load

DGX = parse_topo_matrix(load("nvidia-smi_topo", "a100-sxm-40g-8gpu-10nic-dgx-style-tabs.txt"))
BOND = parse_topo_matrix(load("nvidia-smi_topo", "a100-8gpu-17nic-pxb-pix-bond.txt"))
A10 = parse_topo_matrix(load("nvidia-smi_topo", "a10-4gpu-pcie-no-nvlink-sys.txt"))
GTX = parse_topo_matrix(load("nvidia-smi_topo", "pcie-2x-gtx1080ti-phb-consumer.txt"))

DGX_RAILS = {f"mlx5_{i}": i for i in range(8)}  # the DGX A100 compute rails, GPU i on rail i
BOND_RAILS = {f"mlx5_{2 * (i + 1)}": i for i in range(8)}  # mlx5_2 -> GPU0, mlx5_4 -> GPU1, ... mlx5_16 -> GPU7


@pytest.mark.parametrize("topology,pairing", [(DGX, DGX_RAILS), (BOND, BOND_RAILS)], ids=["dgx", "bond"])
def test_rails_on_their_gpus_pcie_switch_pass(topology, pairing):
    check = judge_nic_affinity(topology, {"hca_gpus": pairing})
    assert check.status == "pass", check.message
    assert {hca: value["path"] for hca, value in check.measured.items()} == dict.fromkeys(pairing, "PXB")
    assert check.expected == {"hca_gpus": pairing, "paths": ["PIX", "PXB"]}


def test_two_rails_swapped_across_sockets_warn_and_name_both():
    # mlx5_0 and mlx5_2 swapped: each lands on the other socket's GPU (SYS).
    pairing = {**DGX_RAILS, "mlx5_0": 2, "mlx5_2": 0}
    check = judge_nic_affinity(DGX, {"hca_gpus": pairing})
    assert check.status == "warn"
    assert check.measured["mlx5_0"] == {"gpu": "GPU2", "path": "SYS"}
    assert check.measured["mlx5_2"] == {"gpu": "GPU0", "path": "SYS"}
    assert "mlx5_0-GPU2 SYS" in check.message and "mlx5_2-GPU0 SYS" in check.message
    assert "mlx5_1" not in check.message


def test_severity_fail_fails_the_same_pairing():
    check = judge_nic_affinity(BOND, {"hca_gpus": {"mlx5_bond_0": 0}, "nic_affinity_severity": "fail"})
    assert (check.status, check.measured) == ("fail", {"mlx5_bond_0": {"gpu": "GPU0", "path": "SYS"}})


def test_a10_nics_are_sys_to_every_gpu():
    assert judge_nic_affinity(A10, {"hca_gpus": {"mlx5_0": 0, "mlx5_1": 3}}).status == "warn"


def test_an_hca_or_gpu_the_matrix_does_not_show_counts_as_too_far():
    check = judge_nic_affinity(BOND, {"hca_gpus": {"mlx5_0": 0, "mlx5_2": 9}})
    assert check.status == "warn"
    assert check.measured == {"mlx5_0": {"gpu": "GPU0", "path": None}, "mlx5_2": {"gpu": "GPU9", "path": None}}
    assert "mlx5_0 not in the matrix" in check.message
    assert "GPU9 (paired with mlx5_2) not in the matrix" in check.message


@pytest.mark.parametrize(
    "topology,expected,reason",
    [
        (DGX, {}, "no expected GPU-HCA pairing"),
        (None, {"hca_gpus": {"mlx5_0": 0}}, "no topology output"),
        (GTX, {"hca_gpus": {"mlx5_0": 0}}, "nvidia-smi topo -m shows no NIC"),
    ],
)
def test_nothing_to_judge_is_skipped_with_the_reason(topology, expected, reason):
    check = judge_nic_affinity(topology, expected)
    assert (check.status, check.message) == ("skipped", reason)


@pytest.mark.parametrize(
    "expected,match",
    [
        ({"hca_gpus": {"mlx5_0": "first"}}, r"hca_gpus\['mlx5_0'\]: expected a GPU index"),
        ({"hca_gpus": ["mlx5_0"]}, "hca_gpus: expected a mapping"),
        ({"hca_gpus": {"mlx5_0": 0}, "nic_affinity_severity": "error"}, "nic_affinity_severity: expected one of"),
    ],
)
def test_bad_expectations_are_named(expected, match):
    with pytest.raises(ValueError, match=match):
        judge_nic_affinity(DGX, expected)
