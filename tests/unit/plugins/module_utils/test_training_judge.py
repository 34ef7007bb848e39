"""training_judge: the acceptance job's verdict (training.smoke), on job records the harness writes."""

from __future__ import annotations

import copy

import pytest
from ansible.module_utils.training_judge import CHECK, judge, steps_per_second

REFERENCE = 0.6931471805599453


def _job(**changes):
    job = {
        "world_size": 4,
        "checkpoint_every": 5,
        "hosts": {"0": "node01", "1": "node01", "2": "node02", "3": "node02"},
        "ranks": [
            {
                "rank": r,
                "host": h,
                "final_loss": REFERENCE,
                "steps": 40,
                "seconds": 4.0 + r,
                "resumed_from": 20,
                "rc": 0,
            }
            for r, h in enumerate(["node01", "node01", "node02", "node02"])
        ],
        "killed": {"rank": 3, "host": "node02", "at_step": 23},
        "reference_loss": REFERENCE,
    }
    job.update(changes)
    return job


def test_a_resumed_job_with_the_reference_loss_passes_naming_the_killed_rank():
    verdict = judge(_job())
    assert (verdict.check, verdict.status) == (CHECK, "pass")
    assert "rank 3 on node02 was killed at step 23" in verdict.message
    assert "all-reduce bandwidth not judged (gloo on CPU)" in verdict.message
    assert verdict.measured["steps_per_second"] == 5.714  # the slowest rank: 40 steps in 7 s


def test_a_loss_that_differs_after_the_restart_fails_naming_host_and_rank():
    job = _job()
    job["ranks"][2]["final_loss"] = REFERENCE + 1e-3
    verdict = judge(job)
    assert verdict.status == "fail"
    assert verdict.message == (
        f"rank 2 on node02: final loss {REFERENCE + 1e-3!r} differs from the uninterrupted run's {REFERENCE!r}"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda job: job["ranks"].pop(3), "rank 3 on node02: never reported (did it join?)"),
        (lambda job: job["ranks"][1].update(rc=137), "rank 1 on node01: exited 137"),
        (
            lambda job: job["ranks"][0].update(resumed_from=None),
            "rank 0 on node01: did not resume from a checkpoint after rank 3 was killed",
        ),
        (
            lambda job: job["ranks"][0].update(resumed_from=23),
            "rank 0 on node01: resumed from step 23, not a checkpoint (every 5 steps)",
        ),
        (lambda job: job.update(killed=None), "no rank was killed: the resume from a checkpoint was not exercised"),
        (lambda job: job.update(reference_loss=None), "no reference loss from an uninterrupted run (got None)"),
        (
            lambda job: job.update(timeouts=[{"phase": "rendezvous", "rank": 2, "host": "node02", "limit_s": 60}]),
            "rank 2 on node02: phase rendezvous ran past its limit of 60 s",
        ),
        (lambda job: job["ranks"][0].update(final_loss=float("nan")), "rank 0 on node01: no final loss (got nan)"),
        (
            lambda job: job.update(allreduce_busbw_gbps=100.0, expected_busbw_gbps=400.0),
            "all-reduce bus bandwidth 100.0 GB/s is below 80% of the nccl-tests floor 400.0 GB/s",
        ),
    ],
)
def test_each_failure_is_a_fail_naming_what_went_wrong(change, message):
    job = copy.deepcopy(_job())
    change(job)
    verdict = judge(job)
    assert verdict.status == "fail"
    assert message in verdict.message.split("; ")


@pytest.mark.parametrize("job", [None, {}, {"ranks": []}, "text"])
def test_a_job_that_did_not_run_fails(job):
    verdict = judge(job)
    assert verdict.status == "fail"
    assert verdict.message == "no rank reported: the job did not run"


def test_bandwidth_at_the_floor_passes_and_is_reported():
    verdict = judge(_job(allreduce_busbw_gbps=360.0, expected_busbw_gbps=400.0))
    assert verdict.status == "pass"
    assert "all-reduce 360.0 GB/s" in verdict.message


def test_steps_per_second_ignores_ranks_without_timings():
    assert steps_per_second({"ranks": [{"steps": 10, "seconds": 0}, {"steps": 10, "seconds": 4}]}) == 2.5
    assert steps_per_second({"ranks": [{}]}) is None
