"""Reader for the cabling plan, cabling/cabling.csv of ``clusterforge topology render``.

    fabric,tier,source_device,source_port,destination_device,destination_port,speed_gbps
    compute,node-leaf,dgx001,mlx5_0,compute-su1-r1-leaf1,1,400
    compute,leaf-spine,compute-su1-r1-leaf1,33,compute-spine01,1,400

A switch port is a number; a host port is the HCA device, which ibnetdiscover names by its node
description "<host> <device>" (rdma-ndd), port 1. The links come out in the form cabling_judge
takes ({"a", "a_port", "b", "b_port"}). Stdlib only.
"""

from __future__ import annotations

import csv
import io

from ansible.module_utils.verdicts import ParseError

COLUMNS = ("fabric", "tier", "source_device", "source_port", "destination_device", "destination_port", "speed_gbps")
# InfiniBand speed names by the data rate of a 4x link (IBTA: 10, 14, 25, 50, 100 and 200 Gb/s a lane).
SPEED_BY_GBPS = {40: "QDR", 56: "FDR", 100: "EDR", 200: "HDR", 400: "NDR", 800: "XDR"}


class CablingPlanError(ParseError):
    pass


def _end(device: str, port: str, hca_port: int) -> tuple:
    if port.strip().isdigit():
        return device, int(port)
    return f"{device} {port}", hca_port


def plan_links(text: str, fabric: str | None = None, hca_port: int = 1, source: str = "cabling.csv") -> tuple:
    """(links of the fabric, set of the plan's speeds in Gb/s). Without `fabric` the plan must
    hold one fabric only."""
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        return [], set()
    missing = [c for c in COLUMNS if c not in rows[0]]
    if missing:
        raise CablingPlanError(f"no column(s) {', '.join(missing)}: expected {','.join(COLUMNS)}", source=source)
    fabrics = sorted({row["fabric"] for row in rows})
    if fabric is None:
        if len(fabrics) > 1:
            raise CablingPlanError(f"the plan holds fabrics {', '.join(fabrics)}: name one", source=source)
        fabric = fabrics[0]
    elif fabric not in fabrics:
        raise CablingPlanError(f"no fabric {fabric!r} in the plan (it has {', '.join(fabrics)})", source=source)
    links, speeds = [], set()
    for number, row in enumerate(rows, start=2):
        if row["fabric"] != fabric:
            continue
        try:
            a, a_port = _end(row["source_device"], row["source_port"], hca_port)
            b, b_port = _end(row["destination_device"], row["destination_port"], hca_port)
            if row["speed_gbps"]:
                speeds.add(int(float(row["speed_gbps"])))
        except (AttributeError, ValueError) as exc:
            raise CablingPlanError(f"bad row: {exc}", source=source, line=number) from None
        links.append({"a": a, "a_port": a_port, "b": b, "b_port": b_port})
    return links, speeds


def speed_name(speeds: set) -> str | None:
    """The InfiniBand speed name of a plan with one speed; None for none or several."""
    return SPEED_BY_GBPS.get(next(iter(speeds))) if len(speeds) == 1 else None


def plan_expectation(text: str, fabric: str | None = None, hca_port: int = 1, source: str = "cabling.csv") -> tuple:
    """(the cabling_judge expectation of the plan: links, and speed where the plan names one
    InfiniBand speed; a note when its speeds name none, else None)."""
    links, speeds = plan_links(text, fabric, hca_port, source)
    expected = {"links": links}
    speed = speed_name(speeds)
    if speed:
        expected["speed"] = speed
    note = None
    if speed is None and speeds:
        note = f"plan speeds {sorted(speeds)} Gb/s name no single InfiniBand speed: speed not judged"
    return expected, note
