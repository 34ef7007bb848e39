"""Fabric generators: the switches and every link of a fat tree, a rail-optimised fat
tree (with a third tier when leaves outgrow the spine radix) or a dragonfly."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import islice

from clusterforge.topology import dragonfly, nvlink
from clusterforge.topology.hosts import Host
from clusterforge.topology.model import Fabric, Role, Topology
from clusterforge.topology.source import Location


class FabricSizeError(ValueError):
    """The requested fabric cannot be built with the given switches; `field` is the part of
    the fabric's settings to change."""

    def __init__(self, message: str, field: tuple[str, ...] = ("switch", "radix")):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    tier: str  # leaf, spine, core, router
    unit: int | None = None  # scalable unit (leaves); 0 = service leaves outside the units
    rail: int | None = None  # rail (rail-optimised leaves)
    pod: int | None = None  # pod (three-tier fat trees)
    group: int | None = None  # dragonfly group


@dataclass(frozen=True, slots=True)
class Link:
    tier: str  # node-leaf, leaf-spine, spine-core, terminal, local, global
    a: str
    a_port: str
    b: str
    b_port: int
    speed_gbps: int


@dataclass
class FabricPlan:
    name: str
    spec: Fabric
    switches: list[Switch] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    # host name -> the leaves (or routers) it is cabled to, in rail order
    attachments: dict[str, list[str]] = field(default_factory=dict)
    # leaf name -> pod number, in three-tier fat trees
    leaf_pods: dict[str, int] = field(default_factory=dict)
    # False when generated without the spine and core links (inventory use): counts of
    # links and cables from such a plan would be short.
    complete: bool = True
    # What was built other than asked, each with its field under fabrics.<name>.
    warnings: list[tuple[Location, str]] = field(default_factory=list)

    def tiers(self) -> list[str]:
        return [t for t in ("leaf", "spine", "core", "router") if any(s.tier == t for s in self.switches)]

    def cores_reached(self) -> dict[str, int]:
        """Spine name -> how many core switches its uplinks reach (three-tier fat trees; else empty)."""
        reached: dict[str, set[str]] = defaultdict(set)
        for link in self.links:
            if link.tier == "spine-core":
                reached[link.a].add(link.b)
        return {spine: len(cores) for spine, cores in reached.items()}


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: Host
    ports: tuple[str, ...]  # the host's ports on this fabric, in rail order (HCA devices or eth0)


class _Ports:
    """Hands out switch ports in order and refuses to hand out more than the radix."""

    def __init__(self, radix: int):
        self.radix = radix
        self.used: dict[str, int] = defaultdict(int)

    def take(self, switch: str) -> int:
        self.used[switch] += 1
        if self.used[switch] > self.radix:
            raise FabricSizeError(f"switch {switch} needs more than its {self.radix} ports")
        return self.used[switch]


def endpoints(topology: Topology, fabric_name: str, hosts: list[Host]) -> list[Endpoint]:
    """The hosts cabled to a fabric, each with its ports on it.

    A node type lists its HCAs per fabric; a host whose role names an in-band or
    out-of-band fabric without listing ports gets one port (its NIC or BMC)."""
    spec = topology.fabrics[fabric_name]
    found = []
    for host in hosts:
        node_type = topology.node_types[host.node_type]
        ports = tuple(h.device for h in node_type.hcas if h.fabric == fabric_name)
        if not ports and spec.purpose in ("inband", "oob") and fabric_name in topology.roles[host.role].fabrics:
            ports = ("bmc",) if spec.purpose == "oob" else ("eth0",)
        if ports:
            found.append(Endpoint(host, ports))
    return found


def generate(topology: Topology, fabric_name: str, hosts: list[Host], links: bool = True) -> FabricPlan:
    """The fabric's switches and links. With links=False only the switches and the
    attachments are made: what an inventory needs. Leaf counts follow from the leaves'
    downlink ports either way, and the spine and core tiers cannot run out of ports by
    construction (see _spine_count and the core groups), so skipping the links skips no check."""
    spec = topology.fabrics[fabric_name]
    plan = FabricPlan(fabric_name, spec, complete=links)
    cabled = endpoints(topology, fabric_name, hosts)
    if not cabled:
        return plan
    if spec.topology == "dragonfly":
        _dragonfly(plan, cabled)
    else:
        ports = _Ports(spec.switch.radix)
        down, up = leaf_ports(topology, spec)
        leaves = _leaves(plan, topology, cabled, ports, down)
        if spec.spine_leaf_groups:
            _group_spines(plan, leaves, up, ports)
        else:
            _spines(plan, leaves, ports, links)
            if len(leaves) > 1:  # a lone leaf has no uplinks, so no ratio to miss
                plan.warnings.extend((("oversubscription",), w) for w in _split_warnings(spec))
    return plan


def leaf_ports(topology: Topology, spec: Fabric) -> tuple[int, int]:
    """Down and up ports a leaf uses: the oversubscription's split of the radix, or with spine-leaf
    groups one NVLink rack's trays down and as many up as the oversubscription asks."""
    if not spec.spine_leaf_groups:
        return leaf_split(spec)
    domain = nvlink.resolve(topology.nvlink_domain)[0] if topology.nvlink_domain else None
    if domain is None:
        raise FabricSizeError(
            "spine_leaf_groups puts one leaf per NVLink rack and rail, but the topology has no "
            "nvlink_domain; expected an nvlink_domain section, or spine_leaf_groups: false",
            ("spine_leaf_groups",),
        )
    down = domain.trays_per_rack
    up = math.ceil(down / spec.oversubscription)
    if down + up > spec.switch.radix:
        raise FabricSizeError(
            f"a leaf per NVLink rack takes its {down} trays on {down} ports and sends {up} up, "
            f"{down + up} ports, more than the switch radix {spec.switch.radix}"
        )
    return down, up


def leaf_split(spec: Fabric) -> tuple[int, int]:
    """Down and up ports of a leaf for the fabric's oversubscription (down/up)."""
    radix = spec.switch.radix
    up = math.floor(radix / (1 + spec.oversubscription))
    return radix - up, up


def rail_ports_fit(ports: int, rails: int, role: Role) -> bool:
    """One port per rail; a host in a reserved slot (a fabric manager) may use only the first rails."""
    return ports == rails or (ports < rails and role.placement == "reserved_slots")


def _split_warnings(spec: Fabric) -> list[str]:
    """A leaf's ports split into whole down and up counts: say so when that misses the ratio asked."""
    down, up = leaf_split(spec)
    if up < 1 or math.isclose(down, spec.oversubscription * up):  # 1.1 * 10 is not exactly 11
        return []
    return [
        f"{spec.oversubscription:g}:1 asked, but no split of a {spec.switch.radix}-port leaf into whole "
        f"ports gives it: built {down} down and {up} up, {down / up:.3g}:1"
    ]


def _leaves(plan: FabricPlan, topology: Topology, cabled: list[Endpoint], ports: _Ports, down: int) -> list[Switch]:
    """Cable every endpoint to a leaf of `down` downlinks; return the leaves in order."""
    spec = plan.spec
    if down < 1:
        raise FabricSizeError(f"a {spec.switch.radix}-port leaf has no downlink at {spec.oversubscription}:1")
    speed = spec.switch.port_speed_gbps
    units = topology.scalable_units
    slots = units.nodes_per_unit if units else 0
    # Hosts placed in scalable units share their unit's leaves; the others (head,
    # storage) go to service leaves, unit 0.
    by_unit: dict[int, list[Endpoint]] = defaultdict(list)
    for endpoint in cabled:
        by_unit[endpoint.host.unit or 0].append(endpoint)
    rails = spec.rails if spec.topology == "rail_optimized_fat_tree" else 1
    leaves: list[Switch] = []
    for unit in sorted(by_unit):
        members = by_unit[unit]
        if rails > 1:
            for endpoint in members:
                if not rail_ports_fit(len(endpoint.ports), rails, topology.roles[endpoint.host.role]):
                    raise FabricSizeError(
                        f"{endpoint.host.name} has {len(endpoint.ports)} port(s) on {plan.name}, "
                        f"but the rail-optimised fabric has {rails} rails"
                    )
            # Slot s of the unit uses port s of each rail's leaf; reserved slots keep theirs free.
            positions = [(e, (e.host.slot or i + 1) - 1) for i, e in enumerate(members)]
            span = slots if unit else len(members)
            per_rail = math.ceil(span / down)
            for rail in range(1, rails + 1):
                rail_leaves = [_leaf(plan, unit, rail, n) for n in range(1, per_rail + 1)]
                leaves.extend(rail_leaves)
                for endpoint, position in positions:
                    if rail > len(endpoint.ports):
                        continue
                    leaf = rail_leaves[position // down]
                    if plan.complete:
                        plan.links.append(
                            Link(
                                "node-leaf",
                                endpoint.host.name,
                                endpoint.ports[rail - 1],
                                leaf.name,
                                position % down + 1,
                                speed,
                            )
                        )
                    plan.attachments.setdefault(endpoint.host.name, []).append(leaf.name)
                for leaf in rail_leaves:
                    ports.used[leaf.name] = down  # uplinks start above the downlink block
        else:
            # In slot order, so a host in a reserved slot is cabled where its slot lies.
            members.sort(key=lambda e: e.host.slot or 0)
            flat = [(e, p) for e in members for p in e.ports]
            count = math.ceil(len(flat) / down)
            unit_leaves = [_leaf(plan, unit, None, n) for n in range(1, count + 1)]
            leaves.extend(unit_leaves)
            for position, (endpoint, port_name) in enumerate(flat):
                leaf = unit_leaves[position // down]
                if plan.complete:
                    plan.links.append(
                        Link(
                            "node-leaf",
                            endpoint.host.name,
                            port_name,
                            leaf.name,
                            position % down + 1,
                            speed,
                        )
                    )
                attached = plan.attachments.setdefault(endpoint.host.name, [])
                if leaf.name not in attached:
                    attached.append(leaf.name)
            for leaf in unit_leaves:
                ports.used[leaf.name] = down
    return leaves


def _leaf(plan: FabricPlan, unit: int, rail: int | None, number: int) -> Switch:
    where = f"su{unit}" if unit else "svc"
    rail_part = f"-r{rail}" if rail else ""
    switch = Switch(f"{plan.name}-{where}{rail_part}-leaf{number}", "leaf", unit=unit, rail=rail)
    plan.switches.append(switch)
    return switch


def _spines(plan: FabricPlan, leaves: list[Switch], ports: _Ports, links: bool) -> None:
    """Connect leaves with a spine tier, and a core tier when the leaves outgrow the spine radix."""
    spec = plan.spec
    radix = spec.switch.radix
    _, up = leaf_split(spec)
    speed = spec.switch.port_speed_gbps
    if len(leaves) == 1:
        return  # a single leaf is the whole fabric
    if up < 1:
        raise FabricSizeError(
            f"{len(leaves)} leaves need uplinks, but a {radix}-port leaf at {spec.oversubscription}:1 has none"
        )
    if len(leaves) <= radix:
        spines = _spine_count(len(leaves), up, radix)
        names = [f"{plan.name}-spine{n:02d}" for n in range(1, spines + 1)]
        plan.switches.extend(Switch(name, "spine") for name in names)
        for leaf in leaves if links else ():
            for uplink in range(up):
                spine = names[uplink % spines]
                plan.links.append(
                    Link(
                        "leaf-spine",
                        leaf.name,
                        str(ports.take(leaf.name)),
                        spine,
                        ports.take(spine),
                        speed,
                    )
                )
        return
    # Three tiers: pods of leaves (whole scalable units where they fit) under their own spines,
    # every spine cabled up to the cores.
    half = radix // 2
    pods = _pods(leaves, half)
    if len(pods) > radix:
        raise FabricSizeError(
            f"{len(leaves)} leaves need {len(pods)} pods, more than a {radix}-port core switch can "
            "reach: use switches with more ports or fewer, larger scalable units"
        )
    # A spine sends up as many links as it takes from its pod's leaves (non-blocking), so a
    # part-filled pod buys no core ports it cannot use: `up` spines per pod take one link from
    # each leaf, len(leaves) * up spine uplinks in all, which ceil(len(leaves) / radix) * up cores hold.
    cores = [f"{plan.name}-core{n:03d}" for n in range(1, math.ceil(len(leaves) / radix) * up + 1)]
    # Uplinks go to the cores in turn, counted across spines and pods: a spine's uplinks are
    # consecutive, so it reaches min(uplinks, cores) cores, evenly, and losing one core takes
    # at most ceil(uplinks / cores) of its uplinks (a classic fat tree's spread); every core
    # fills to within one link of the others.
    sent = 0
    for pod_number, pod in enumerate(pods, start=1):
        spine_names = [f"{plan.name}-pod{pod_number}-spine{n:02d}" for n in range(1, up + 1)]
        plan.switches.extend(Switch(name, "spine", pod=pod_number) for name in spine_names)
        plan.leaf_pods.update(dict.fromkeys((leaf.name for leaf in pod), pod_number))
        if not links:
            continue
        for leaf in pod:
            for spine in spine_names:
                plan.links.append(
                    Link(
                        "leaf-spine",
                        leaf.name,
                        str(ports.take(leaf.name)),
                        spine,
                        ports.take(spine),
                        speed,
                    )
                )
        for spine in spine_names:
            ports.used[spine] = half
            for _ in range(len(pod)):
                core = cores[sent % len(cores)]
                sent += 1
                plan.links.append(Link("spine-core", spine, str(ports.take(spine)), core, ports.take(core), speed))
    plan.switches.extend(Switch(name, "core") for name in cores)


def _group_spines(plan: FabricPlan, leaves: list[Switch], up: int, ports: _Ports) -> None:
    """NVIDIA's spine-leaf groups (DGX SuperPOD GB200 RA, 4.2): a scalable unit's leaves of one
    rail under spines of their own, so the fabric is rail-optimised to the top. A spine keeps half
    its ports for a core tier, so a group has the fewest spines that take its leaves' uplinks in
    the other half and divide each leaf's uplinks evenly. With more than one unit, spine k of every
    group goes up to core group k, as many links up as it takes down (non-blocking)."""
    spec = plan.spec
    radix = spec.switch.radix
    half = radix // 2
    speed = spec.switch.port_speed_gbps
    if len(leaves) == 1:
        return  # a single leaf is the whole fabric
    groups: dict[tuple[int | None, int | None], list[Switch]] = defaultdict(list)
    for leaf in leaves:
        groups[leaf.unit, leaf.rail].append(leaf)
    # Across units only the cores join them: each unit is a pod (Slurm switches, pair distances).
    pods = len({unit for unit, _ in groups}) > 1
    if pods:
        plan.leaf_pods.update({leaf.name: leaf.unit or 0 for leaf in leaves})
    core_groups: dict[int, list[tuple[str, int]]] = defaultdict(list)  # k -> (spine, its downlinks)
    for (unit, rail), members in groups.items():
        count = _spine_count(len(members), up, half)
        where = f"su{unit}" if unit else "svc"
        names = [f"{plan.name}-{where}-r{rail}-spine{n:02d}" for n in range(1, count + 1)]
        pod = (unit or 0) if pods else None
        plan.switches.extend(Switch(name, "spine", unit=unit, rail=rail, pod=pod) for name in names)
        for index, name in enumerate(names):
            core_groups[index + 1].append((name, len(members) * len(range(index, up, count))))
        if not plan.complete:
            continue
        for leaf in members:
            for uplink in range(up):
                spine = names[uplink % count]
                plan.links.append(
                    Link("leaf-spine", leaf.name, str(ports.take(leaf.name)), spine, ports.take(spine), speed)
                )
    if not pods:
        return  # one unit: its rails meet over NVLink inside the racks; the spines' upper halves wait for a core
    for k, spines in core_groups.items():
        cores = [f"{plan.name}-cg{k}-core{n:02d}" for n in range(1, math.ceil(sum(d for _, d in spines) / radix) + 1)]
        plan.switches.extend(Switch(name, "core") for name in cores)
        if not plan.complete:
            continue
        sent = 0
        for spine, downlinks in spines:
            ports.used[spine] = half
            for _ in range(downlinks):
                core = cores[sent % len(cores)]
                sent += 1
                plan.links.append(Link("spine-core", spine, str(ports.take(spine)), core, ports.take(core), speed))


def _spine_count(leaves: int, up: int, radix: int) -> int:
    """Fewest spines that take every uplink, preferring a count that divides the uplinks
    so every leaf-spine pair gets the same number of links."""
    least = max(1, math.ceil(leaves * up / radix))
    for count in range(least, up + 1):
        if up % count == 0:
            return count
    return least


def _pods(leaves: list[Switch], half: int) -> list[list[Switch]]:
    """Chunks of at most `half` leaves, keeping a scalable unit's leaves together."""
    pods: list[list[Switch]] = [[]]
    by_unit: dict[int | None, list[Switch]] = defaultdict(list)
    for leaf in leaves:
        by_unit[leaf.unit].append(leaf)
    for unit_leaves in by_unit.values():
        if len(unit_leaves) > half:
            for start in range(0, len(unit_leaves), half):
                pods.append(unit_leaves[start : start + half])
            continue
        if len(pods[-1]) + len(unit_leaves) > half:
            pods.append([])
        pods[-1].extend(unit_leaves)
    return [pod for pod in pods if pod]


def _dragonfly(plan: FabricPlan, cabled: list[Endpoint]) -> None:
    spec = plan.spec
    df = spec.dragonfly
    p, a, h, g = (
        df.terminals_per_router,
        df.routers_per_group,
        df.global_links_per_router,
        df.groups,
    )
    radix = spec.switch.radix
    needed = p + (a - 1) + h
    if needed > radix:
        raise FabricSizeError(
            f"a dragonfly router needs p + (a - 1) + h = {p} + {a - 1} + {h} = {needed} ports, "
            f"more than the switch radix {radix}"
        )
    if g > a * h + 1:
        raise FabricSizeError(
            f"{g} groups cannot all be linked: a*h + 1 = {a * h + 1} at most", ("dragonfly", "groups")
        )
    terminals = sum(len(e.ports) for e in cabled)
    if terminals > p * a * g:
        raise FabricSizeError(
            f"{terminals} node ports exceed the dragonfly's p*a*g = {p * a * g} terminals", ("dragonfly",)
        )
    routers = [[f"{plan.name}-g{group:02d}-r{router:02d}" for router in range(1, a + 1)] for group in range(1, g + 1)]
    for group, names in enumerate(routers, start=1):
        plan.switches.extend(Switch(name, "router", group=group) for name in names)
    # Node ports fill the routers in order, p per router (only as many as there are node ports).
    port_routers = list(islice((name for names in routers for name in names for _ in range(p)), terminals))
    position = 0
    for endpoint in cabled:
        taken = port_routers[position : position + len(endpoint.ports)]
        plan.attachments[endpoint.host.name] = list(dict.fromkeys(taken))
        position += len(taken)
    spare = dragonfly.spare_port_group(a, h, g)
    if spare is not None:
        # A group's k-th global link takes a port on router k % a: the one never taken is number a*h - 1.
        router = routers[spare][(a * h - 1) % a]
        plan.warnings.append(
            (
                ("dragonfly",),
                f"global port {p + (a - 1) + h} of router {router} stays free: g*a*h = {g}*{a}*{h} = {g * a * h} "
                "global ports is odd and a link takes two",
            )
        )
    if plan.complete:
        _dragonfly_links(plan, routers, cabled, port_routers)


def _dragonfly_links(
    plan: FabricPlan, routers: list[list[str]], cabled: list[Endpoint], port_routers: list[str]
) -> None:
    """Terminal links (node port i to port_routers[i]), local (all-to-all inside a group) and
    global links (dragonfly.pair_links)."""
    spec = plan.spec
    df = spec.dragonfly
    p, a, h, g = df.terminals_per_router, df.routers_per_group, df.global_links_per_router, df.groups
    speed = spec.switch.port_speed_gbps
    ports = _Ports(spec.switch.radix)
    flat = [(e.host.name, port) for e in cabled for port in e.ports]
    for (host, port_name), router in zip(flat, port_routers, strict=True):
        plan.links.append(Link("terminal", host, port_name, router, ports.take(router), speed))
    for names in routers:
        for name in names:
            ports.used[name] = p  # local ports follow the terminal block
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                plan.links.append(Link("local", first, str(ports.take(first)), second, ports.take(second), speed))
    # Each group's global links go to its routers in turn, so no router takes more than h.
    next_port = [0] * g
    for first, second, count in dragonfly.pair_links(a, h, g):
        for _ in range(count):
            a_router = routers[first][next_port[first] % a]
            b_router = routers[second][next_port[second] % a]
            next_port[first] += 1
            next_port[second] += 1
            plan.links.append(
                Link("global", a_router, str(ports.take(a_router)), b_router, ports.take(b_router), speed)
            )
