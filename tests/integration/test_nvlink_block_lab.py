"""The real Slurm 24.11 of the Debian 13 lab reads the rendered topology/block config.

One throw-away container of the lab node image installs slurmctld (through the apt cache),
starts it with TopologyPlugin=topology/block and the topology.conf that `topology render`
writes for the GB200 NVL72 example, and `scontrol show topology` must list one block per
NVLink domain. Run it under the docker lock: flock /tmp/cf-docker.lock pytest -m lab -k nvlink."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterforge.topology import load
from clusterforge.topology.render import nvlink
from tests.integration.conftest import HANG_GUARD_S
from tests.paths import NVL72_EXAMPLE as EXAMPLE

pytestmark = pytest.mark.lab

IMAGE = "clusterforge/lab-node:trixie"

SLURM_CONF = """\
ClusterName=nvl72
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SelectType=select/cons_tres
TopologyPlugin=topology/block
NodeName=gb[001-144] NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES
"""

SCRIPT = """\
set -e
export DEBIAN_FRONTEND=noninteractive
apt-get -o Acquire::http::Proxy="$PROXY" -qq update
apt-get -o Acquire::http::Proxy="$PROXY" -qq install -y --no-install-recommends slurmctld slurm-client munge >/dev/null
install -d /etc/slurm /var/lib/slurm/slurmctld
cp /work/slurm.conf /work/topology.conf /etc/slurm/
[ -s /etc/munge/munge.key ] || mungekey --create
install -d -o munge -g munge /run/munge
runuser -u munge -- /usr/sbin/munged
slurmctld -i
for _ in $(seq 180); do scontrol ping >/dev/null 2>&1 && break; sleep 1; done
scontrol ping >/dev/null || { echo "slurmctld did not answer scontrol ping in 180 s"; exit 3; }
slurmctld -V
scontrol show topology
"""


def _bridge_gateway() -> str:
    attrs = json.loads(
        subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True, text=True, check=True).stdout
    )
    return attrs[0]["IPAM"]["Config"][0]["Gateway"]


def test_real_slurm_reads_one_block_per_nvlink_domain(tmp_path: Path):
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI")
    plan = load(EXAMPLE)
    (tmp_path / "topology.conf").write_text(nvlink.block_conf(plan))
    (tmp_path / "slurm.conf").write_text(SLURM_CONF)
    proxy = f"http://{_bridge_gateway()}:3142"
    result = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "-e",
            f"PROXY={proxy}",
            "-v",
            f"{tmp_path}:/work:ro",
            "--entrypoint",
            "bash",
            IMAGE,
            "-c",
            SCRIPT,
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # Debian's build names itself slurm-wlm (sinfo --version: "slurm-wlm 24.11.5").
    assert re.search(r"^slurm(-wlm)? 24\.11\.", output, re.M), output
    blocks = [line for line in output.splitlines() if line.startswith("BlockName=")]
    assert len(blocks) == 8, output
    assert "BlockName=nvl01" in blocks[0] and "Nodes=gb[001-018]" in blocks[0], output
    assert "BlockName=nvl08" in blocks[-1] and "Nodes=gb[127-144]" in blocks[-1], output
