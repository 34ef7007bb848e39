"""`clusterforge topology validate` at the size limit (model.MAX_HOSTS hosts), one file per
fabric kind: a fat tree, a rail-optimised fat tree and a dragonfly.

validate loads without links (load(links=False)): the switches and which host is cabled
where, every size check, no link objects; then it checks the Kubernetes labels. Measured in
the same run on the same file, each in its own process:
  * `clusterforge topology validate FILE`, the command (target: under 5 seconds),
  * load(FILE, links=False), what validate loads, against
  * load(FILE), the full build that show, render and draw make: the baseline.
The ratios (wall and CPU) say what skipping the links saves whatever this machine's speed;
on a shared machine CPU seconds are the steadier figure.

    python bench/validate_scale.py [--repeat 1] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inventory_scale import BIN, _best, measure

from clusterforge.topology.model import MAX_HOSTS

# 1,250 scalable units of 160 nodes: exactly MAX_HOSTS compute hosts.
UNITS, SLOTS = 1250, 160
LOAD = "import sys; from clusterforge.topology import load; load(sys.argv[1], links=sys.argv[2] == 'links')"


def _fabric(kind: str) -> tuple[dict, int]:
    """The compute fabric of each kind, and the HCAs a node has on it."""
    if kind == "fat_tree":
        # 64 nodes a 128-port leaf, 3 leaves a unit: 3,750 leaves in 60 pods under 128-port cores
        return {"topology": "fat_tree", "switch": {"model": "q128", "radix": 128, "port_speed_gbps": 400}}, 1
    if kind == "rail_optimized_fat_tree":
        # 8 rails x 2 leaves a unit: 20,000 256-port leaves in 157 pods
        switch = {"model": "q256", "radix": 256, "port_speed_gbps": 400}
        return {"topology": "rail_optimized_fat_tree", "rails": 8, "switch": switch}, 8
    # p + (a - 1) + h = 16 + 31 + 16 = 63 ports; 391 groups of 512 terminals (200,192 >= MAX_HOSTS);
    # a*h = 512 global ports a group over 390 partners: an uneven split.
    dragonfly = {"terminals_per_router": 16, "routers_per_group": 32, "global_links_per_router": 16, "groups": 391}
    switch = {"model": "r64", "radix": 64, "port_speed_gbps": 200}
    return {"topology": "dragonfly", "dragonfly": dragonfly, "switch": switch}, 1


def limit_topology(kind: str) -> dict:
    fabric, hcas = _fabric(kind)
    return {
        "cluster": {"name": "limit", "domain": "limit.example.com"},
        "sites": [{"name": "dc1"}],
        "node_types": {
            "node": {
                "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8, "nvlink_generation": 4, "nvswitch": True},
                "hcas": [
                    {"device": f"mlx5_{i}", "netdev": f"ib{i}", "pci": f"0000:{i + 1:02x}:00.0", "rate_gbps": 400}
                    for i in range(hcas)
                ],
            }
        },
        "roles": {"compute": {"node_type": "node", "placement": "scalable_units", "hostname": "gpu{index:06d}"}},
        "fabrics": {"compute": {"purpose": "compute", "link_layer": "infiniband", **fabric}},
        "scalable_units": {"count": UNITS, "nodes_per_unit": SLOTS},
        "addressing": {"inband": "10.0.0.0/14"},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each measurement, best kept (default 1)")
    args = parser.parse_args()
    assert UNITS * SLOTS == MAX_HOSTS, "the files must sit at the size limit"
    results: dict = {"hosts": MAX_HOSTS}
    with tempfile.TemporaryDirectory(prefix="cf-bench-") as workdir:
        for kind in ("fat_tree", "rail_optimized_fat_tree", "dragonfly"):
            path = Path(workdir) / f"{kind}.topology.yml"
            path.write_text(yaml.safe_dump(limit_topology(kind), sort_keys=False))
            commands = {
                "validate": [str(BIN / "clusterforge"), "topology", "validate", str(path)],
                "load without links": [sys.executable, "-c", LOAD, str(path), "no-links"],
                "full build": [sys.executable, "-c", LOAD, str(path), "links"],
            }
            runs: dict[str, list[dict]] = {name: [] for name in commands}
            for _ in range(args.repeat):  # interleaved, so all see the same drift of this machine
                for name, command in commands.items():
                    runs[name].append(measure(command))
            found = {name: _best(measured) for name, measured in runs.items()}
            for name in ("validate", "load without links"):
                found[f"{name} / full build"] = {
                    key: round(found[name][key] / found["full build"][key], 3) for key in ("wall_s", "cpu_s")
                }
            results[kind] = found
    for kind, found in results.items():
        print(f"{kind:26} {found}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
