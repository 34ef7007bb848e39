"""Expand roles and scalable units into the list of hosts."""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.topology.model import ROLES, Topology


@dataclass(frozen=True, slots=True)
class Host:
    name: str
    role: str
    index: int  # 1-based within the role; hostnames end in it
    node_type: str
    site: str
    unit: int | None = None  # scalable unit, for placement: scalable_units
    slot: int | None = None  # slot within the unit (a compute slot, or a reserved one)


def expand_hosts(topology: Topology) -> list[Host]:
    """Every host in role order (head, management, login, storage, compute)."""
    hosts: list[Host] = []
    default_site = topology.sites[0].name
    for role_name in ROLES:
        role = topology.roles.get(role_name)
        if role is None:
            continue
        site = role.site or default_site
        template = role.hostname
        if role.placement == "scalable_units":
            units = topology.scalable_units
            if units is None:  # reported by checks; nothing to expand
                continue
            reserved = {(r.unit, r.slot) for r in units.reserved_slots}
            index = 0
            for unit in range(1, units.count + 1):
                for slot in range(1, units.nodes_per_unit + 1):
                    if (unit, slot) in reserved:
                        continue
                    index += 1
                    name = template.format(index=index, unit=unit, slot=slot, site=site, role=role_name)
                    hosts.append(Host(name, role_name, index, role.node_type, site, unit, slot))
        elif role.placement == "reserved_slots":
            units = topology.scalable_units
            slots = [r for r in (units.reserved_slots if units else ()) if r.role == role_name]
            for index, entry in enumerate(slots, start=1):
                name = template.format(index=index, unit=entry.unit, slot=entry.slot, site=site, role=role_name)
                hosts.append(Host(name, role_name, index, role.node_type, site, entry.unit, entry.slot))
        else:
            for index in range(1, (role.count or 0) + 1):
                name = template.format(index=index, unit=0, slot=0, site=site, role=role_name)
                hosts.append(Host(name, role_name, index, role.node_type, site))
    return hosts
