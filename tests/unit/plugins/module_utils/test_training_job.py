"""training_job: the acceptance job's plumbing through Slurm (what sinfo, salloc and srun say)."""

from __future__ import annotations

import pytest
from ansible.module_utils.training_job import (
    TrainingJobError,
    allocation_id,
    error_lines,
    job_record,
    killed_rank,
    layout,
    rank_records,
    torchrun_argv,
    unshared_nodes,
    usable_nodes,
)
from ansible.module_utils.training_judge import judge

from tests.paths import FIXTURES


def test_block_distribution_puts_consecutive_ranks_on_each_node():
    assert layout(["a", "b"], 2) == {0: "a", 1: "a", 2: "b", 3: "b"}


def test_only_nodes_a_job_can_start_on_are_usable():
    text = "n1|idle|10.0.0.1\nn2|mixed|10.0.0.2\nn3|idle*|10.0.0.3\nn4|drained|10.0.0.4\nn5|down*|10.0.0.5\n"
    usable, other = usable_nodes(text)
    assert usable == [("n1", "10.0.0.1"), ("n2", "10.0.0.2")]
    assert other == {"n3": "idle*", "n4": "drained", "n5": "down*"}


def test_sinfo_output_of_another_format_is_refused():
    with pytest.raises(TrainingJobError, match="expected node\\|state\\|address"):
        usable_nodes("NODELIST STATE\n")


def test_salloc_that_grants_nothing_says_what_it_printed():
    assert allocation_id("salloc: Pending job allocation 9\nsalloc: Granted job allocation 9\n") == "9"
    with pytest.raises(TrainingJobError, match="Unable to allocate resources"):
        allocation_id("salloc: error: Unable to allocate resources: Requested node configuration is not available")


def test_rank_records_are_read_from_labelled_and_plain_lines_only():
    text = '0: ddp_smoke: {"rank": 0, "rc": 0}\nddp_smoke: {"rank": 1, "rc": 0}\n1: ddp_smoke: {broken\nnoise\n'
    assert sorted(rank_records(text)) == [0, 1]


def test_a_reference_run_that_did_not_finish_on_every_rank_gives_no_reference_loss():
    phases = {"reference": {"records": {0: {"rank": 0, "rc": 0, "final_loss": 0.1}}, "killed": None, "timeouts": []}}
    job = job_record(2, 5, {0: "a", 1: "b"}, phases)
    assert job["reference_loss"] is None
    assert [entry["run"] for entry in job["ranks"]] == ["reference"]


def test_a_node_that_says_nothing_of_the_shared_file_counts_as_not_seeing_it():
    text = "0: shared-check: n1 seen\n1: shared-check: n2 missing\nsrun: error: n3: task 2: Exited\n"
    assert unshared_nodes(text, ["n1", "n2", "n3"]) == ["n2", "n3"]
    assert unshared_nodes("0: shared-check: n1 seen\n", ["n1"]) == []


def test_torchrun_runs_the_job_s_own_interpreter_around_its_script_and_arguments():
    job = ["/opt/envs/pytorch/bin/python", "/opt/x/ddp_smoke.py", "--steps=40"]
    argv = torchrun_argv(job, 4, 8, {"id": "r", "endpoint": "10.0.0.1:29500"}, 2, 60)
    assert argv[:3] == ["/opt/envs/pytorch/bin/python", "-m", "torch.distributed.run"]
    assert "--rdzv_conf=join_timeout=60" in argv and "--nproc_per_node=8" in argv and "--max_restarts=2" in argv
    assert argv[-2:] == ["/opt/x/ddp_smoke.py", "--steps=40"]


def test_the_killed_rank_and_the_judged_ranks_come_from_the_phases_in_the_order_they_ran():
    record = {"rank": 0, "rc": 0, "final_loss": 0.1}
    phases = {
        "reference": {"records": {0: record, 1: dict(record, rank=1)}, "killed": None, "timeouts": []},
        "elastic": {
            "records": {0: dict(record, resumed_from=5), 1: dict(record, rank=1, resumed_from=5)},
            "killed": {"rank": 1, "host": "b", "at_step": 7},
            "timeouts": [],
        },
    }
    job = job_record(2, 5, {0: "a", 1: "b"}, phases)
    assert job["phases"] == ["reference", "elastic"]
    assert job["killed"] == {"rank": 1, "host": "b", "at_step": 7}
    assert [(entry["run"], entry["resumed_from"]) for entry in job["ranks"]] == [("elastic", 5), ("elastic", 5)]
    assert job["reference_loss"] == 0.1


def test_torchrun_that_failed_before_any_rank_says_why_in_the_verdict():
    """Real output: torchrun's TCPStore rendezvous on Debian's torch (no libuv); no rank started."""
    text = (FIXTURES / "torchrun" / "tcp-rendezvous-without-libuv.txt").read_text()
    assert rank_records(text) == {}
    errors = error_lines(text)
    assert errors == [
        "RuntimeError: use_libuv was requested but PyTorch was build without libuv support",
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has"
        " failed. See inner exception for details.",
    ]
    phases = {"reference": {"records": {}, "killed": None, "timeouts": [], "errors": errors}}
    verdict = judge(job_record(2, 5, {0: "node01", 1: "node02"}, phases))
    assert verdict.status == "fail"
    assert verdict.message.startswith("no rank reported: the job did not run (reference: RuntimeError: use_libuv was")


def test_torchrun_s_restart_output_gives_the_killed_rank_and_the_restarted_ranks_records():
    """Real output: rank 1 killed itself, torchrun restarted both ranks, each resumed from step 20;
    the failed first attempt's record of rank 0 is superseded by its record after the restart."""
    text = (FIXTURES / "torchrun" / "elastic-file-rendezvous-rank1-killed.txt").read_text()
    assert killed_rank(text) == {"rank": 1, "host": "node02", "at_step": 23}
    records = rank_records(text)
    assert {rank: (r["host"], r["restart"], r["resumed_from"], r["rc"]) for rank, r in records.items()} == {
        0: ("node01", 1, 20, 0),
        1: ("node02", 1, 20, 0),
    }
