"""Bill of materials: servers, GPUs, switches, cables and transceivers, with power and price.

Servers, GPUs and switches cost what the topology says (`power_w`, `price_usd` of node
types, GPUs and fabric switches). Cables and transceivers come from DEFAULTS below, keyed
`<kind>_<speed>g`; a link takes the item of the smallest speed class at or above its own
speed (a 56G link takes the 100G item). Override items with `prices`, e.g.
`{"transceiver_400g": {"price_usd": 700}}`; a fabric's `cable_price_usd: {tier: usd}` sets
the price of that tier's cable (DAC, AOC, fibre or Cat6), never of its transceivers.

Which medium a link takes is a rule, since the topology knows no rack positions:
- links at 1G: a Cat6 patch cable (BMC and management ports);
- node-leaf and dragonfly terminal links: a DAC up to 200G when the leaf sits in the node's
  rack, else an AOC. A plain fat tree's leaf is taken as top-of-rack; a rail-optimised
  leaf serves one rail of a whole scalable unit from its own rack, so its links leave the rack;
- leaf-spine, spine-core and dragonfly global links: two transceivers and a fibre;
- dragonfly local links: a DAC (a group's routers sit together).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from clusterforge.topology import ClusterPlan, nvlink
from clusterforge.topology.fabric import FabricPlan, Link
from clusterforge.topology.model import Fabric

# Every link tier a generator produces, in the order reports list them.
LINK_TIERS = ("node-leaf", "leaf-spine", "spine-core", "terminal", "local", "global")
_OPTICAL_TIERS = ("leaf-spine", "spine-core", "global")
_EDGE_TIERS = ("node-leaf", "terminal")
DAC_MAX_GBPS = 200  # passive copper reaches a rack at 200G; beyond that it is too short
NVLINK_CARTRIDGE = "NVLink copper cable cartridge (spine)"
NVLINK_LINK = "NVLink link, GPU to switch chip (copper, in the spine)"


@dataclass(frozen=True)
class Cost:
    price_usd: float
    power_w: float


# Rough 2024 street prices (USD) and typical power draw (W) per item. Inputs, not facts:
# override them with `prices` for a real quote.
DEFAULTS: dict[str, Cost] = {
    "cat6_1g": Cost(5, 0),
    "dac_10g": Cost(25, 0),
    "dac_25g": Cost(35, 0),
    "dac_100g": Cost(80, 0),
    "dac_200g": Cost(150, 0),
    "dac_400g": Cost(250, 0),
    "dac_800g": Cost(400, 0),
    "aoc_10g": Cost(60, 1),
    "aoc_25g": Cost(90, 2),
    "aoc_100g": Cost(350, 5),
    "aoc_200g": Cost(650, 8),
    "aoc_400g": Cost(1100, 16),
    "aoc_800g": Cost(1800, 24),
    "transceiver_10g": Cost(20, 1),
    "transceiver_25g": Cost(40, 1.2),
    "transceiver_100g": Cost(150, 3.5),
    "transceiver_200g": Cost(450, 5),
    "transceiver_400g": Cost(900, 9),
    "transceiver_800g": Cost(1500, 15),
    "fibre": Cost(40, 0),  # one patch fibre (MPO or duplex LC) per optical link, any speed
}


class BomError(ValueError):
    """A price input names an item or tier that does not exist."""


@dataclass(frozen=True)
class Media:
    cable: str  # DEFAULTS key of the cable
    transceivers: str | None  # DEFAULTS key of the transceiver, two per link, if any

    @property
    def kind(self) -> str:
        return self.cable.split("_")[0]


@dataclass(frozen=True)
class BomLine:
    category: str  # server, gpu, nvlink (switch trays, cable cartridges, links, racks), switch, cable, transceiver
    item: str  # node type, GPU model, switch model or DEFAULTS key
    fabric: str  # empty for servers and GPUs
    tier: str  # switch tier or link tier; empty for servers and GPUs
    quantity: int
    unit_power_w: float
    unit_price_usd: float

    @property
    def power_w(self) -> float:
        return self.quantity * self.unit_power_w

    @property
    def price_usd(self) -> float:
        return self.quantity * self.unit_price_usd


def _item(kind: str, speed_gbps: int) -> str:
    """The DEFAULTS key of the smallest speed class of `kind` that carries `speed_gbps`."""
    classes = sorted(int(key.split("_")[1][:-1]) for key in DEFAULTS if key.startswith(f"{kind}_"))
    for speed in classes:
        if speed >= speed_gbps:
            return f"{kind}_{speed}g"
    return f"{kind}_{classes[-1]}g"


def media(spec: Fabric, link: Link) -> Media:
    """What one link is built from (see the module docstring for the rule)."""
    speed = link.speed_gbps
    if speed <= 1:
        return Media("cat6_1g", None)
    if link.tier in _EDGE_TIERS:
        in_rack = spec.topology != "rail_optimized_fat_tree"
        kind = "dac" if in_rack and speed <= DAC_MAX_GBPS else "aoc"
        return Media(_item(kind, speed), None)
    if link.tier == "local":
        return Media(_item("dac", speed), None)
    if link.tier in _OPTICAL_TIERS:
        return Media("fibre", _item("transceiver", speed))
    raise BomError(f"link tier {link.tier!r} has no cabling rule; expected one of {', '.join(LINK_TIERS)}")


def media_counts(fabric: FabricPlan) -> dict[str, int]:
    """Cables by kind (aoc, cat6, dac, fibre) and the transceiver count of one fabric."""
    cables: Counter[str] = Counter()
    transceivers = 0
    for link in fabric.links:
        used = media(fabric.spec, link)
        cables[used.kind] += 1
        transceivers += 2 if used.transceivers else 0
    return {**{kind: cables[kind] for kind in sorted(cables)}, "transceivers": transceivers}


def _costs(prices: Mapping[str, Mapping[str, float] | Cost] | None) -> dict[str, Cost]:
    costs = dict(DEFAULTS)
    for key, given in (prices or {}).items():
        if key not in DEFAULTS:
            raise BomError(f"price for unknown item {key!r}; expected one of {', '.join(DEFAULTS)}")
        if isinstance(given, Cost):
            costs[key] = given
            continue
        unknown = set(given) - {"price_usd", "power_w"}
        if unknown:
            raise BomError(f"price for {key}: unknown field(s) {sorted(unknown)}; expected price_usd, power_w")
        base = DEFAULTS[key]
        costs[key] = Cost(given.get("price_usd", base.price_usd), given.get("power_w", base.power_w))
    return costs


def bill(plan: ClusterPlan, prices: Mapping[str, Mapping[str, float] | Cost] | None = None) -> list[BomLine]:
    """Every line of the bill: servers and GPUs per node type, then per fabric its switches
    per tier and its cables and transceivers per link tier. Equal lines are merged."""
    costs = _costs(prices)
    topology = plan.topology
    quantities: Counter[tuple[str, str, str, str, float, float]] = Counter()
    hosts_per_type = Counter(host.node_type for host in plan.hosts)
    for type_name, node_type in topology.node_types.items():
        count = hosts_per_type[type_name]
        if not count:
            continue
        quantities["server", type_name, "", "", node_type.power_w, node_type.price_usd] += count
        if node_type.gpu:
            gpu = node_type.gpu
            quantities["gpu", gpu.model, "", "", gpu.power_w, gpu.price_usd] += count * gpu.count
    quantities.update(_nvlink_lines(plan))
    for name, fabric in plan.fabrics.items():
        spec = fabric.spec
        switch = spec.switch
        for tier in fabric.tiers():
            count = sum(1 for s in fabric.switches if s.tier == tier)
            quantities["switch", switch.model, name, tier, switch.power_w, switch.price_usd] += count
        unknown = set(spec.cable_price_usd) - set(LINK_TIERS)
        if unknown:
            raise BomError(
                f"fabrics.{name}.cable_price_usd: unknown tier(s) {', '.join(sorted(unknown))}; "
                f"expected some of {', '.join(LINK_TIERS)}"
            )
        for link in fabric.links:
            used = media(spec, link)
            cable = costs[used.cable]
            cable_price = spec.cable_price_usd.get(link.tier, cable.price_usd)
            quantities["cable", used.cable, name, link.tier, cable.power_w, cable_price] += 1
            if used.transceivers:
                optic = costs[used.transceivers]
                quantities["transceiver", used.transceivers, name, link.tier, optic.power_w, optic.price_usd] += 2
    lines = [BomLine(c, item, f, tier, n, power, price) for (c, item, f, tier, power, price), n in quantities.items()]
    # Counter keeps insertion order: servers, GPUs, then fabric by fabric; order links by tier.
    return sorted(lines, key=lambda line: _order(line, list(plan.fabrics)))


def _nvlink_lines(plan: ClusterPlan) -> Counter:
    """NVLink switch trays; the NVLink wiring (the copper cable cartridges of each rack's spine
    and the GPU-to-switch links through them), where the domain's counts give it; and one line
    per rack naming its cooling and draw. The draw is the sum of the rack's trays (already on the
    server, GPU and switch tray lines) and the cartridges and links are parts of the rack with no
    price of their own, so these lines add no power and no price."""
    spec = plan.topology.nvlink_domain
    found = nvlink.totals(plan.topology, plan.hosts)
    lines: Counter = Counter()
    if spec is None or found is None:
        return lines
    tray = spec.switch_tray
    lines["nvlink", tray.model, "", "switch tray", tray.power_w, tray.price_usd] += found["switch_trays"]
    if found["cable_cartridges"] is not None:
        lines["nvlink", NVLINK_CARTRIDGE, "", "cable cartridge", 0, 0] += found["cable_cartridges"]
    if found["links"] is not None:
        lines["nvlink", NVLINK_LINK, "", "link", 0, 0] += found["links"]
    lines["nvlink", f"{found['cooling']}-cooled rack, {found['rack_kw']:.1f} kW", "", "rack", 0, 0] += found["racks"]
    return lines


def _order(line: BomLine, fabrics: list[str]) -> tuple:
    category = ("server", "gpu", "nvlink", "switch", "cable", "transceiver").index(line.category)
    if not line.fabric:
        return (0, category, "")
    tiers = ("leaf", "spine", "core", "router", *LINK_TIERS)
    return (1, fabrics.index(line.fabric), tiers.index(line.tier), category, line.item)


def totals(lines: list[BomLine]) -> dict[str, float]:
    return {
        "power_kw": round(sum(line.power_w for line in lines) / 1000, 3),
        "price_usd": round(sum(line.price_usd for line in lines), 2),
    }


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


CSV_HEADER = (
    "category",
    "item",
    "fabric",
    "tier",
    "quantity",
    "unit_power_w",
    "unit_price_usd",
    "power_w",
    "price_usd",
)


def bom_csv(plan: ClusterPlan, prices: Mapping[str, Mapping[str, float] | Cost] | None = None) -> str:
    """The bill as CSV, one row per line and a last `total` row."""
    lines = bill(plan, prices)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for line in lines:
        writer.writerow(
            (
                line.category,
                line.item,
                line.fabric,
                line.tier,
                line.quantity,
                _number(line.unit_power_w),
                _number(line.unit_price_usd),
                _number(line.power_w),
                _number(line.price_usd),
            )
        )
    power = round(sum(line.power_w for line in lines), 2)
    writer.writerow(("total", "", "", "", "", "", "", _number(power), _number(totals(lines)["price_usd"])))
    return out.getvalue()


def files(plan: ClusterPlan) -> dict[str, str]:
    return {"bom.csv": bom_csv(plan)}
