"""Judge the acceptance training job (training.smoke): every rank finished, a killed rank was
resumed from a checkpoint, and the final loss equals an uninterrupted run's with the same seed.

Pure functions, stdlib only; the validate stage (on the controller) and `clusterforge check judge`
call the same judge. The job's record, as the acceptance harness writes it:

    world_size        ranks the job was started with
    checkpoint_every  K: checkpoints are taken after every K steps
    ranks             one entry per rank that reported: rank, host, final_loss (the all-reduced
                      mean loss of the last step, the same on every rank), steps, seconds (of
                      training), resumed_from (the checkpoint step it resumed from, or null), rc;
                      optional run (the harness's step: reference, killed, resumed), phase and
                      error of a rank that failed
    hosts             optional rank -> host of the allocation, to name a rank that never reported
    killed            optional {rank, host, at_step}: the rank the harness killed mid-run
    timeouts          optional [{phase, rank, host, limit_s}]: phases that ran past their limit
    reference_loss    the final loss of the uninterrupted run
    errors            optional phase -> the exceptions its output named, for a phase where no
                      rank reported (a launcher that failed before starting any)
    allreduce_busbw_gbps, expected_busbw_gbps
                      optional: the all-reduce bus bandwidth torch measured (GPU nodes) and the
                      nccl-tests floor it is held to
"""

from __future__ import annotations

import json
import math

from ansible.module_utils.expectation_keys import Key
from ansible.module_utils.verdicts import FAIL, PASS, CheckResult, ParseError, result

CHECK = "training.smoke"
# gloo on CPU and NCCL with a fixed algorithm repeat the same sums in the same order: a resumed run
# matches the uninterrupted one to the last bits in practice; the tolerance only absorbs printing.
LOSS_RELATIVE_TOLERANCE = 1e-6
BUSBW_FLOOR = 0.80

# What `clusterforge check judge training` may set over a saved record (its own fields otherwise).
TRAINING_KEYS = {
    "expected_busbw_gbps": Key(
        ("float",), "nccl-tests all-reduce floor (GB/s) the job's bus bandwidth is held to", above=0
    ),
    "reference_loss": Key(("float",), "final loss of an uninterrupted run with the same seed, instead of the record's"),
}


def _who(entry: dict) -> str:
    return f"rank {entry.get('rank')} on {entry.get('host') or 'an unknown host'}"


def _number(value) -> float | None:
    try:
        found = float(value)
    except (TypeError, ValueError):
        return None
    return found if math.isfinite(found) else None


def _problems(job: dict) -> list[str]:
    problems = []
    for late in job.get("timeouts") or []:
        problems.append(f"{_who(late)}: phase {late.get('phase')} ran past its limit of {late.get('limit_s')} s")
    ranks = {entry.get("rank"): entry for entry in job.get("ranks") or []}
    hosts = {int(rank): host for rank, host in (job.get("hosts") or {}).items()}
    for rank in range(int(job.get("world_size") or 0)):
        if rank not in ranks:
            problems.append(f"{_who({'rank': rank, 'host': hosts.get(rank)})}: never reported (did it join?)")
    reference = _number(job.get("reference_loss"))
    if reference is None:
        problems.append(f"no reference loss from an uninterrupted run (got {job.get('reference_loss')!r})")
    every = int(job.get("checkpoint_every") or 0)
    for rank in sorted(ranks):
        entry = ranks[rank]
        if entry.get("rc") not in (0, None):
            # Where the harness says it: which run (reference, killed, resumed), which phase, why.
            where = f" in the {entry['run']} run" if entry.get("run") else ""
            why = f" ({entry.get('phase') or 'error'}: {entry['error']})" if entry.get("error") else ""
            problems.append(f"{_who(entry)}: exited {entry.get('rc')}{where}{why}")
            continue
        loss = _number(entry.get("final_loss"))
        if loss is None:
            problems.append(f"{_who(entry)}: no final loss (got {entry.get('final_loss')!r})")
        elif reference is not None and not math.isclose(loss, reference, rel_tol=LOSS_RELATIVE_TOLERANCE):
            problems.append(f"{_who(entry)}: final loss {loss!r} differs from the uninterrupted run's {reference!r}")
        resumed = entry.get("resumed_from")
        if job.get("killed") and resumed is None:
            problems.append(
                f"{_who(entry)}: did not resume from a checkpoint after rank {job['killed'].get('rank')} was killed"
            )
        elif resumed is not None and every and int(resumed) % every:
            problems.append(f"{_who(entry)}: resumed from step {resumed}, not a checkpoint (every {every} steps)")
    if not job.get("killed"):
        problems.append("no rank was killed: the resume from a checkpoint was not exercised")
    busbw, floor = _number(job.get("allreduce_busbw_gbps")), _number(job.get("expected_busbw_gbps"))
    if busbw is not None and floor and busbw < BUSBW_FLOOR * floor:
        problems.append(
            f"all-reduce bus bandwidth {busbw} GB/s is below {BUSBW_FLOOR:.0%} of the nccl-tests floor {floor} GB/s"
        )
    return problems


def steps_per_second(job: dict) -> float | None:
    """The slowest rank's training rate (steps over seconds), None when no rank says."""
    rates = [
        _number(entry.get("steps")) / _number(entry.get("seconds"))
        for entry in job.get("ranks") or []
        if _number(entry.get("steps")) and _number(entry.get("seconds"))
    ]
    return round(min(rates), 3) if rates else None


def judge(job: dict) -> CheckResult:
    """The training.smoke verdict of one acceptance job record."""
    if not isinstance(job, dict) or not job.get("ranks"):
        said = (job.get("errors") if isinstance(job, dict) else None) or {}
        errors = "; ".join(f"{phase}: {' | '.join(lines)}" for phase, lines in said.items())
        return result(
            CHECK,
            FAIL,
            None,
            "a record with one entry per rank",
            "no rank reported: the job did not run" + (f" ({errors})" if errors else ""),
        )
    problems = _problems(job)
    measured = {
        "final_loss": sorted({entry.get("final_loss") for entry in job["ranks"]}, key=str),
        "steps_per_second": steps_per_second(job),
        "ranks": len(job["ranks"]),
        "allreduce_busbw_gbps": job.get("allreduce_busbw_gbps"),
    }
    expected = {"final_loss": job.get("reference_loss"), "ranks": job.get("world_size")}
    if problems:
        return result(CHECK, FAIL, measured, expected, "; ".join(problems))
    killed = job["killed"]
    bandwidth = (
        f"; all-reduce {job['allreduce_busbw_gbps']} GB/s"
        if job.get("allreduce_busbw_gbps") is not None
        else "; all-reduce bandwidth not judged (gloo on CPU)"
    )
    return result(
        CHECK,
        PASS,
        measured,
        expected,
        f"{len(job['ranks'])} ranks finished with the uninterrupted run's loss {job['reference_loss']!r} after"
        f" {_who(killed)} was killed at step {killed.get('at_step')} and the job resumed from a checkpoint;"
        f" {measured['steps_per_second']} steps/s{bandwidth}",
    )


def parse_job_record(text: str, source: str = "job record") -> dict:
    """A saved job record (training_check's `job`, in a run's <host>.json under the record of
    module training_check) from its JSON text."""
    try:
        job = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"not JSON: {exc}", source=source) from None
    if not isinstance(job, dict) or not isinstance(job.get("ranks"), list) or "world_size" not in job:
        raise ParseError("expected an object with world_size and a list of ranks (training_check's job)", source=source)
    return job


def judge_job(job: dict, expected: dict) -> list:
    """[training.smoke] of a saved record, with the expectations given over its own fields."""
    return [judge({**job, **expected})]
