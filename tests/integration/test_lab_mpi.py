"""MPI with PMIx on the lab, through the real Slurm: the slurm stage installs Debian's OpenMPI 5 and
PMIx on the compute nodes (the mpi role) and sets MpiDefault=pmix (Slurm's mpi_pmix.so is there); an
MPI program compiled on each compute node with mpicc all-reduces across both of them, its ranks
started by `srun --mpi=pmix` and by plain srun (MpiDefault). No mpirun, no SSH between the nodes."""

from __future__ import annotations

import io
import json
import re
import tarfile

import pytest

from tests.integration.conftest import TEST_LAB, clusterforge
from tests.paths import PROJECT

pytestmark = pytest.mark.lab
SOURCE = PROJECT / "tests" / "integration" / "mpi" / "allreduce.c"
# Not under /tmp: systemd mounts a tmpfs there inside the node, which Docker's archive API does not see.
WORKDIR = "/var/tmp/clusterforge-mpi"
COMPUTE = ("node01", "node02")
LINE = re.compile(
    r"^rank=(?P<rank>\d+) size=(?P<size>\d+) host=(?P<host>\S+) sum=(?P<sum>\d+) "
    r"pmix_namespace=(?P<namespace>\S+) hosts=(?P<hosts>\S+) library=(?P<library>.*)$"
)


def _exec(container, command: list[str]) -> str:
    done = container.exec_run(command)
    output = done.output.decode(errors="replace")
    assert done.exit_code == 0, f"{' '.join(command)} on {container.name} -> rc {done.exit_code}\n{output}"
    return output


def _compile_on(container) -> None:
    """The program's source into WORKDIR, built there with the node's own mpicc."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        data = SOURCE.read_bytes()
        info = tarfile.TarInfo("allreduce.c")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    _exec(container, ["mkdir", "-p", WORKDIR])
    assert container.put_archive(WORKDIR, archive.getvalue())
    _exec(container, ["mpicc", "-O2", "-o", f"{WORKDIR}/allreduce", f"{WORKDIR}/allreduce.c"])


SRUN_WAITING = re.compile(r"^srun: job \d+ (queued and waiting for resources|has been allocated resources)$")


def _ranks(output: str) -> list[dict]:
    """One record per rank line; every other line of the job's output is a failure to show, but for
    srun's own notes while it waits for the nodes (the previous job's epilog may still run there)."""
    lines = [line for line in output.splitlines() if line.strip() and not SRUN_WAITING.match(line)]
    records = [LINE.match(line) for line in lines]
    assert all(records), output
    return sorted((record.groupdict() for record in records), key=lambda record: int(record["rank"]))


def _assert_one_job_across_both_nodes(output: str) -> None:
    ranks = _ranks(output)
    # Two ranks per node, four in all: each rank saw the same world of four, on both nodes.
    assert [int(r["rank"]) for r in ranks] == [0, 1, 2, 3], output
    assert {r["size"] for r in ranks} == {"4"}, output
    assert sorted(r["host"] for r in ranks) == ["node01", "node01", "node02", "node02"], output
    assert {r["sum"] for r in ranks} == {"10"}, "MPI_Allreduce of rank+1 over four ranks is 10"
    assert {r["hosts"] for r in ranks} == {",".join(r["host"] for r in ranks)}, output
    # Slurm's PMIx server (mpi_pmix.so in slurmstepd) named the job's namespace: slurm.pmix.<job>.<step>.
    assert all(re.fullmatch(r"slurm\.pmix\.\d+\.\d+", r["namespace"]) for r in ranks), output
    assert {r["library"] for r in ranks} == {"Open MPI v5.0.7"}, output


@pytest.fixture(scope="module")
def head(lab, docker_client):
    """The lab after the slurm stage, the program built on both compute nodes: head01, where jobs are
    submitted from."""
    clusterforge("run", "slurm", "-i", str(lab["inventory"]), env=lab["env"])
    for name in COMPUTE:
        node = docker_client.containers.get(f"clusterforge-{TEST_LAB}-{name}")
        # Debian 13's slurm-wlm-basic-plugins ships the plugin (linked against libpmix2t64).
        _exec(node, ["test", "-e", "/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so"])
        _compile_on(node)
    return docker_client.containers.get(f"clusterforge-{TEST_LAB}-head01")


JOB = ["--nodes=2", "--ntasks-per-node=2", "--time=2", f"{WORKDIR}/allreduce"]


def test_slurm_names_pmix_as_its_default_and_lists_it(head):
    config = _exec(head, ["scontrol", "show", "config"])
    assert re.search(r"^MpiDefault\s+= pmix$", config, flags=re.MULTILINE), config
    assert "pmix" in _exec(head, ["srun", "--mpi=list"]).split()


def test_srun_with_pmix_runs_an_mpi_allreduce_across_the_compute_nodes(head):
    _assert_one_job_across_both_nodes(_exec(head, ["srun", "--mpi=pmix", *JOB]))


def test_plain_srun_uses_pmix_through_mpi_default(head):
    _assert_one_job_across_both_nodes(_exec(head, ["srun", *JOB]))


def test_without_pmix_the_ranks_are_not_one_job(head):
    """The checks above can fail: with Slurm's MPI plugin off, each rank starts alone, a singleton of
    size 1 outside any Slurm PMIx namespace (measured: four lines of rank=0 size=1 sum=1)."""
    output = _exec(head, ["srun", "--mpi=none", *JOB])
    sizes = re.findall(r"\bsize=(\d+)", output)
    assert sizes == ["1"] * 4, output
    assert set(re.findall(r"\bpmix_namespace=(\S+)", output)) == {"-"}, output
    with pytest.raises(AssertionError):
        _assert_one_job_across_both_nodes(output)


def test_a_second_run_of_the_slurm_stage_changes_nothing(lab, head):
    done = clusterforge("run", "slurm", "-i", str(lab["inventory"]), "--json", env=lab["env"])
    totals = json.loads(done.stdout)["totals"]
    assert totals["failed"] == 0 and totals["changed_tasks"] == 0, done.stdout[-3000:]
