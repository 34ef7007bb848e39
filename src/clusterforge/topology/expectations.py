"""What the checks expect of a node, from its node type: the one derivation that the inventory's
type_<node type> group variables, the clusterforge filters and the validation plan all use."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from clusterforge.topology.model import Hca, Topology

# Inventory variable of each field: clusterforge_expected_gpus, clusterforge_expected_hca_rates, ...
VARIABLE_PREFIX = "clusterforge_expected_"


@dataclass(frozen=True)
class NodeExpectations:
    gpus: int = 0
    gpu_model: str | None = None
    nvlink_generation: int | None = None  # None: PCIe-only GPUs, or no GPU
    nvswitch: bool = False
    hca_rates: dict[str, int] = field(default_factory=dict)  # every HCA: device -> Gb/s
    link_layers: dict[str, str] = field(default_factory=dict)  # every HCA: device -> infiniband | ethernet
    rail_hcas: list[str] = field(default_factory=list)  # HCA devices on the GPU fabric, in rail order
    rails: int | None = None  # how many; None when the node has none there
    nic_rate_gbps: int | None = None  # the slowest of those HCAs
    hca_gpus: dict[str, int] = field(default_factory=dict)  # rail HCA -> the GPU it serves (gpu_check's affinity)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON-safe), with fresh dicts a caller may change."""
        return asdict(self)

    def inventory_vars(self) -> dict[str, Any]:
        return {f"{VARIABLE_PREFIX}{name}": value for name, value in self.as_dict().items()}


def derive(topology: Topology, type_name: str, gpu_fabric: str | None) -> NodeExpectations:
    node_type = topology.node_types[type_name]
    gpu = node_type.gpu
    rails = [hca for hca in node_type.hcas if hca.fabric == gpu_fabric]
    return NodeExpectations(
        gpus=gpu.count if gpu else 0,
        gpu_model=gpu.model if gpu else None,
        nvlink_generation=gpu.nvlink_generation if gpu else None,
        nvswitch=gpu.nvswitch if gpu else False,
        hca_rates={hca.device: hca.rate_gbps for hca in node_type.hcas},
        link_layers={hca.device: topology.fabrics[hca.fabric].link_layer for hca in node_type.hcas},
        rail_hcas=[hca.device for hca in rails],
        rails=len(rails) or None,
        nic_rate_gbps=min((hca.rate_gbps for hca in rails), default=None),
        hca_gpus=rail_gpus(rails, gpu.count if gpu else 0),
    )


def rail_gpus(rails: list[Hca], gpus: int) -> dict[str, int]:
    """The GPU each rail's HCA serves: the HCA's own `gpu` where the topology names it, else GPU i
    on rail i (the rail-optimised layout) when there are as many rails as GPUs. Other HCAs are left
    out: with fewer or more rails than GPUs the pairing is the board's, and guessing it would warn
    about a node that is cabled right."""
    found = {}
    for rail, hca in enumerate(rails):
        if hca.gpu is not None:
            found[hca.device] = hca.gpu
        elif len(rails) == gpus:
            found[hca.device] = rail
    return found
