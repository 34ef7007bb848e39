"""The acceptance training job through Slurm (training_check): the srun command lines of its phases,
what their output says, and the job record training_judge judges.

Pure functions, stdlib only; the module runs the commands. The job, in one allocation
(``salloc --no-shell``) of the healthy compute nodes, one task per rank, block distribution:

    reference  an uninterrupted run (its own checkpoint directory): the reference loss
    killed     the same job with rank <last> killing itself before --kill-at-step (a lost node)
    resumed    the same srun step again, which resumes from the last checkpoint

With the torchrun launcher, one srun task per node runs torchrun, which starts the node's ranks
and restarts them itself; two phases:

    reference  an uninterrupted run, as above
    elastic    the job with rank <last> killing itself; torchrun (--max-restarts) stops the other
               ranks, starts a new rendezvous round and every rank resumes from the last checkpoint

Each rank prints one line ``ddp_smoke: {json}`` (srun --label puts ``<task>: `` before it); the
killed rank says ``ddp_smoke: rank R on HOST kills itself before step S`` first.
"""

from __future__ import annotations

import json
import re

from ansible.module_utils.verdicts import ParseError

SRUN_PHASES = ("reference", "killed", "resumed")
TORCHRUN_PHASES = ("reference", "elastic")
# Every phase a recording may hold, in the order they run.
PHASES = (*SRUN_PHASES, "elastic")
# Slurm node states a job can start on (sinfo %T, lower case; a trailing flag such as * for "not
# responding", ~ for powered off, # powering up, ! pending power down, % powering down, $ reserved
# for maintenance, @ pending reboot, ^ rebooting, - planned marks a node that cannot).
USABLE_STATES = ("idle", "mixed", "allocated", "completing")
_RECORD = re.compile(r"^\s*(?:(\d+):\s*)?ddp_smoke: (\{.*\})\s*$")
_KILLED = re.compile(r"ddp_smoke: rank (\d+) on (\S+) kills itself before step (\d+)")
_GRANTED = re.compile(r"Granted job allocation (\d+)")


class TrainingJobError(ValueError):
    """Output of a Slurm command that does not say what it should (which command, what it said)."""


def layout(nodes: list, ranks_per_node: int) -> dict:
    """rank -> host, as srun --distribution=block places the ranks on the allocation's nodes."""
    return {
        node_index * ranks_per_node + local: node
        for node_index, node in enumerate(nodes)
        for local in range(ranks_per_node)
    }


def usable_nodes(sinfo_text: str) -> tuple:
    """([(node, address)] of the nodes a job can start on, in sinfo's order, {node: state} of the
    others), from ``sinfo --noheader --Node --format=%N|%T|%o``."""
    usable, other = [], {}
    for line in sinfo_text.splitlines():
        if not line.strip():
            continue
        parts = line.strip().split("|")
        if len(parts) != 3:
            raise TrainingJobError(f"sinfo --format=%N|%T|%o: expected node|state|address, got {line.strip()[:120]!r}")
        node, state, address = parts
        if state in USABLE_STATES:
            if node not in [n for n, _ in usable]:
                usable.append((node, address))
        else:
            other[node] = state
    return usable, other


def allocation_id(text: str) -> str:
    """The job id salloc printed ("salloc: Granted job allocation 42")."""
    found = _GRANTED.search(text)
    if not found:
        raise TrainingJobError(f"salloc did not grant an allocation: {text.strip()[-300:]!r}")
    return found.group(1)


def srun_argv(
    job_id: str, nodes: int, ranks_per_node: int, environment: dict, command: list, cpus_per_task: int | None = None
) -> list:
    """srun of one step in the allocation: one task per rank, block distribution, the step ended
    as soon as one task fails (so a lost rank does not leave the others waiting), output labelled
    with the task (the rank). cpus_per_task: for a task that starts several ranks (torchrun)."""
    exports = ",".join(["ALL", *(f"{key}={value}" for key, value in sorted(environment.items()))])
    return [
        "srun",
        f"--jobid={job_id}",
        f"--nodes={nodes}",
        f"--ntasks={nodes * ranks_per_node}",
        f"--ntasks-per-node={ranks_per_node}",
        *([f"--cpus-per-task={cpus_per_task}"] if cpus_per_task else []),
        "--distribution=block",
        "--kill-on-bad-exit=1",
        "--label",
        f"--export={exports}",
        *command,
    ]


# Run on every node with the marker's path: says whether that node sees the file (its Slurm name).
SHARED_PROBE = [
    "sh",
    "-c",
    'if test -e "$1"; then s=seen; else s=missing; fi; echo "shared-check: $SLURMD_NODENAME $s"',
    "sh",
]
_SHARED = re.compile(r"shared-check: (\S+) (seen|missing)\s*$")


# Run by the job's interpreter on one node: whether its torch makes a TCPStore with libuv, the one
# torchrun's c10d rendezvous asks for (pip's wheels can; Debian's python3-torch, built without
# libuv, cannot: "use_libuv was requested but PyTorch was build without libuv support").
LIBUV_PROBE = """import torch.distributed as d
try:
    d.TCPStore("127.0.0.1", 0, is_master=True, use_libuv=True)
except RuntimeError as exc:
    print("libuv-check: no", exc)
else:
    print("libuv-check: yes")
"""
_LIBUV = re.compile(r"libuv-check: (yes|no)")


def has_libuv(text: str) -> bool | None:
    """What LIBUV_PROBE printed: True, False, or None when it did not say (no torch, an error)."""
    found = _LIBUV.search(text)
    return None if found is None else found.group(1) == "yes"


def unshared_nodes(text: str, nodes: list) -> list:
    """The nodes that do not see the marker, from SHARED_PROBE's output on every node (a node that
    said nothing counts as not seeing it)."""
    seen = set()
    for line in text.splitlines():
        found = _SHARED.search(line)
        if found and found.group(2) == "seen":
            seen.add(found.group(1))
    return [node for node in nodes if node not in seen]


def job_argv(
    python: str,
    script: str,
    backend: str,
    steps: int,
    checkpoint_every: int,
    checkpoint_dir: str,
    seed: int,
    timeout: int,
    kill: dict | None = None,
    stall_rank: int = -1,
) -> list:
    """The acceptance job's command line (ddp_smoke.py) for one phase."""
    argv = [
        python,
        script,
        f"--backend={backend}",
        f"--steps={steps}",
        f"--checkpoint-every={checkpoint_every}",
        f"--checkpoint-dir={checkpoint_dir}",
        f"--seed={seed}",
        f"--timeout={timeout}",
    ]
    if kill:
        argv += [f"--kill-rank={kill['rank']}", f"--kill-at-step={kill['at_step']}"]
    if stall_rank >= 0:
        argv.append(f"--stall-rank={stall_rank}")
    return argv


def torchrun_argv(
    job: list,
    nodes: int,
    ranks_per_node: int,
    rendezvous: dict,
    max_restarts: int,
    join_timeout: int,
) -> list:
    """torchrun (as ``python -m torch.distributed.run`` of the job's interpreter, so a venv's torch
    runs its own) around the job's command line `job` (job_argv's): the c10d rendezvous at
    rendezvous["endpoint"] under rendezvous["id"], in a FileStore at that path when
    rendezvous["file"] (a torch without libuv), else a TCPStore at host:port."""
    conf = [f"join_timeout={join_timeout}"]
    if rendezvous.get("file"):
        conf.append("store_type=file")
    return [
        job[0],
        "-m",
        "torch.distributed.run",
        f"--nnodes={nodes}",
        f"--nproc_per_node={ranks_per_node}",
        "--rdzv_backend=c10d",
        f"--rdzv_endpoint={rendezvous['endpoint']}",
        f"--rdzv_id={rendezvous['id']}",
        f"--rdzv_conf={','.join(conf)}",
        f"--max_restarts={max_restarts}",
        *job[1:],
    ]


def rank_records(text: str) -> dict:
    """rank -> the record its task printed (the last one, should a rank print twice)."""
    records = {}
    for line in text.splitlines():
        found = _RECORD.match(line)
        if not found:
            continue
        try:
            record = json.loads(found.group(2))
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("rank"), int):
            records[record["rank"]] = record
    return records


def parse_step_output(text: str, source: str = "srun output") -> dict:
    """One step's output (srun's, or torchrun's under srun) as {records, killed, errors}; a
    ParseError when it holds none of them (not the acceptance job's output)."""
    step = {"records": rank_records(text), "killed": killed_rank(text), "errors": error_lines(text)}
    if not (step["records"] or step["killed"] or step["errors"]):
        raise ParseError(
            "no ddp_smoke record, killed rank or launcher error: not an output of the acceptance job",
            source=source,
            text=text,
        )
    return step


def killed_rank(text: str) -> dict | None:
    """{rank, host, at_step} of the rank that said it killed itself, or None."""
    found = _KILLED.search(text)
    if not found:
        return None
    return {"rank": int(found.group(1)), "host": found.group(2), "at_step": int(found.group(3))}


# The last line of a Python traceback (srun --label's "<task>: " before it): "SomeError: why".
_EXCEPTION = re.compile(r"^\s*(?:\d+:\s*)?((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): .+?)\s*$")


def error_lines(text: str, limit: int = 3) -> list:
    """The distinct exceptions a step's output names (a launcher that failed before any rank
    reported says why only there), in the order they came, at most `limit`."""
    found = []
    for line in text.splitlines():
        match = _EXCEPTION.match(line)
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found[:limit]


def timeouts(phase: str, records: dict, hosts: dict, limit_s: int) -> list:
    """The ranks of a phase stopped at its time limit without a record: one entry each."""
    return [
        {"phase": phase, "rank": rank, "host": host, "limit_s": limit_s}
        for rank, host in sorted(hosts.items())
        if rank not in records
    ]


def job_record(world_size: int, checkpoint_every: int, hosts: dict, phases: dict, expected_busbw_gbps=None) -> dict:
    """The record training_judge judges, from each phase's outcome
    ({"records": rank -> record, "killed": ..., "timeouts": [...]}; a phase not run is absent).

    `phases` in the order they ran (SRUN_PHASES or TORCHRUN_PHASES). The ranks judged are those of
    the last phase that ran: the resumed (or elastic) run, or the phase that stopped the job (its
    failures name host and rank). The killed rank is the one a phase's output says killed itself.
    The reference loss is the uninterrupted run's, when every one of its ranks finished with the
    same loss."""
    reference = phases.get("reference") or {}
    losses = {record.get("final_loss") for record in (reference.get("records") or {}).values() if record.get("rc") == 0}
    finished = len([r for r in (reference.get("records") or {}).values() if r.get("rc") == 0]) == world_size
    ran = [name for name in phases if phases[name] is not None]
    last_name = ran[-1] if ran else None
    ranks = [dict(record, run=last_name) for record in (phases.get(last_name) or {}).get("records", {}).values()]
    job = {
        "world_size": world_size,
        "checkpoint_every": checkpoint_every,
        "hosts": {str(rank): host for rank, host in hosts.items()},
        "ranks": sorted(ranks, key=lambda record: record["rank"]),
        "killed": next((phases[name]["killed"] for name in ran if phases[name].get("killed")), None),
        "timeouts": [entry for name in ran for entry in phases[name].get("timeouts", [])],
        "reference_loss": losses.pop() if finished and len(losses) == 1 else None,
        "phases": ran,
    }
    errors = {name: phases[name]["errors"] for name in ran if phases[name].get("errors")}
    if errors:
        job["errors"] = errors
    busbw = [
        record["allreduce_busbw_gbps"] for record in job["ranks"] if record.get("allreduce_busbw_gbps") is not None
    ]
    if busbw:
        job["allreduce_busbw_gbps"] = min(busbw)
        job["expected_busbw_gbps"] = expected_busbw_gbps
    return job
