"""training_job: the acceptance job's plumbing through Slurm (what sinfo, salloc and srun say)."""

from __future__ import annotations

import pytest
from ansible.module_utils.training_job import (
    TrainingJobError,
    allocation_id,
    job_record,
    layout,
    rank_records,
    usable_nodes,
)


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
