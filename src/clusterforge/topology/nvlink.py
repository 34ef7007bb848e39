"""Rack-scale NVLink domains (GB200/GB300 NVL72, NVL36x2): the presets, the checks that the
counts fit each other, the site's rack power budget, and which trays form each domain."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from clusterforge.topology.hosts import Host
from clusterforge.topology.model import NvlinkDomain, Topology
from clusterforge.topology.source import Location

Problem = tuple[Location, str]

# NVIDIA's published rack layouts. GB200 NVL72: 18 compute trays of 2 GB200 superchips
# (4 Blackwell GPUs, 2 Grace CPUs) and 9 NVLink switch trays in one liquid-cooled rack;
# NVL36x2: two racks of 9 compute and 9 switch trays joined into one 72-GPU domain;
# GB300 NVL72 keeps the GB200 NVL72 layout with Blackwell Ultra GPUs.
# The NVLink wiring: each GPU's 18 NVLink 5 links go one to each of the rack's 18 switch chips
# (9 trays of 2), through the copper spine at the rear of the rack: 4 cable cartridges in an NVL72
# rack. NVL36x2 joins its two racks with cables between them, for which NVIDIA publishes no
# cartridge count: the preset leaves it unset and the bill lists no cartridges for it.
_NVL72_ONE_RACK: dict[str, int | str] = {
    "gpus": 72,
    "racks": 1,
    "trays_per_rack": 18,
    "gpus_per_tray": 4,
    "tray_gpu_slots": 4,
    "switch_trays_per_rack": 9,
    "links_per_gpu": 18,
    "cable_cartridges_per_rack": 4,
    "cooling": "liquid",
}
_NVL36X2 = {key: value for key, value in _NVL72_ONE_RACK.items() if key != "cable_cartridges_per_rack"}
PRESETS: dict[str, dict[str, int | str]] = {
    "gb200_nvl72": _NVL72_ONE_RACK,
    "gb200_nvl36x2": {**_NVL36X2, "racks": 2, "trays_per_rack": 9},
    "gb300_nvl72": _NVL72_ONE_RACK,
}
COUNT_FIELDS = ("gpus", "racks", "trays_per_rack", "gpus_per_tray", "tray_gpu_slots", "switch_trays_per_rack")
# Counts the bill of materials uses when known, never required.
WIRING_FIELDS = ("links_per_gpu", "cable_cartridges_per_rack")
HERE = ("nvlink_domain",)


@dataclass(frozen=True)
class Domain:
    """An nvlink_domain section with the preset applied: every count known."""

    spec: NvlinkDomain
    gpus: int
    racks: int
    trays_per_rack: int
    gpus_per_tray: int
    tray_gpu_slots: int
    switch_trays_per_rack: int
    cooling: str
    links_per_gpu: int | None = None
    cable_cartridges_per_rack: int | None = None

    @property
    def trays(self) -> int:
        return self.gpus // self.gpus_per_tray

    @property
    def nvlink_links(self) -> int | None:
        """GPU-to-switch NVLink links in the domain, each a copper run through the spine."""
        return None if self.links_per_gpu is None else self.gpus * self.links_per_gpu

    @property
    def block_sizes(self) -> list[int]:
        return list(self.spec.block_sizes) or [self.trays]


def resolve(spec: NvlinkDomain) -> tuple[Domain | None, list[Problem]]:
    """The domain with its preset applied, or the fields neither gives."""
    preset = PRESETS.get(spec.preset or "", {})
    values = {
        name: getattr(spec, name) if getattr(spec, name) is not None else preset.get(name)
        for name in (*COUNT_FIELDS, *WIRING_FIELDS)
    }
    values["cooling"] = spec.cooling or preset.get("cooling") or "liquid"
    missing = [name for name in COUNT_FIELDS if values[name] is None]
    if missing:
        presets = ", ".join(PRESETS)
        return None, [
            ((*HERE, name), f"required without a preset; or set preset to one of {presets}") for name in missing
        ]
    return Domain(spec, **values), []


def problems(topology: Topology) -> list[Problem]:
    """Counts that do not fit together, and racks over their site's power budget."""
    spec = topology.nvlink_domain
    if spec is None:
        return []
    node_type = topology.node_types.get(spec.node_type)
    if node_type is None:
        return [
            (
                (*HERE, "node_type"),
                f"unknown node type {spec.node_type!r}; expected one of {sorted(topology.node_types)}",
            )
        ]
    domain, found = resolve(spec)
    if domain is None:
        return found
    if domain.gpus_per_tray > domain.tray_gpu_slots:
        found.append(
            (
                (*HERE, "gpus_per_tray"),
                f"{domain.gpus_per_tray} GPUs per tray, but a tray holds {domain.tray_gpu_slots}; "
                f"expected 1 to {domain.tray_gpu_slots}",
            )
        )
    tray_gpus = node_type.gpu.count if node_type.gpu else 0
    if tray_gpus != domain.gpus_per_tray:
        found.append(
            (
                (*HERE, "gpus_per_tray"),
                f"{domain.gpus_per_tray} GPUs per tray, but node type {spec.node_type!r} has {tray_gpus}; "
                "expected the node type's gpu.count",
            )
        )
    if domain.gpus % domain.gpus_per_tray:
        upper = (domain.gpus // domain.gpus_per_tray + 1) * domain.gpus_per_tray
        found.append(
            (
                (*HERE, "gpus"),
                f"a domain of {domain.gpus} GPUs does not divide into whole trays of {domain.gpus_per_tray}; "
                f"expected a multiple of {domain.gpus_per_tray} (such as {upper - domain.gpus_per_tray or upper} "
                f"or {upper})",
            )
        )
    elif domain.trays != domain.racks * domain.trays_per_rack:
        found.append(
            (
                (*HERE, "gpus"),
                f"{domain.gpus} GPUs make {domain.trays} trays, but {domain.racks} rack(s) of "
                f"{domain.trays_per_rack} trays hold {domain.racks * domain.trays_per_rack}; expected "
                f"{domain.racks * domain.trays_per_rack * domain.gpus_per_tray} GPUs",
            )
        )
    else:
        divisors = [n for n in range(1, domain.trays + 1) if domain.trays % n == 0]
        for index, size in enumerate(spec.block_sizes):
            if size < 1 or domain.trays % size:
                found.append(
                    (
                        (*HERE, "block_sizes", index),
                        f"block size {size} does not divide the domain of {domain.trays} trays; "
                        f"expected one of {', '.join(map(str, divisors))}",
                    )
                )
    found.extend(_power_problems(topology, domain))
    return found


def rack_power_w(topology: Topology, domain: Domain) -> float:
    """One rack's draw: its compute trays with their GPUs and its NVLink switch trays."""
    node_type = topology.node_types[domain.spec.node_type]
    gpu = node_type.gpu
    tray = node_type.power_w + (gpu.count * gpu.power_w if gpu else 0)
    return domain.trays_per_rack * tray + domain.switch_trays_per_rack * domain.spec.switch_tray.power_w


def _power_problems(topology: Topology, domain: Domain) -> list[Problem]:
    rack_kw = rack_power_w(topology, domain) / 1000
    role_sites = {role.site for role in topology.roles.values() if role.node_type == domain.spec.node_type}
    found = []
    for index, site in enumerate(topology.sites):
        hosts_racks = None in role_sites or site.name in role_sites
        budget = site.rack_power_budget_kw
        if hosts_racks and budget is not None and rack_kw > budget:
            found.append(
                (
                    ("sites", index, "rack_power_budget_kw"),
                    f"an NVLink rack of node type {domain.spec.node_type!r} draws {rack_kw:.1f} kW, over site "
                    f"{site.name}'s rack budget of {budget:g} kW; expected racks of at most {budget:g} kW "
                    "(fewer trays per rack, or a site that powers the rack)",
                )
            )
    return found


def tray_hosts(topology: Topology, hosts: list[Host]) -> list[Host]:
    spec = topology.nvlink_domain
    return [host for host in hosts if spec is not None and host.node_type == spec.node_type]


def host_problems(topology: Topology, hosts: list[Host]) -> list[Problem]:
    """Trays that do not fill whole domains (checked once the hosts are expanded)."""
    spec = topology.nvlink_domain
    if spec is None:
        return []
    domain, _ = resolve(spec)
    trays = tray_hosts(topology, hosts)
    if domain is None or not domain.trays:
        return []
    per_unit = Counter(host.unit for host in trays if host.unit is not None)
    straddling = sorted(unit for unit, count in per_unit.items() if count % domain.trays)
    if straddling and len(trays) % domain.trays == 0:
        # Whole domains in all, but one would span two scalable units (two rows of racks).
        return [
            (
                (*HERE, "node_type"),
                f"scalable unit {straddling[0]} holds {per_unit[straddling[0]]} trays of node type "
                f"{spec.node_type!r}, which do not fill whole NVLink domains of {domain.trays} trays; "
                f"expected a multiple of {domain.trays} per unit",
            )
        ]
    if len(trays) % domain.trays == 0:
        return []
    return [
        (
            (*HERE, "node_type"),
            f"{len(trays)} hosts of node type {spec.node_type!r} do not fill whole NVLink domains of "
            f"{domain.trays} trays; expected a multiple of {domain.trays} (in each scalable unit)",
        )
    ]


def domains(topology: Topology, hosts: list[Host]) -> list[list[Host]]:
    """The trays of each NVLink domain, in host order: domain 1 is the first `trays` of them."""
    spec = topology.nvlink_domain
    if spec is None:
        return []
    domain, _ = resolve(spec)
    trays = tray_hosts(topology, hosts)
    return [trays[start : start + domain.trays] for start in range(0, len(trays), domain.trays)]


def named_domains(topology: Topology, hosts: list[Host]) -> list[tuple[str, list[Host]]]:
    """(name, trays) per NVLink domain: nvl01, nvl02... in host order, the names the rendered IMEX
    files, Slurm blocks, ComputeDomains and the inventory's nvlink_<name> groups all use."""
    return [(f"nvl{number:02d}", trays) for number, trays in enumerate(domains(topology, hosts), 1)]


def totals(topology: Topology, hosts: list[Host]) -> dict[str, int | float | str | None] | None:
    """What the NVLink domains add up to across the cluster, for the bill of materials and
    `topology show`: domains, racks, switch trays, the spine's cable cartridges and the
    GPU-to-switch links (None where the domain's counts do not give them), one rack's draw."""
    spec = topology.nvlink_domain
    if spec is None:
        return None
    domain, _ = resolve(spec)
    count = len(domains(topology, hosts))
    racks = count * domain.racks
    cartridges = domain.cable_cartridges_per_rack
    return {
        "domains": count,
        "gpus_per_domain": domain.gpus,
        "racks": racks,
        "switch_trays": racks * domain.switch_trays_per_rack,
        "cable_cartridges": None if cartridges is None else racks * cartridges,
        "links": None if domain.nvlink_links is None else count * domain.nvlink_links,
        "rack_kw": round(rack_power_w(topology, domain) / 1000, 1),
        "cooling": domain.cooling,
    }
