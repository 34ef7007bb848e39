"""The cluster topology: one declarative file from which the inventory and every derived
config come. `load()` validates it completely before anything is generated."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from clusterforge.topology import consistency, nvlink
from clusterforge.topology.addressing import Subnet
from clusterforge.topology.expectations import NodeExpectations, derive
from clusterforge.topology.fabric import FabricPlan, FabricSizeError, generate
from clusterforge.topology.hosts import Host, expand_hosts
from clusterforge.topology.model import Topology
from clusterforge.topology.source import Location, TopologyError, control_characters, describe, line_of, load_yaml

__all__ = ["ClusterPlan", "Host", "NodeExpectations", "TopologyError", "load"]


@dataclass
class ClusterPlan:
    path: Path
    topology: Topology
    hosts: list[Host]
    subnets: dict[str, Subnet]
    fabrics: dict[str, FabricPlan] = field(default_factory=dict)
    # What is built other than the file asks (the nearest whole split of a leaf's ports), with
    # the field and its line, as (location, line, message): valid, but worth a look.
    warnings: list[tuple[Location, int | None, str]] = field(default_factory=list)
    _expectations: dict[str, NodeExpectations] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def gpu_fabric(self) -> str | None:
        """The fabric that carries GPU traffic between nodes (NCCL): the first compute fabric that a
        GPU node type has HCAs on, else the first compute fabric, else the first fabric the GPU
        nodes are cabled to (in-band Ethernet in a small lab); None when there is none of these.
        Every consumer (NCCL settings, IPoIB, validation, Slurm and Kubernetes topology, drawings)
        asks this, so they agree."""
        types = self.topology.node_types
        gpu_types = [t for t in types.values() if t.gpu]
        compute = [name for name, fabric in self.topology.fabrics.items() if fabric.purpose == "compute"]
        on_gpu_hcas = [name for name in compute if any(hca.fabric == name for t in gpu_types for hca in t.hcas)]
        if on_gpu_hcas or compute:
            return (on_gpu_hcas or compute)[0]
        gpu_hosts = [h.name for h in self.hosts if types[h.node_type].gpu]
        return next(
            (name for name, plan in self.fabrics.items() if any(h in plan.attachments for h in gpu_hosts)), None
        )

    @cached_property
    def ipoib_fabric(self) -> str | None:
        """The GPU fabric when it is an InfiniBand compute fabric: its rails carry one IPoIB subnet each."""
        spec = self.topology.fabrics.get(self.gpu_fabric) if self.gpu_fabric else None
        if spec is not None and spec.purpose == "compute" and spec.link_layer == "infiniband":
            return self.gpu_fabric
        return None

    @cached_property
    def infiniband_fabric(self) -> str | None:
        """The InfiniBand fabric whose cabling is checked: the GPU fabric when it is InfiniBand,
        else the first InfiniBand fabric."""
        fabrics = self.topology.fabrics
        infiniband = [name for name, spec in fabrics.items() if spec.link_layer == "infiniband"]
        return self.gpu_fabric if self.gpu_fabric in infiniband else next(iter(infiniband), None)

    def expectations(self, host_or_type: Host | str) -> NodeExpectations:
        """What the checks expect of a host, or of every node of a node type (by name)."""
        type_name = host_or_type.node_type if isinstance(host_or_type, Host) else host_or_type
        if type_name not in self.topology.node_types:
            raise KeyError(
                f"{self.path}: node_types has no {type_name!r}; expected one of {sorted(self.topology.node_types)}"
            )
        found = self._expectations.get(type_name)
        if found is None:
            found = self._expectations[type_name] = derive(self.topology, type_name, self.gpu_fabric)
        return found

    def host(self, name: str) -> Host:
        """The host of that name; KeyError naming the topology file when there is none."""
        position = self._positions.get(name)
        if position is None:
            raise KeyError(f"{self.path}: no host {name!r} in the topology (roles and scalable units)")
        return self.hosts[position]

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {host.name: i for i, host in enumerate(self.hosts)}

    @cached_property
    def _ipoib_positions(self) -> dict[str, int]:
        if self.ipoib_fabric is None:
            return {}
        attached = self.fabrics[self.ipoib_fabric].attachments
        return {name: i for i, name in enumerate(n for n in (h.name for h in self.hosts) if n in attached)}

    def interface_addresses(self, host: Host) -> dict[str, str]:
        """The host's in-band, out-of-band and storage addresses (what the inventory holds)."""
        position = self._positions[host.name]
        return {
            name: self.subnets[name].address(position) for name in ("inband", "oob", "storage") if name in self.subnets
        }

    def addresses(self, host: Host) -> dict[str, str | list[str]]:
        """interface_addresses and the IPoIB address on each rail."""
        found: dict[str, str | list[str]] = dict(self.interface_addresses(host))
        ipoib_position = self._ipoib_positions.get(host.name)
        if ipoib_position is not None and self.topology.addressing.ipoib:
            # One per rail the host is cabled to: a fabric manager in a reserved slot may use fewer.
            rails = min(len(self.topology.addressing.ipoib), self.expectations(host).rails or 0)
            found["ipoib"] = [self.subnets[f"ipoib_rail{rail}"].address(ipoib_position) for rail in range(1, rails + 1)]
        return found

    def subnet_managers(self, host: Host) -> list[dict]:
        """The host's subnet manager duties and the reason for none, per InfiniBand fabric it is
        cabled to: fabric, kind (opensm, ufm or None when the file names no manager), whether
        this host runs OpenSM there (runs_opensm), its priority and port GUIDs, the routing engine."""
        found = []
        for name, spec in self.topology.fabrics.items():
            if spec.link_layer != "infiniband" or host.name not in self.fabrics[name].attachments:
                continue
            manager = spec.subnet_manager
            mine = next((sm for sm in manager.hosts if sm.host == host.name), None) if manager else None
            found.append(
                {
                    "fabric": name,
                    "kind": manager.kind if manager else None,
                    "runs_opensm": mine is not None and manager.kind == "opensm",
                    "priority": mine.priority if mine else None,
                    "guids": list(mine.guids) if mine else [],
                    "routing_engine": spec.routing_engine,
                }
            )
        return found

    def warning_lines(self) -> list[str]:
        """Each warning as `file:line: field: message`, like the errors."""
        return [describe(self.path, *warning) for warning in self.warnings]

    def switch_count(self) -> int:
        return sum(len(plan.switches) for plan in self.fabrics.values())


def load(path: str | Path, links: bool = True) -> ClusterPlan:
    """Validate a topology file and expand it; raise TopologyError listing every problem.

    links=False leaves out the links, keeping switches and attachments (see fabric.generate), for the inventory."""
    path = Path(path)
    data, lines = load_yaml(path)

    def fail(problems):
        raise TopologyError(path, [(loc, line_of(lines, loc), msg) for loc, msg in problems])

    if not isinstance(data, dict):
        fail([((), "expected a mapping with cluster, sites, node_types, roles, fabrics, addressing")])
    problems = control_characters(data, free_text=("ansible", "vars"))
    if problems:
        fail(problems)
    try:
        topology = Topology.model_validate(data)
    except ValidationError as exc:
        fail([(_location(error["loc"]), _message(error)) for error in exc.errors()])
    problems = consistency.references(topology) + consistency.size(topology) + nvlink.problems(topology)
    if problems:
        fail(problems)
    hosts = expand_hosts(topology)
    problems = consistency.hostnames(hosts, topology) + nvlink.host_problems(topology, hosts)
    fabrics: dict[str, FabricPlan] = {}
    for name in topology.fabrics:
        try:
            fabrics[name] = generate(topology, name, hosts, links=links)
        except FabricSizeError as exc:
            problems.append((("fabrics", name, *exc.field), str(exc)))
    plan_subnets = consistency.plan_subnets(topology)
    warnings = []
    for name, fabric in fabrics.items():
        for within, message in fabric.warnings:
            location = ("fabrics", name, *within)
            warnings.append((location, line_of(lines, location), message))
    plan = ClusterPlan(path, topology, hosts, {s.name: s for s in plan_subnets}, fabrics, warnings)
    problems.extend(_ipoib_problems(plan))
    problems.extend(_subnet_manager_problems(plan))
    if not problems:
        problems.extend(consistency.subnets(topology, plan_subnets, _address_demand(plan)))
    if problems:
        fail(problems)
    return plan


def _ipoib_problems(plan: ClusterPlan) -> list[consistency.Problem]:
    given = len(plan.topology.addressing.ipoib)
    if not given:
        return []
    if plan.ipoib_fabric is None:
        return [
            (
                ("addressing", "ipoib"),
                "IPoIB subnets given, but no fabric is an InfiniBand compute fabric",
            )
        ]
    rails = plan.topology.fabrics[plan.ipoib_fabric].rails
    if given != rails:
        return [
            (
                ("addressing", "ipoib"),
                f"{given} IPoIB subnet(s) for {rails} rails of fabric {plan.ipoib_fabric}; expected one per rail",
            )
        ]
    return []


def _subnet_manager_problems(plan: ClusterPlan) -> list[consistency.Problem]:
    """Each subnet manager host is a host of the topology cabled to its fabric."""
    problems: list[consistency.Problem] = []
    for name, spec in plan.topology.fabrics.items():
        if spec.subnet_manager is None or name not in plan.fabrics:
            continue
        attached = plan.fabrics[name].attachments
        for i, sm in enumerate(spec.subnet_manager.hosts):
            if sm.host not in plan._positions:
                message = f"unknown host {sm.host!r}; expected a host of the topology (roles and scalable units)"
            elif sm.host not in attached:
                message = f"host {sm.host!r} is not cabled to fabric {name}; a subnet manager needs a port on it"
            else:
                continue
            problems.append((("fabrics", name, "subnet_manager", "hosts", i, "host"), message))
    return problems


def _address_demand(plan: ClusterPlan) -> dict[str, int]:
    demand = {
        "inband": len(plan.hosts),
        "storage": len(plan.hosts),
        "oob": len(plan.hosts) + plan.switch_count(),
    }
    if plan.ipoib_fabric is not None:
        attached = len(plan.fabrics[plan.ipoib_fabric].attachments)
        demand.update({f"ipoib_rail{rail}": attached for rail in range(1, len(plan.topology.addressing.ipoib) + 1)})
    return demand


def _location(loc: tuple) -> tuple:
    # pydantic marks validator functions and dict keys with extra parts; keep the field path.
    return tuple(part for part in loc if not (isinstance(part, str) and part.startswith(("function-", "["))))


def _message(error: dict) -> str:
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] in ("missing",):
        return "required field is missing"
    if error["type"] == "extra_forbidden":
        return "unknown field (not part of the topology schema)"
    given = error.get("input")
    if isinstance(given, (str, int, float, bool)) or given is None:
        return f"{message} (got {given!r})"
    return message
