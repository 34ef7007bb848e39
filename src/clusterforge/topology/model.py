"""The topology file's schema: what each field is and what values it takes."""

from __future__ import annotations

import ipaddress
import re
import string
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from clusterforge.topology.groups import ORCHESTRATOR_GROUPS

# Ansible group names must be valid Python identifiers; ours are built from these names.
NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=40)]
HOSTNAME_FIELDS = {"index", "unit", "slot", "site", "role"}
NUMBER_FIELDS = {"index", "unit", "slot"}
HOSTNAME_PATTERN = re.compile(r"[a-z][a-z0-9-]*[0-9]")
HOSTNAME_MAX = 63  # one DNS label
# The only format a hostname needs: an integer, zero-padded to at most 9 digits ({index:03d}).
# str.format runs any other: a width of 10**8 builds 100 MB names, ',' adds commas that
# --limit splits at, 'n' depends on the locale.
NUMBER_SPEC = re.compile(r"(0[1-9])?d?")
# Spreadsheets run a cell that starts with one of these as a formula (OWASP "CSV injection").
FORMULA_START = ("=", "+", "-", "@")
ROLES = ("head", "management", "login", "storage", "compute")
# The role whose hosts are the cluster's nodes: what validate, `topology show` and the drawing count.
COMPUTE_ROLE = "compute"
RoleName = Literal["head", "management", "login", "storage", "compute"]
FABRIC_KINDS = ("compute", "storage", "inband", "oob")


# Twice the largest clusters built today; they stop runaway sizes before anything is generated.
MAX_HOSTS = 200_000
MAX_SWITCHES = 50_000


def hostname_problem(name: str) -> str | None:
    """Why `name` is not a host name, or None."""
    if len(name) > HOSTNAME_MAX:
        return f"makes a name of {len(name)} characters ({name[:20]}...); expected at most {HOSTNAME_MAX}"
    if not HOSTNAME_PATTERN.fullmatch(name):
        return (
            f"makes {name!r}: expected a host name of lower-case letters, digits and '-' "
            "that starts with a letter and ends in the index"
        )
    return None


def _parse_template(template: str, allowed: set[str], numbers: set[str]) -> list[tuple]:
    """string.Formatter's parse of a template; ValueError unless each field is one of `allowed`,
    with no conversion and no format spec other than NUMBER_SPEC on `numbers`."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"not a valid template: {exc}") from None
    fields = [name for _, name, _, _ in parsed if name is not None]
    unknown = set(fields) - allowed
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}; allowed: {', '.join(sorted(allowed))}")
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if conversion:
            raise ValueError(f"{{{name}!{conversion}}}: a conversion is not allowed; expected {{{name}}}")
        if spec and not (name in numbers and NUMBER_SPEC.fullmatch(spec)):
            allowed_spec = (
                f"{{{name}}}, {{{name}:d}} or zero-padding up to {{{name}:09d}}" if name in numbers else f"{{{name}}}"
            )
            raise ValueError(f"format {{{name}:{spec}}} is not allowed; expected {allowed_spec}")
    return parsed


def _no_formula(text: str) -> str:
    if text.startswith(FORMULA_START):
        raise ValueError(
            f"starts with {text[0]!r}, which a spreadsheet opening bom.csv runs as a formula; "
            "expected a name that starts with a letter or digit"
        )
    return text


# Free text that reaches a CSV cell (bom.csv): refused rather than quoted, so the CSV keeps the
# names as written for the scripts that read it.
CellText = Annotated[str, AfterValidator(_no_formula)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterInfo(Strict):
    name: Name
    domain: str = Field(pattern=r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


class Site(Strict):
    name: Name
    description: str = ""
    # What one rack position can draw and cool; validate refuses an NVLink rack above it.
    rack_power_budget_kw: float | None = Field(default=None, gt=0, le=1000)


class Gpu(Strict):
    model: CellText
    count: int = Field(strict=True, ge=1, le=72)
    # NVLink generation (3 = A100, 4 = H100/H200, 5 = B200); null for PCIe-only GPUs.
    nvlink_generation: Literal[2, 3, 4, 5] | None = None
    nvswitch: bool = False
    power_w: float = Field(default=700, ge=0)
    price_usd: float = Field(default=30000, ge=0)


class Hca(Strict):
    device: str = Field(pattern=r"^[a-z0-9_]+$")
    netdev: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    pci: str = Field(pattern=r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
    numa: int = Field(strict=True, default=0, ge=0)
    gpu: int | None = Field(strict=True, default=None, ge=0, description="nearest GPU index")
    rate_gbps: Literal[10, 25, 40, 50, 56, 100, 200, 400, 800]
    fabric: Name = "compute"


class NodeType(Strict):
    description: str = ""
    gpu: Gpu | None = None
    hcas: list[Hca] = Field(default_factory=list, description="in rail order")
    power_w: float = Field(default=1000, ge=0, description="without GPUs")
    price_usd: float = Field(default=20000, ge=0, description="without GPUs")

    @model_validator(mode="after")
    def _hcas_are_consistent(self) -> NodeType:
        for label, values in (
            ("device", [h.device for h in self.hcas]),
            ("netdev", [h.netdev for h in self.hcas]),
            ("pci", [h.pci for h in self.hcas]),
        ):
            duplicates = sorted({v for v in values if values.count(v) > 1})
            if duplicates:
                raise ValueError(f"HCA {label} repeated: {', '.join(duplicates)}")
        gpus = self.gpu.count if self.gpu else 0
        for hca in self.hcas:
            if hca.gpu is not None and hca.gpu >= gpus:
                raise ValueError(f"HCA {hca.device} names GPU {hca.gpu}, but the node has {gpus}")
        return self


class Role(Strict):
    node_type: Name
    # Either a fixed count, or every slot of every scalable unit (compute nodes).
    count: int | None = Field(strict=True, default=None, ge=0)
    # reserved_slots: one host in each scalable_units.reserved_slots entry that names this role
    # (a fabric manager such as UFM), cabled to that slot's leaf ports.
    placement: Literal["count", "scalable_units", "reserved_slots"] = "count"
    hostname: str = Field(max_length=HOSTNAME_MAX + 40, description="template ending in {index}, e.g. dgx{index:03d}")
    site: Name | None = None
    fabrics: list[Name] = Field(default_factory=list, description="fabrics its nodes attach to")

    @field_validator("hostname")
    @classmethod
    def _hostname_ends_in_index(cls, template: str) -> str:
        parsed = _parse_template(template, HOSTNAME_FIELDS, NUMBER_FIELDS)
        if not parsed or parsed[-1][1] != "index":
            raise ValueError(
                "must end in {index} (with an optional format such as {index:03d}) so that hostlist ranges work"
            )
        # Try the template on a sample; load() checks every name it makes with the real sites.
        samples = [template.format(index=index, unit=1, slot=1, site="site", role="compute") for index in (1, 12)]
        for name in samples:
            problem = hostname_problem(name)
            if problem:
                raise ValueError(problem)
        if samples[0] == samples[1]:
            raise ValueError("makes the same name for different indexes")
        return template

    @model_validator(mode="after")
    def _count_matches_placement(self) -> Role:
        if self.placement == "count" and self.count is None:
            raise ValueError("needs count (or placement: scalable_units)")
        if self.placement == "scalable_units" and self.count is not None:
            raise ValueError("count is set by the scalable units; remove count")
        if self.placement == "reserved_slots" and self.count is not None:
            raise ValueError("count is set by the reserved slots that name this role; remove count")
        return self


class SwitchModel(Strict):
    model: CellText
    radix: int = Field(strict=True, ge=4, le=1024, description="ports per switch")
    port_speed_gbps: Literal[1, 10, 25, 40, 50, 56, 100, 200, 400, 800]
    power_w: float = Field(default=1700, ge=0)
    price_usd: float = Field(default=30000, ge=0)


class Dragonfly(Strict):
    terminals_per_router: int = Field(strict=True, ge=1, le=1024, description="p")
    routers_per_group: int = Field(strict=True, ge=1, le=1024, description="a")
    global_links_per_router: int = Field(strict=True, ge=1, le=1024, description="h")
    groups: int = Field(strict=True, ge=2, le=4096, description="g")

    @model_validator(mode="after")
    def _bounded(self) -> Dragonfly:
        routers = self.routers_per_group * self.groups
        if routers > MAX_SWITCHES:
            raise ValueError(f"{routers} routers (routers_per_group x groups); at most {MAX_SWITCHES} are supported")
        return self


class RoceQos(Strict):
    """A RoCE fabric's lossless settings, which the switches must match: RDMA traffic marked with
    `dscp`, trusted by DSCP, on one PFC `priority` with ECN, at the Ethernet `mtu` (4200 and up
    carries RoCE's 4096-byte MTU), through GID `gid_index` (RoCE v2). The roce_qos role applies
    them, the NCCL settings carry NCCL_IB_TC (DSCP << 2: the IP ToS byte; the NIC sets the ECN
    bits) and NCCL_IB_GID_INDEX."""

    priority: int = Field(strict=True, default=3, ge=0, le=7, description="the one PFC (lossless) priority")
    dscp: int = Field(strict=True, default=26, ge=0, le=63, description="DSCP of RDMA traffic (26: AF31)")
    ecn: bool = Field(strict=True, default=True, description="ECN (DCQCN) on the PFC priority")
    mtu: int = Field(strict=True, default=9000, ge=1500, le=9216, description="Ethernet MTU of the RDMA netdevs")
    gid_index: int = Field(strict=True, default=3, ge=0, le=255, description="GID index NCCL uses (3: RoCE v2, IPv4)")

    @property
    def traffic_class(self) -> int:
        """NCCL_IB_TC: the DSCP in the upper six bits of the traffic class (IP ToS) byte."""
        return self.dscp << 2


# OpenSM's routing engines (opensm --help, -R); ftree and updn are the ones for fat trees.
ROUTING_ENGINES = ("ftree", "updn", "minhop", "dfsssp", "sssp", "lash", "dor", "torus-2QoS", "nue", "dfp", "chain")
# The engine a subnet manager gets when the file names none, by fabric topology.
DEFAULT_ROUTING_ENGINE = {"fat_tree": "ftree", "rail_optimized_fat_tree": "ftree", "dragonfly": "dfsssp"}
# The largest IPoIB MTU in datagram mode: the 4096-byte IB MTU less the 4-byte IPoIB header.
IPOIB_DATAGRAM_MAX_MTU = 4092
# InfiniBand partition keys (IBTA; Linux's ipoib driver): 16 bits, the top one the membership bit
# (set: full member, clear: limited member), the low 15 the partition. 0x7fff is the default
# partition, which every port and the parent IPoIB interface are in already.
PKEY_FULL_MEMBER = 0x8000
PKEY_DEFAULT = 0x7FFF


def _partition_key(value: str) -> str:
    """A partition the fabric's IPoIB interfaces get a child interface on: its 15-bit key, 0x0001-0x7ffe,
    written as 0x and four hex digits (clusterforge sets the full-membership bit, as Linux does)."""
    if not re.fullmatch(r"0x[0-9a-fA-F]{1,4}", value):
        raise ValueError(f"partition key {value!r}: expected 0x and 1-4 hex digits, such as 0x0010")
    key = int(value, 16)
    if key & PKEY_FULL_MEMBER:
        raise ValueError(
            f"partition key {value}: give the 15-bit key (0x0001-0x7ffe) without the full-membership bit "
            f"0x8000; the child interface is created as a full member (key | 0x8000, {key:#06x})"
        )
    if key == 0:
        raise ValueError("partition key 0x0000 is invalid; expected 0x0001-0x7ffe")
    if key == PKEY_DEFAULT:
        raise ValueError(
            "partition key 0x7fff is the default partition, which the parent IPoIB interface is in already; "
            "expected 0x0001-0x7ffe"
        )
    return f"{key:#06x}"


def _hex_if_int(value: Any) -> Any:
    """YAML reads an unquoted 0x0010 as the integer 16: the same key, written back in hex."""
    return f"{value:#x}" if isinstance(value, int) and not isinstance(value, bool) else value


class SubnetManagerHost(Strict):
    host: str = Field(max_length=HOSTNAME_MAX, description="a host of the topology attached to the fabric")
    # The SM with the highest priority (0-15) is master; the others stand by.
    priority: int = Field(strict=True, default=0, ge=0, le=15)
    # The local port GUIDs OpenSM binds to (one SM per port, one port per rail); none: every
    # InfiniBand port of the host (Debian's PORTS=ALL).
    guids: list[Annotated[str, Field(pattern=r"^0x[0-9a-f]{16}$")]] = Field(
        default_factory=list, description="port GUIDs, 0x and 16 hex digits (ibstat -p)"
    )


class SubnetManager(Strict):
    """Who manages an InfiniBand fabric: OpenSM on some of its hosts, or UFM (which runs its own
    SM: clusterforge installs none)."""

    kind: Literal["opensm", "ufm"]
    routing_engine: Literal[ROUTING_ENGINES] | None = Field(  # type: ignore[valid-type]
        default=None, description="default: ftree for fat trees, dfsssp for a dragonfly"
    )
    hosts: list[SubnetManagerHost] = Field(default_factory=list)

    @model_validator(mode="after")
    def _opensm_has_hosts(self) -> SubnetManager:
        if self.kind == "opensm" and not self.hosts:
            raise ValueError("kind opensm needs hosts: the hosts that run OpenSM")
        names = [h.host for h in self.hosts]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"host(s) listed twice: {', '.join(duplicates)}")
        return self


class Fabric(Strict):
    purpose: Literal["compute", "storage", "inband", "oob"]
    link_layer: Literal["infiniband", "ethernet"]
    topology: Literal["fat_tree", "rail_optimized_fat_tree", "dragonfly"]
    switch: SwitchModel
    rails: int = Field(strict=True, default=1, ge=1, le=16)
    oversubscription: float = Field(
        default=1.0, ge=1.0, le=16.0, description="leaf downlinks per uplink; 1 is non-blocking"
    )
    dragonfly: Dragonfly | None = None
    # Rail-optimised fat trees beside rack-scale NVLink: NVIDIA's layout (DGX SuperPOD GB200 RA, 4.2),
    # one leaf per NVLink rack and rail, and each rail's leaves of a unit under their own spines.
    spine_leaf_groups: bool = Field(
        strict=True, default=False, description="one leaf per NVLink rack and rail; spines per rail and unit"
    )
    # Lossless RoCE settings; Ethernet fabrics only (an Ethernet fabric without them gets RoceQos()'s defaults).
    roce: RoceQos | None = None
    # InfiniBand only: who runs the subnet manager, and the IPoIB interfaces' mode and MTU.
    subnet_manager: SubnetManager | None = None
    ipoib_mode: Literal["datagram", "connected"] = "datagram"
    ipoib_mtu: int = Field(
        strict=True, default=2044, ge=1280, le=65520, description="IPoIB MTU; 2044 fits the 2048-byte IB MTU"
    )
    # The partitions (15-bit keys, 0x0001-0x7ffe) each IPoIB interface gets a child interface on.
    ipoib_pkeys: list[Annotated[str, BeforeValidator(_hex_if_int), AfterValidator(_partition_key)]] = Field(
        default_factory=list, description="partition keys, e.g. 0x0010; a child interface per key on each rail"
    )
    # Price of one cable per link tier, overriding the bill of materials' defaults.
    cable_price_usd: dict[Literal["node-leaf", "leaf-spine", "spine-core", "terminal", "local", "global"], float] = (
        Field(default_factory=dict)
    )

    @model_validator(mode="after")
    def _dragonfly_parameters(self) -> Fabric:
        if self.topology == "dragonfly" and self.dragonfly is None:
            raise ValueError("topology dragonfly needs the dragonfly parameters (p, a, h, groups)")
        if self.topology != "dragonfly" and self.dragonfly is not None:
            raise ValueError(f"dragonfly parameters given for a {self.topology} fabric")
        if self.topology == "rail_optimized_fat_tree" and self.rails < 2:
            raise ValueError("a rail-optimised fat tree needs rails >= 2")
        if self.spine_leaf_groups and self.topology != "rail_optimized_fat_tree":
            raise ValueError(
                f"spine_leaf_groups applies to rail_optimized_fat_tree only; this fabric is {self.topology}"
            )
        if self.roce is not None and self.link_layer != "ethernet":
            raise ValueError(f"roce settings apply to link_layer ethernet only; this fabric is {self.link_layer}")
        return self

    @property
    def roce_qos(self) -> RoceQos | None:
        """The fabric's RoCE settings: those given, else the defaults, on Ethernet; None on InfiniBand."""
        if self.link_layer != "ethernet":
            return None
        return self.roce or RoceQos()

    @model_validator(mode="after")
    def _infiniband_settings(self) -> Fabric:
        if self.link_layer != "infiniband" and self.subnet_manager is not None:
            raise ValueError("subnet_manager is given for an ethernet fabric; only InfiniBand has one")
        if self.link_layer != "infiniband" and self.ipoib_pkeys:
            raise ValueError("ipoib_pkeys is given for an ethernet fabric; partition keys are InfiniBand's")
        repeated = sorted({key for key in self.ipoib_pkeys if self.ipoib_pkeys.count(key) > 1})
        if repeated:
            raise ValueError(f"ipoib_pkeys lists partition key(s) twice: {', '.join(repeated)}")
        if self.ipoib_mode == "datagram" and self.ipoib_mtu > IPOIB_DATAGRAM_MAX_MTU:
            raise ValueError(
                f"ipoib_mtu {self.ipoib_mtu} in datagram mode; expected at most {IPOIB_DATAGRAM_MAX_MTU} "
                "(the 4096-byte IB MTU less the IPoIB header), or ipoib_mode connected"
            )
        return self

    @property
    def ipoib_child_pkeys(self) -> list[str]:
        """The keys the IPoIB child interfaces are created with: each partition with the full-membership
        bit set (0x0010 -> 0x8010), as Linux's ipoib driver sets it and names the child (ib0.8010)."""
        return [f"{int(key, 16) | PKEY_FULL_MEMBER:#06x}" for key in self.ipoib_pkeys]

    @property
    def routing_engine(self) -> str | None:
        """OpenSM's routing engine: the file's, else the default for the topology; None without OpenSM."""
        if self.subnet_manager is None or self.subnet_manager.kind != "opensm":
            return None
        return self.subnet_manager.routing_engine or DEFAULT_ROUTING_ENGINE[self.topology]


class ReservedSlot(Strict):
    unit: int = Field(strict=True, ge=1)
    slot: int = Field(strict=True, ge=1)
    purpose: str = ""
    # The role (placement: reserved_slots) whose host sits in the slot; none leaves it empty.
    role: RoleName | None = None


class ScalableUnits(Strict):
    count: int = Field(strict=True, ge=1, le=4096)
    nodes_per_unit: int = Field(strict=True, ge=1, le=512)
    reserved_slots: list[ReservedSlot] = Field(default_factory=list)

    @model_validator(mode="after")
    def _reserved_slots_exist(self) -> ScalableUnits:
        seen = set()
        for reserved in self.reserved_slots:
            if reserved.unit > self.count or reserved.slot > self.nodes_per_unit:
                raise ValueError(
                    f"reserved slot {reserved.unit}/{reserved.slot} is outside "
                    f"{self.count} units of {self.nodes_per_unit} slots"
                )
            if (reserved.unit, reserved.slot) in seen:
                raise ValueError(f"reserved slot {reserved.unit}/{reserved.slot} listed twice")
            seen.add((reserved.unit, reserved.slot))
        return self


IPv4Net = Annotated[str, Field(description="IPv4 network in CIDR notation")]


def _network(value: str) -> str:
    try:
        return str(ipaddress.IPv4Network(value, strict=True))
    except ValueError as exc:
        raise ValueError(f"expected an IPv4 network such as 10.0.0.0/16: {exc}") from None


class Addressing(Strict):
    oob: IPv4Net | None = None
    inband: IPv4Net
    storage: IPv4Net | None = None
    ipoib: list[IPv4Net] = Field(default_factory=list, description="one subnet per rail")
    # Addresses below this offset in each subnet are left for gateways and services.
    first_host_offset: int = Field(strict=True, default=10, ge=1)

    @field_validator("oob", "inband", "storage")
    @classmethod
    def _valid_network(cls, value: str | None) -> str | None:
        return None if value is None else _network(value)

    @field_validator("ipoib")
    @classmethod
    def _valid_networks(cls, values: list[str]) -> list[str]:
        return [_network(value) for value in values]


class AnsibleSettings(Strict):
    """How Ansible reaches the hosts: variables for every host and the ansible_host template."""

    vars: dict[str, Any] = Field(default_factory=dict)
    host: str = Field(
        default="{inband}", max_length=255, description="ansible_host; fields: name, inband, oob, storage"
    )
    # Every group a host belongs to costs Ansible work per host and task; management Ethernet
    # leaves are rarely a target, so by default only compute and storage fabrics get groups.
    leaf_groups: list[Name] | None = Field(
        default=None, description="fabrics that get fabric, leaf and pod groups; default: compute and storage fabrics"
    )
    # Orchestrator group -> the roles it holds, replacing that group's default (groups.ORCHESTRATOR_GROUPS).
    orchestrator_groups: dict[str, list[RoleName]] = Field(
        default_factory=dict, description="e.g. {slurm_login: [head]}; default: head, compute and login roles"
    )

    # Roles whose hosts have no GPUs but get the GPU software (groups.GPU_SOFTWARE).
    gpu_software: list[RoleName] = Field(
        default_factory=list,
        description="roles whose nodes get the gpu stage without GPUs (clusterforge_gpu_components chooses what)",
    )

    @field_validator("orchestrator_groups")
    @classmethod
    def _known_orchestrator_groups(cls, groups: dict[str, list[str]]) -> dict[str, list[str]]:
        unknown = sorted(set(groups) - set(ORCHESTRATOR_GROUPS))
        if unknown:
            raise ValueError(f"unknown group(s) {unknown}; expected some of {sorted(ORCHESTRATOR_GROUPS)}")
        return groups

    @field_validator("host")
    @classmethod
    def _known_fields(cls, template: str) -> str:
        _parse_template(template, {"name", "inband", "oob", "storage"}, numbers=set())
        return template


class NvlinkSwitchTray(Strict):
    model: CellText = "NVLink switch tray"
    power_w: float = Field(default=800, ge=0)
    price_usd: float = Field(default=40000, ge=0)


class NvlinkDomain(Strict):
    """Rack-scale NVLink (GB200/GB300 NVL72, NVL36x2): compute trays of one node type joined by
    NVLink switch trays into one domain. A preset (nvlink.PRESETS) fills the counts it knows;
    a field given here overrides it. nvlink.problems() checks the counts against each other."""

    preset: Literal["gb200_nvl72", "gb200_nvl36x2", "gb300_nvl72"] | None = None
    node_type: Name = Field(description="the compute tray's node type")
    gpus: int | None = Field(strict=True, default=None, ge=1, le=576, description="GPUs in one domain")
    racks: int | None = Field(strict=True, default=None, ge=1, le=8, description="racks one domain spans")
    trays_per_rack: int | None = Field(strict=True, default=None, ge=1, le=64, description="compute trays")
    gpus_per_tray: int | None = Field(strict=True, default=None, ge=1, le=16)
    tray_gpu_slots: int | None = Field(strict=True, default=None, ge=1, le=16, description="GPUs a tray holds")
    switch_trays_per_rack: int | None = Field(strict=True, default=None, ge=0, le=64)
    links_per_gpu: int | None = Field(
        strict=True, default=None, ge=1, le=64, description="NVLink links from each GPU to the switch chips"
    )
    cable_cartridges_per_rack: int | None = Field(
        strict=True, default=None, ge=0, le=16, description="NVLink copper cable cartridges (the spine)"
    )
    switch_tray: NvlinkSwitchTray = Field(default_factory=NvlinkSwitchTray)
    cooling: Literal["liquid", "air"] | None = None
    # Slurm topology/block BlockSizes, in trays; the first is the base block.
    block_sizes: list[int] = Field(default_factory=list, max_length=16)


class Topology(Strict):
    plugin: Literal["topology"] = "topology"
    cluster: ClusterInfo
    sites: list[Site] = Field(min_length=1)
    node_types: dict[Name, NodeType] = Field(min_length=1)
    roles: dict[RoleName, Role] = Field(min_length=1)
    fabrics: dict[Name, Fabric] = Field(default_factory=dict)
    scalable_units: ScalableUnits | None = None
    nvlink_domain: NvlinkDomain | None = None
    addressing: Addressing
    ansible: AnsibleSettings = Field(default_factory=AnsibleSettings)
    # Ansible's constructed options, applied by the inventory plugin (see its documentation).
    compose: dict[str, str] = Field(default_factory=dict)
    groups: dict[str, str] = Field(default_factory=dict)
    keyed_groups: list[dict[str, Any]] = Field(default_factory=list)
    strict: bool = False
    leading_separator: bool = True
    use_extra_vars: bool = False

    # Group and label prefix for what clusterforge derives (groups, Kubernetes labels).
    label_prefix: str = Field(
        default="clusterforge.io",
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        description="a DNS subdomain, as Kubernetes requires of label prefixes",
    )
