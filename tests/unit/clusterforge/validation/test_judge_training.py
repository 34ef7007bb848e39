"""`clusterforge check judge training`: a saved acceptance job record judged by training_judge, as
training_check judges it on the launch host."""

from __future__ import annotations

import json

import pytest

from clusterforge import errors
from tests.unit.clusterforge.validation.test_report import cli

RECORD = {
    "world_size": 2,
    "checkpoint_every": 5,
    "hosts": {"0": "node01", "1": "node02"},
    "ranks": [
        {"rank": 0, "host": "node01", "final_loss": 0.25, "steps": 20, "seconds": 2.0, "resumed_from": 20, "rc": 0},
        {"rank": 1, "host": "node02", "final_loss": 0.25, "steps": 20, "seconds": 2.5, "resumed_from": 20, "rc": 0},
    ],
    "killed": {"rank": 1, "host": "node02", "at_step": 23},
    "reference_loss": 0.25,
}


def test_a_saved_record_is_judged_as_the_module_judges_it(tmp_path, capsys):
    path = tmp_path / "job.json"
    path.write_text(json.dumps(RECORD))
    assert cli("check", "judge", "training", str(path), "--json") == errors.EXIT_OK
    check = json.loads(capsys.readouterr().out)["checks"][0]
    assert (check["check"], check["status"], check["measured"]["steps_per_second"]) == ("training.smoke", "pass", 8.0)


def test_an_expectation_over_the_record_fails_it_naming_host_and_rank(tmp_path, capsys):
    path = tmp_path / "job.json"
    path.write_text(json.dumps(RECORD))
    assert cli("check", "judge", "training", str(path), "--expect", "reference_loss=0.5", "--json") == (
        errors.EXIT_HOSTS_FAILED
    )
    message = json.loads(capsys.readouterr().out)["checks"][0]["message"]
    assert "rank 1 on node02: final loss 0.25 differs from the uninterrupted run's 0.5" in message


@pytest.mark.parametrize(("text", "why"), [("[1, 2]", "expected an object with world_size"), ("{", "not JSON")])
def test_text_that_is_not_a_job_record_is_refused(tmp_path, text, why):
    path = tmp_path / "job.json"
    path.write_text(text)
    with pytest.raises(errors.UsageError, match=why):
        cli("check", "judge", "training", str(path))
