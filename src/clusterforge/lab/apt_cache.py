"""Whether the lab's nodes will find a package cache on this machine, asked the way they ask it.

A node's apt runs apt-proxy-detect (spec.APT_MOUNTS) against its default gateway, which is this
machine on the lab network; `lab up` runs the same script against the same address and says which
way the nodes' packages will come, so a slow first run without a cache is no surprise."""

from __future__ import annotations

import os
import subprocess

from clusterforge.lab import spec

PORT = 3142  # apt-cacher-ng's default, the port the script asks


def proxy_for(host: str, port: int = PORT) -> str | None:
    """The proxy URL a node whose gateway is `host` would use, or None for Debian directly."""
    environment = os.environ | {"CLUSTERFORGE_LAB_APT_CACHE_HOST": host, "CLUSTERFORGE_LAB_APT_CACHE_PORT": str(port)}
    result = subprocess.run(
        ["bash", str(spec.APT_DIR / spec.APT_DETECT), "http://deb.debian.org/debian"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    answer = result.stdout.strip()
    return None if answer in ("DIRECT", "") else answer


def gateway(network_attrs: dict) -> str | None:
    """This machine's address on a Docker network (its IPAM gateway), if Docker reports one."""
    for config in (network_attrs.get("IPAM") or {}).get("Config") or []:
        if config.get("Gateway"):
            return config["Gateway"].split("/")[0]
    return None


def describe(network_attrs: dict, port: int = PORT) -> str:
    address = gateway(network_attrs)
    if address is None:
        return (
            "apt: Docker reports no gateway for the lab network; "
            "nodes use a package cache at theirs if one answers, else fetch directly"
        )
    proxy = proxy_for(address, port)
    if proxy:
        return f"apt: lab nodes fetch Debian packages through the package cache on this machine ({proxy})"
    return (
        f"apt: no package cache answers on this machine ({address}:{port}); lab nodes fetch from Debian directly "
        "(.ci/lab-host-setup.sh starts apt-cacher-ng)"
    )


def transfers(log_text: str) -> dict[str, int]:
    """Bytes an apt-cacher-ng fetched from upstream and served to its clients, from its transfer
    log (/var/log/apt-cacher-ng/apt-cacher.log, lines `time|kind|bytes|client|path`): kind I is
    data fetched in from upstream, O data sent out to a client, E an error (no bytes counted)."""
    totals = {"fetched": 0, "served": 0, "errors": 0}
    for number, line in enumerate(log_text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("|", 4)
        if len(fields) != 5 or not fields[2].isdigit():
            raise ValueError(f"apt-cacher.log line {number}: expected time|kind|bytes|client|path, got {line!r}")
        kind, size = fields[1], int(fields[2])
        if kind == "I":
            totals["fetched"] += size
        elif kind == "O":
            totals["served"] += size
        elif kind == "E":
            totals["errors"] += 1
    return totals
