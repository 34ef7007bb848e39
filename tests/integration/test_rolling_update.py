"""playbooks/rolling_update.yml on the lab: batch by batch, and a failed batch stops the roll."""

from __future__ import annotations

import json

import pytest

from clusterforge import errors
from tests.integration.conftest import clusterforge

pytestmark = pytest.mark.lab


def roll(lab, *extra: str):
    return clusterforge(
        "run",
        "rolling-update",
        "-i",
        str(lab["inventory"]),
        "--stage",
        "base",
        "--serial",
        "1",
        "-e",
        "rolling_update_hosts=all",
        "--json",
        *extra,
        env=lab["env"],
        check=False,
    )


def test_the_roll_goes_batch_by_batch(lab):
    done = roll(lab)
    assert done.returncode == errors.EXIT_OK, done.stdout[-3000:] + done.stderr
    summary = json.loads(done.stdout)
    assert sorted(summary["hosts"]) == ["head01", "node01"]
    assert summary["totals"]["failed"] == 0
    again = json.loads(roll(lab).stdout)
    assert again["totals"]["changed_tasks"] == 0, "a second roll of the same stage changes nothing"


def test_a_failed_batch_leaves_the_rest_untouched(lab):
    # An invalid value fails the role's input check on the first batch (head01).
    done = roll(lab, "-e", "os_tuning_hugepages=-1")
    assert done.returncode == errors.EXIT_HOSTS_FAILED, done.stdout[-3000:] + done.stderr
    summary = json.loads(done.stdout)
    assert list(summary["hosts"]) == ["head01"], "node01 must not have been touched"
    failure = summary["hosts"]["head01"]["failed_tasks"][0]
    assert failure["task"] == "Validate the role's inputs"
