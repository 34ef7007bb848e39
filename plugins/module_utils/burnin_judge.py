"""Judge the training step of a burn-in: the acceptance job (ddp_smoke.py) run again and again on one
node for a set time.

Each run trains the same model on the same synthetic data from the same seed, so on healthy
hardware every run ends with the same final loss (ddp_smoke sets torch's deterministic
algorithms). The step passes when every run exited 0, every rank wrote its record, all runs
agree on the final loss, and the runs together lasted the time asked for: a run that crashed, a
rank that never reported, or a loss that drifted between runs (silent data corruption on a GPU or
in memory) fails it, naming the run. Stdlib only.
"""

from __future__ import annotations

from ansible.module_utils.verdicts import FAIL, PASS, CheckResult, result

CHECK = "training.burnin"


def judge_runs(runs: list, seconds: float, ranks: int, elapsed: float | None = None) -> CheckResult:
    """runs: [{"run": n, "rc": int, "seconds": float, "records": [rank record, ...], "error": str?}];
    elapsed: the wall time of them all (default the sum of their seconds)."""
    if not runs:
        return result(CHECK, FAIL, None, f"runs for {seconds} s", "the training job never ran")
    problems = []
    losses = {}
    for run in runs:
        name = f"run {run.get('run')}"
        if run.get("error"):
            problems.append(f"{name}: {run['error']}")
            continue
        if run.get("rc") != 0:
            problems.append(f"{name} exited {run.get('rc')}")
        reported = sorted(int(r.get("rank", -1)) for r in run.get("records") or [])
        if reported != list(range(ranks)):
            problems.append(f"{name}: ranks reported {reported}, expected 0..{ranks - 1}")
        for record in run.get("records") or []:
            if record.get("final_loss") is not None:
                losses.setdefault(repr(record["final_loss"]), []).append(f"{name} rank {record.get('rank')}")
    elapsed = round(sum(float(run.get("seconds") or 0) for run in runs) if elapsed is None else elapsed, 1)
    measured = {"runs": len(runs), "seconds": elapsed, "final_losses": sorted(losses)}
    expected = {"seconds": seconds, "final_losses": "one value"}
    if len(losses) > 1:
        spread = "; ".join(f"{loss} in {', '.join(where[:3])}" for loss, where in sorted(losses.items()))
        problems.append(f"the same job gave different final losses: {spread}")
    if not problems and not losses:
        problems.append("no run reported a final loss")
    if not problems and elapsed < seconds:
        problems.append(f"ran {elapsed} s of the {seconds} s asked for")
    if problems:
        return result(CHECK, FAIL, measured, expected, "; ".join(problems))
    return result(
        CHECK,
        PASS,
        measured,
        expected,
        f"{len(runs)} runs of {ranks} ranks in {elapsed} s, each with the final loss {next(iter(losses), None)}",
    )
