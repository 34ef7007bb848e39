"""Bytes a lab fetches from outside on its first site.yml, read from its package cache.

The base stage puts apt-cacher-ng on the head node (roles/package_cache) and every node's apt
through it, so a package crosses the uplink once however many nodes install it. For each lab
size this brings up a fresh lab, runs site.yml once, and reads head01's transfer log: bytes the
cache fetched from upstream (outside) and bytes it served to the nodes. The target: the 3-node
lab (small: a head and two compute nodes) fetches within 10% of what the 2-node lab (tiny: a head
and one compute node; every node type once) fetches.

Not counted: what head01 installs before its cache runs (apt-cacher-ng itself, fetched through
the CI host's cache or directly) and https sources, which apt reaches directly.

    python bench/package_cache.py [--sizes tiny small] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import docker
from ansible_cfg import PROJECT, run_site

from clusterforge.lab import apt_cache, spec

LAB = "cfpkgcache"
LOG = "/var/log/apt-cacher-ng/apt-cacher.log"


def clusterforge(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], env=env, check=True, stdout=subprocess.DEVNULL)


def measure(size: str) -> dict:
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "CLUSTERFORGE_STATE_DIR": state}
        os.environ["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = str(Path(state) / "facts")
        clusterforge(env, "lab", "down", "--name", LAB)
        clusterforge(env, "lab", "up", "--size", size, "--name", LAB)
        try:
            wall, _ = run_site(
                PROJECT / "ansible.cfg", Path(state) / "labs" / LAB / "lab.topology.yml", idempotent=False
            )
            head = docker.from_env().containers.get(spec.container_name(LAB, "head01"))
            log = head.exec_run(["cat", LOG]).output.decode()
        finally:
            clusterforge(env, "lab", "down", "--name", LAB)
    return {"size": size, "nodes": 1 + spec.SIZES[size], "site_wall_s": round(wall, 1)} | apt_cache.transfers(log)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["tiny", "small"], choices=list(spec.SIZES))
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    rows = [measure(size) for size in args.sizes]
    print(f"{'lab':8} {'nodes':>5} {'fetched from outside':>21} {'served to nodes':>16} {'errors':>6} {'site.yml':>9}")
    for row in rows:
        print(
            f"{row['size']:8} {row['nodes']:5} {row['fetched'] / 1e6:18.1f} MB {row['served'] / 1e6:13.1f} MB"
            f" {row['errors']:6} {row['site_wall_s']:7.1f} s"
        )
    if len(rows) > 1 and rows[0]["fetched"]:
        print(f"fetched, {rows[-1]['size']} / {rows[0]['size']}: {rows[-1]['fetched'] / rows[0]['fetched']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
