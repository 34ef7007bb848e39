"""The expected cabling: cabling/cabling.csv with every link of every fabric, and for
each InfiniBand fabric an ibnetdiscover node-name-map, cabling/<fabric>.node-name-map.

The CSV is what the cabling crew works from and what a link check compares against:
fabric,tier,source_device,source_port,destination_device,destination_port,speed_gbps, one
row per link in the order the generator cabled them (nodes up to the spines).

A node-name-map (`ibnetdiscover --node-name-map FILE`, also read by iblinkinfo,
ibqueryerrors and opensm) maps a node GUID to a name, one `<GUID> "<name>"` line per node,
`#` starting a comment. GUIDs are burnt into the switches, so clusterforge cannot know
them: each switch gets a placeholder line, commented out,

    # 0x0000000000000000 "compute-su1-r1-leaf1"

WHAT THE OPERATOR FILLS IN: for every switch, its node GUID (from `ibswitches` or the
switch's label, matched to the switch by its rack position) in place of the zeros, then
removes the leading `# ` so the line takes effect. Host HCAs are not listed: they report
`<hostname> <device>` as their node description already (rdma-ndd sets it).
"""

from __future__ import annotations

import csv
import io

from clusterforge.topology import ClusterPlan
from clusterforge.topology.render.common import generated_by

CSV_HEADER = (
    "fabric",
    "tier",
    "source_device",
    "source_port",
    "destination_device",
    "destination_port",
    "speed_gbps",
)
PLACEHOLDER_GUID = "0x0000000000000000"


def cabling_csv(plan: ClusterPlan) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for name, fabric in plan.fabrics.items():
        for link in fabric.links:
            writer.writerow((name, link.tier, link.a, link.a_port, link.b, link.b_port, link.speed_gbps))
    return out.getvalue()


def node_name_map(plan: ClusterPlan, fabric_name: str) -> str:
    fabric = plan.fabrics[fabric_name]
    lines = [
        f"# ibnetdiscover node-name-map for fabric {fabric_name} ({len(fabric.switches)} switches),",
        f"# {generated_by(plan)}.",
        "# Replace each placeholder GUID by the switch's node GUID (see ibswitches) and remove the",
        '# leading "# " of its line. Format: <node GUID> "<name>".',
    ]
    for tier in fabric.tiers():
        lines.append(f"# --- {tier} switches")
        lines.extend(f'# {PLACEHOLDER_GUID} "{s.name}"' for s in fabric.switches if s.tier == tier)
    return "\n".join(lines) + "\n"


def files(plan: ClusterPlan) -> dict[str, str]:
    found = {"cabling/cabling.csv": cabling_csv(plan)}
    for name, fabric in plan.fabrics.items():
        if fabric.spec.link_layer == "infiniband" and fabric.switches:
            found[f"cabling/{name}.node-name-map"] = node_name_map(plan, name)
    return found
