"""Judge GPU-NIC affinity: each rail's HCA must sit behind the same PCIe switch as the GPU it serves.

Pure function, stdlib only (runs on the nodes). Input: the ``nvidia-smi topo -m`` matrix
(nvidia_topo.Topology) and an expectation with

  hca_gpus: {HCA device: index of the GPU it serves}, e.g. {"mlx5_0": 0, "mlx5_3": 1}
  nic_affinity_severity: "warn" (default) or "fail", the verdict on a pair that is too far apart.

A pair passes when its path is PIX or PXB (PCIe switches only). PHB, NODE and SYS cross the CPU's
host bridge or the inter-socket link: NCCL then stops using GPUDirect RDMA (its default
NCCL_NET_GDR_LEVEL is PXB) and stages the rail's traffic through host memory, so the rail loses
bandwidth. A wrong slot or a rail cabled to the wrong HCA looks like that, and no link check sees it.
"""

from __future__ import annotations

from ansible.module_utils.expectation_keys import Key
from ansible.module_utils.verdicts import FAIL, PASS, WARN, result, skipped

CHECK = "gpu.nic_affinity"
CLOSE_PATHS = ("PIX", "PXB")
SEVERITIES = (WARN, FAIL)

AFFINITY_KEYS = {
    "hca_gpus": Key(("dict",), "HCA device -> index of the GPU it serves (the topology's rail pairing)"),
    "nic_affinity_severity": Key(
        ("str",), "verdict on a pair whose path crosses the CPU: warn (default) or fail", requires=("hca_gpus",)
    ),
}


def _pairing(expected: dict) -> dict:
    """{HCA: GPU index} from expected["hca_gpus"]; ValueError names the bad entry."""
    pairing = expected.get("hca_gpus") or {}
    if not isinstance(pairing, dict):
        raise ValueError(f"hca_gpus: expected a mapping of HCA device to GPU index, got {pairing!r}")
    found = {}
    for hca, gpu in pairing.items():
        if isinstance(gpu, bool) or not str(gpu).isdigit():
            raise ValueError(f"hca_gpus[{hca!r}]: expected a GPU index (0, 1, ...), got {gpu!r}")
        found[str(hca)] = int(gpu)
    return found


def judge_nic_affinity(topology, expected: dict):
    """One CheckResult: every expected HCA-GPU pair's PCIe path from ``nvidia-smi topo -m``.

    measured is {HCA: {"gpu": "GPU<i>", "path": cell}} (path None when the HCA or the GPU is not in
    the matrix, which counts as too far: the pairing the topology promises cannot be seen)."""
    pairing = _pairing(expected)
    severity = expected.get("nic_affinity_severity") or WARN
    if severity not in SEVERITIES:
        raise ValueError(f"nic_affinity_severity: expected one of {', '.join(SEVERITIES)}, got {severity!r}")
    want = {"hca_gpus": pairing, "paths": list(CLOSE_PATHS)}
    if not pairing:
        return skipped(CHECK, "no expected GPU-HCA pairing")
    if topology is None:
        return skipped(CHECK, "no topology output", want)
    # The NIC legend names the columns (NIC0: mlx5_0); older drivers head the columns with the name itself.
    columns = {topology.nic_names.get(nic, nic): nic for nic in topology.nics}
    if not columns:
        return skipped(CHECK, "nvidia-smi topo -m shows no NIC", want)
    measured = {}
    far = []
    for hca, index in pairing.items():
        gpu = f"GPU{index}"
        nic = columns.get(hca)
        path = topology.matrix[gpu][nic] if nic is not None and gpu in topology.matrix else None
        measured[hca] = {"gpu": gpu, "path": path}
        if nic is None:
            far.append(f"{hca} not in the matrix (NICs: {', '.join(sorted(columns))})")
        elif gpu not in topology.matrix:
            far.append(f"{gpu} (paired with {hca}) not in the matrix")
        elif path not in CLOSE_PATHS:
            far.append(f"{hca}-{gpu} {path}")
    if far:
        message = f"traffic crosses the CPU, NCCL loses bandwidth: {'; '.join(far)} (expected PIX or PXB)"
        return result(CHECK, severity, measured, want, message)
    return result(CHECK, PASS, measured, want, f"{len(pairing)} HCAs on their GPU's PCIe switch")
