"""Checks across fields that the schema alone cannot make: references, duplicate names,
address plan overlaps and exhaustion, and whether the switches can build each fabric."""

from __future__ import annotations

import ipaddress
from collections import Counter

from clusterforge.topology.addressing import Subnet, overlapping
from clusterforge.topology.fabric import rail_ports_fit
from clusterforge.topology.hosts import Host
from clusterforge.topology.model import MAX_HOSTS, Topology, hostname_problem
from clusterforge.topology.source import Location

Problem = tuple[Location, str]


def references(topology: Topology) -> list[Problem]:
    problems: list[Problem] = []
    sites = {site.name for site in topology.sites}
    for duplicate in [n for n, c in Counter(s.name for s in topology.sites).items() if c > 1]:
        problems.append((("sites",), f"site {duplicate!r} is listed twice"))
    for name, role in topology.roles.items():
        if role.node_type not in topology.node_types:
            problems.append(
                (
                    ("roles", name, "node_type"),
                    f"unknown node type {role.node_type!r}; expected one of {sorted(topology.node_types)}",
                )
            )
        if role.site is not None and role.site not in sites:
            problems.append(
                (
                    ("roles", name, "site"),
                    f"unknown site {role.site!r}; expected one of {sorted(sites)}",
                )
            )
        for i, fabric in enumerate(role.fabrics):
            if fabric not in topology.fabrics:
                problems.append(
                    (
                        ("roles", name, "fabrics", i),
                        f"unknown fabric {fabric!r}; expected one of {sorted(topology.fabrics)}",
                    )
                )
        if role.placement != "count" and topology.scalable_units is None:
            problems.append(
                (
                    ("roles", name, "placement"),
                    f"placement {role.placement} needs a scalable_units section",
                )
            )
    problems.extend(_reserved_slot_roles(topology))
    for i, fabric in enumerate(topology.ansible.leaf_groups or ()):
        if fabric not in topology.fabrics:
            problems.append(
                (
                    ("ansible", "leaf_groups", i),
                    f"unknown fabric {fabric!r}; expected one of {sorted(topology.fabrics)}",
                )
            )
    for type_name, node_type in topology.node_types.items():
        for i, hca in enumerate(node_type.hcas):
            if hca.fabric not in topology.fabrics:
                problems.append(
                    (
                        ("node_types", type_name, "hcas", i, "fabric"),
                        f"unknown fabric {hca.fabric!r}; expected one of {sorted(topology.fabrics)}",
                    )
                )
    for fabric_name, fabric in topology.fabrics.items():
        if fabric.topology != "rail_optimized_fat_tree":
            continue
        for role_name, role in topology.roles.items():
            node_type = topology.node_types.get(role.node_type)
            if node_type is None:
                continue
            ports = sum(1 for h in node_type.hcas if h.fabric == fabric_name)
            expected = "at most one HCA per rail" if role.placement == "reserved_slots" else "one HCA per rail"
            if ports and not rail_ports_fit(ports, fabric.rails, role):
                problems.append(
                    (
                        ("fabrics", fabric_name, "rails"),
                        f"{fabric.rails} rails, but node type {role.node_type!r} (role {role_name}) "
                        f"has {ports} HCAs on this fabric; expected {expected}",
                    )
                )
    return problems


def _reserved_slot_roles(topology: Topology) -> list[Problem]:
    """A reserved slot names a role placed in reserved slots, and such a role has a slot."""
    problems: list[Problem] = []
    slots = topology.scalable_units.reserved_slots if topology.scalable_units else []
    placed = sorted(name for name, role in topology.roles.items() if role.placement == "reserved_slots")
    for i, entry in enumerate(slots):
        if entry.role is not None and entry.role not in placed:
            problems.append(
                (
                    ("scalable_units", "reserved_slots", i, "role"),
                    f"role {entry.role!r} is not placed in reserved slots; expected one of {placed} "
                    "(a role with placement: reserved_slots)",
                )
            )
    named = {entry.role for entry in slots}
    for name in placed:
        if name not in named and topology.scalable_units is not None:
            problems.append(
                (
                    ("roles", name, "placement"),
                    f"placement reserved_slots, but no scalable_units.reserved_slots entry has role: {name}",
                )
            )
    return problems


def size(topology: Topology) -> list[Problem]:
    """Refuse more than MAX_HOSTS hosts before any is made, naming the field that contributes
    the most: a role's count, or the scalable units' count when their slots outnumber it."""
    parts: dict[Location, int] = {("roles", name, "count"): role.count or 0 for name, role in topology.roles.items()}
    units = topology.scalable_units
    if units is not None and any(role.placement == "scalable_units" for role in topology.roles.values()):
        parts[("scalable_units", "count")] = units.count * units.nodes_per_unit
    total = sum(parts.values())
    if total == 0 and parts:
        # A cluster of no hosts is a typo (every count 0), never something to render or provision.
        return [(next(iter(parts)), "every role's count is 0: the cluster has no hosts; expected at least one host")]
    if total <= MAX_HOSTS:
        return []
    largest = max(parts, key=parts.__getitem__)
    what = (
        f"{units.count} units of {units.nodes_per_unit} slots = {parts[largest]} hosts"
        if largest[0] == "scalable_units"
        else f"{parts[largest]} hosts"
    )
    return [(largest, f"{what} make the cluster {total} hosts in all; at most {MAX_HOSTS} are supported")]


def hostnames(hosts: list[Host], topology: Topology) -> list[Problem]:
    problems: list[Problem] = []
    first_role: dict[str, str] = {}
    repeats: dict[tuple[str, str], list[str]] = {}  # (repeating role, first role) -> names
    for host in hosts:
        earlier = first_role.setdefault(host.name, host.role)
        if earlier != host.role or host.name in repeats.get((host.role, earlier), []):
            repeats.setdefault((host.role, earlier), []).append(host.name)
    for (role, earlier), names in repeats.items():
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        source = "this role" if role == earlier else f"role {earlier}"
        problems.append(
            (("roles", role, "hostname"), f"produces {shown}, already produced by {source}; expected unique names")
        )
    # Every name, not a sample: the real site names fill the template (one with '_' makes no host name).
    wrong_roles: set[str] = set()
    for host in hosts:
        problem = hostname_problem(host.name) if host.role not in wrong_roles else None
        if problem:
            wrong_roles.add(host.role)
            problems.append((("roles", host.role, "hostname"), problem))
    return problems


def subnets(topology: Topology, plan_subnets: list[Subnet], demand: dict[str, int]) -> list[Problem]:
    problems: list[Problem] = []
    for first, second in overlapping(plan_subnets):
        problems.append(
            (
                _subnet_location(second.name),
                f"{second.network} ({second.name}) overlaps {first.network} ({first.name})",
            )
        )
    for subnet in plan_subnets:
        needed = demand.get(subnet.name, 0)
        if needed > subnet.capacity:
            problems.append(
                (
                    _subnet_location(subnet.name),
                    f"{subnet.network} has {subnet.capacity} addresses from offset {subnet.offset}, "
                    f"but {needed} are needed",
                )
            )
    return problems


def _subnet_location(name: str) -> Location:
    if name.startswith("ipoib_rail"):
        return ("addressing", "ipoib", int(name.removeprefix("ipoib_rail")) - 1)
    return ("addressing", name)


def plan_subnets(topology: Topology) -> list[Subnet]:
    addressing = topology.addressing
    offset = addressing.first_host_offset
    found = []
    for name in ("inband", "oob", "storage"):
        value = getattr(addressing, name)
        if value is not None:
            found.append(Subnet(name, ipaddress.IPv4Network(value), offset))
    for rail, value in enumerate(addressing.ipoib, start=1):
        found.append(Subnet(f"ipoib_rail{rail}", ipaddress.IPv4Network(value), offset))
    return found
