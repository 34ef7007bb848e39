"""The acceptance training job through Slurm (training_check): the srun command lines of its phases,
what their output says, and the job record training_judge judges.

Pure functions, stdlib only; the module runs the commands. The job, in one allocation
(``salloc --no-shell``) of the healthy compute nodes, one task per rank, block distribution:

    reference  an uninterrupted run (its own checkpoint directory): the reference loss
    killed     the same job with rank <last> killing itself before --kill-at-step (a lost node)
    resumed    the same srun step again, which resumes from the last checkpoint

Each rank prints one line ``ddp_smoke: {json}`` (srun --label puts ``<task>: `` before it); the
killed rank says ``ddp_smoke: rank R on HOST kills itself before step S`` first.
"""

from __future__ import annotations

import json
import re

PHASES = ("reference", "killed", "resumed")
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


def srun_argv(job_id: str, nodes: int, ranks_per_node: int, environment: dict, command: list) -> list:
    """srun of one step in the allocation: one task per rank, block distribution, the step ended
    as soon as one task fails (so a lost rank does not leave the others waiting), output labelled
    with the task (the rank)."""
    exports = ",".join(["ALL", *(f"{key}={value}" for key, value in sorted(environment.items()))])
    return [
        "srun",
        f"--jobid={job_id}",
        f"--nodes={nodes}",
        f"--ntasks={nodes * ranks_per_node}",
        f"--ntasks-per-node={ranks_per_node}",
        "--distribution=block",
        "--kill-on-bad-exit=1",
        "--label",
        f"--export={exports}",
        *command,
    ]


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


def killed_rank(text: str) -> dict | None:
    """{rank, host, at_step} of the rank that said it killed itself, or None."""
    found = _KILLED.search(text)
    if not found:
        return None
    return {"rank": int(found.group(1)), "host": found.group(2), "at_step": int(found.group(3))}


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

    The ranks judged are those of the last phase that ran: the resumed run, or the phase that
    stopped the job (its failures name host and rank). The reference loss is the uninterrupted
    run's, when every one of its ranks finished with the same loss."""
    reference = phases.get("reference") or {}
    losses = {record.get("final_loss") for record in (reference.get("records") or {}).values() if record.get("rc") == 0}
    finished = len([r for r in (reference.get("records") or {}).values() if r.get("rc") == 0]) == world_size
    last_name = next((name for name in reversed(PHASES) if name in phases), None)
    ranks = [dict(record, run=last_name) for record in (phases.get(last_name) or {}).get("records", {}).values()]
    job = {
        "world_size": world_size,
        "checkpoint_every": checkpoint_every,
        "hosts": {str(rank): host for rank, host in hosts.items()},
        "ranks": sorted(ranks, key=lambda record: record["rank"]),
        "killed": (phases.get("killed") or {}).get("killed"),
        "timeouts": [entry for name in PHASES for entry in (phases.get(name) or {}).get("timeouts", [])],
        "reference_loss": losses.pop() if finished and len(losses) == 1 else None,
        "phases": [name for name in PHASES if name in phases],
    }
    busbw = [
        record["allreduce_busbw_gbps"] for record in job["ranks"] if record.get("allreduce_busbw_gbps") is not None
    ]
    if busbw:
        job["allreduce_busbw_gbps"] = min(busbw)
        job["expected_busbw_gbps"] = expected_busbw_gbps
    return job
