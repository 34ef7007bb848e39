"""The imex_busy module's squeue question, asked of the real Slurm 24.11 of the Debian 13 lab.

One throw-away container of the lab node image installs slurmctld and slurmd (through the apt cache),
starts both for one node named after the container, and runs the exact argv the module builds
(imex_busy.squeue_argv) three times: with a job running on the node, for a node name Slurm does not
know, and after the job is cancelled. The outputs are parsed by the module's own parser and judged by
its busy_reasons. Run it under the docker lock: flock /tmp/cf-docker.lock pytest -m lab -k imex_busy."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

import pytest

from tests.integration.conftest import HANG_GUARD_S
from tests.unit.plugins.modules.conftest import load_module

from ansible.module_utils.imex_node import busy_reasons  # isort: skip
from ansible.module_utils.sacctmgr import parse_squeue  # isort: skip

pytestmark = pytest.mark.lab

IMAGE = "clusterforge/lab-node:trixie"
NODE = "tray01"

SLURM_CONF = f"""\
ClusterName=imex
SlurmctldHost={NODE}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SelectType=select/cons_tres
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
NodeName={NODE} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES
"""


def _script(running: str, unknown: str) -> str:
    # Each wait gives up loudly after 180 s: in CI this container shares two cores with a Molecule
    # scenario, and slurmd's registration or the job's start has taken longer than a quiet machine's
    # few seconds; a wait that ran out silently would be judged as the wrong squeue answer.
    return f"""\
set -e
export DEBIAN_FRONTEND=noninteractive
wait_for() {{
    local what=$1; shift
    for _ in $(seq 180); do eval "$*" >/dev/null 2>&1 && return 0; sleep 1; done
    echo "@@timeout: $what (180 s)"; exit 3
}}
apt-get -o Acquire::http::Proxy="$PROXY" -qq update
apt-get -o Acquire::http::Proxy="$PROXY" -qq install -y --no-install-recommends \\
    slurmctld slurmd slurm-client munge >/dev/null
install -d /etc/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
printf '%s' {shlex.quote(SLURM_CONF)} > /etc/slurm/slurm.conf
[ -s /etc/munge/munge.key ] || mungekey --create
install -d -o munge -g munge /run/munge
runuser -u munge -- /usr/sbin/munged
slurmctld -i
slurmd
wait_for "slurmctld answers" 'scontrol ping'
wait_for "{NODE} is idle" 'sinfo --noheader --states=idle --format=%n | grep -qx {NODE}'
job=$(sbatch --parsable --wrap 'sleep 600')
wait_for "job $job runs" '[ "$(squeue --noheader --jobs "$job" --format=%T)" = RUNNING ]'
echo "@@running rc=0"; {running} || echo "@@rc=$?"
echo "@@unknown"; {unknown} 2>&1 || echo "@@rc=$?"
scancel --full "$job"
wait_for "job $job is gone" '[ -z "$(squeue --noheader --jobs "$job" 2>/dev/null)" ]'
echo "@@idle"; {running} || echo "@@rc=$?"
echo "@@end"
"""


def _sections(output: str) -> dict[str, str]:
    found, name = {}, None
    for line in output.splitlines(keepends=True):
        if line.startswith("@@") and not line.startswith("@@rc="):
            name = line[2:].split()[0]
            found[name] = ""
        elif name:
            found[name] += line
    return found


def test_the_real_squeue_tells_a_running_job_from_an_idle_tray(tmp_path):
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI")
    module = load_module("imex_busy")
    running = shlex.join(module.squeue_argv("squeue", NODE))
    unknown = shlex.join(module.squeue_argv("squeue", "nosuchtray"))
    gateway = json.loads(
        subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True, text=True, check=True).stdout
    )[0]["IPAM"]["Config"][0]["Gateway"]
    result = subprocess.run(
        [
            *(
                "docker",
                "run",
                "--rm",
                "--hostname",
                NODE,
                "-e",
                f"PROXY=http://{gateway}:3142",
                "--entrypoint",
                "bash",
            ),
            *(IMAGE, "-c", _script(running, unknown)),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "@@end" in output, output
    sections = _sections(result.stdout)
    jobs = parse_squeue(sections["running"], "squeue (lab, job running)")
    assert [(job["USER"], job["STATE"]) for job in jobs] == [("root", "RUNNING")], output
    assert busy_reasons(jobs, None) == [f"Slurm job {jobs[0]['JOBID']} (root) is RUNNING"]
    assert parse_squeue(sections["idle"], "squeue (lab, idle)") == [], output
    # A node Slurm does not know: squeue refuses it (exit 1); the module reads that as "no Slurm job here".
    text, rc = sections["unknown"].split("@@rc=")
    assert rc.strip() == "1" and "Invalid node name nosuchtray" in text, output
    assert module.read_output(int(rc), "", text, parse_squeue, "squeue") == ([], None)
