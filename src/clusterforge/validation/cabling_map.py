"""Where a host's HCA is cabled: rail, leaf and leaf port from the topology's cabling plan.

The validation report names failing HCAs and failing NCCL pairs by host and device ("gpu01
mlx5_3"); the crew that fixes them works from the cabling plan (cabling/cabling.csv, rendered from
the same topology file), so the report adds the plan's rail, leaf switch and port next to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.errors import UsageError


@dataclass(frozen=True)
class Port:
    """One node-to-leaf cable of the plan."""

    host: str
    device: str  # the host's port: mlx5_0, eth0
    fabric: str
    rail: int | None
    leaf: str
    leaf_port: int

    def describe(self) -> str:
        rail = f"rail {self.rail}, " if self.rail is not None else ""
        return f"{rail}{self.leaf} port {self.leaf_port}"


@dataclass
class Cabling:
    """The plan's node-to-leaf cables of every fabric, found by (host, device)."""

    cluster: str | None = None
    topology: str | None = None
    ports: dict[tuple[str, str], Port] = field(default_factory=dict)
    gpu_fabric: str | None = None
    # GPU node -> [(rail HCA, index of the GPU it serves or None)] in rail order (the topology's expectations).
    rail_pairs: dict[str, list[tuple[str, int | None]]] = field(default_factory=dict)
    hca_pci: dict[str, dict[str, str]] = field(default_factory=dict)  # host -> {HCA: PCI address} (its node type's)

    def port(self, host: str, device: str) -> Port | None:
        """The cable of host's device; "mlx5_0/1" (device/port) is looked up as mlx5_0."""
        return self.ports.get((host, device)) or self.ports.get((host, device.split("/", 1)[0]))

    def rails(self, host: str) -> list[Port]:
        """The host's cables on the GPU fabric, in rail order."""
        found = [p for (h, _), p in self.ports.items() if h == host and p.fabric == self.gpu_fabric]
        return sorted(found, key=lambda p: (p.rail if p.rail is not None else 0, p.device))


def from_plan(plan) -> Cabling:
    """The Cabling of a clusterforge.topology.ClusterPlan loaded with its links."""
    cabling = Cabling(cluster=plan.topology.cluster.name, topology=str(plan.path), gpu_fabric=plan.gpu_fabric)
    for name, fabric in plan.fabrics.items():
        rails = {switch.name: switch.rail for switch in fabric.switches}
        for link in fabric.links:
            if link.tier in ("node-leaf", "terminal"):
                port = Port(link.a, str(link.a_port), name, rails.get(link.b), link.b, link.b_port)
                cabling.ports.setdefault((link.a, str(link.a_port)), port)
    for host in plan.hosts:
        expected = plan.expectations(host)
        if expected.gpus and expected.rail_hcas:  # GPUDirect rails: a GPU node's HCAs on the GPU fabric
            cabling.rail_pairs[host.name] = [(hca, expected.hca_gpus.get(hca)) for hca in expected.rail_hcas]
            hcas = plan.topology.node_types[host.node_type].hcas
            cabling.hca_pci[host.name] = {hca.device: hca.pci for hca in hcas if hca.device in expected.rail_hcas}
    return cabling


def load(path: str | Path) -> Cabling:
    """The Cabling of a topology file; a file that does not load is a UsageError."""
    from clusterforge.topology import TopologyError
    from clusterforge.topology import load as load_topology

    try:
        return from_plan(load_topology(path, links=True))
    except TopologyError as exc:
        raise UsageError(str(exc)) from None
