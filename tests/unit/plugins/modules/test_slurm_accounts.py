"""slurm_accounts module: sacctmgr and squeue mocked with the real outputs of the Molecule slurm scenario
(tests/fixtures/sacctmgr, squeue). What it runs in check mode, on apply, on a refusal and with
allow_cancel_jobs."""

from __future__ import annotations

import pytest

from tests.unit.plugins.module_utils.samples import fixture, read
from tests.unit.plugins.module_utils.test_sacctmgr import ACCOUNTS, QOS, USERS

SQUEUE = "squeue --all --format=%i|%u|%a|%q|%T"
PHYSICS_GONE = {
    "accounts": [*(a for a in ACCOUNTS if a["name"] != "physics"), {"name": "physics", "state": "absent"}],
    "users": [*(u for u in USERS if u["name"] != "bob"), {"name": "bob", "state": "absent"}],
}


def _database(node, stage: str = "converged") -> None:
    node.programs |= {"sacctmgr", "squeue", "scancel"}
    for table, name in (
        ("qos", "show-qos"),
        ("account", "show-account"),
        ("assoc", "show-assoc"),
        ("user", "show-user"),
    ):
        node.outputs[f"sacctmgr --parsable2 show {table}"] = (0, read(fixture("sacctmgr", f"{stage}-{name}.txt")), "")
    node.outputs["sacctmgr --parsable2 show tres"] = (0, read(fixture("sacctmgr", "fresh-show-tres.txt")), "")
    node.outputs["sacctmgr --immediate"] = (0, "", "")
    node.outputs[SQUEUE] = (0, read(fixture("squeue", "empty-queue.txt")), "")


def _changing(node) -> list[list[str]]:
    return [call[2:] for call in node.calls if call[:2] == ["/usr/bin/sacctmgr", "--immediate"]]


def _args(**extra) -> dict:
    return {"cluster": "cluster", "qos": QOS, "accounts": ACCOUNTS, "users": USERS, **extra}


def test_check_mode_shows_the_difference_and_changes_nothing(node, run):
    _database(node, "fresh")
    done = run("slurm_accounts", _args(), check_mode=True)
    assert not done.failed and done.result["changed"]
    assert len(done.result["changes"]) == 8
    assert (
        done.result["changes"][0]
        == "add qos low: description=Preemptible work, priority=0, preempt_mode=requeue, usage_factor=0.5"
    )
    assert "account ml: grp_tres=gres/gpu=2" in done.result["diff"]["after"]
    assert _changing(node) == []
    assert all(env["LC_ALL"] == "C" for env in node.environ)


def test_apply_runs_the_plan_in_order_and_a_re_run_runs_nothing(node, run):
    _database(node, "fresh")
    done = run("slurm_accounts", _args())
    assert done.result["changed"]
    assert [args[1:3] for args in _changing(node)] == [
        ["qos", "low"], ["qos", "high"], ["account", "ml"], ["account", "vision"], ["account", "physics"],
        ["user", "alice"], ["user", "bob"], ["qos", "where"],
    ]  # fmt: skip
    node.calls.clear()
    _database(node, "converged")
    again = run("slurm_accounts", _args())
    assert not again.result["changed"] and again.result["changes"] == [] and _changing(node) == []
    # Nothing removed: squeue is not even asked.
    assert not [call for call in node.calls if call[0].endswith("squeue")]


def test_a_removal_with_a_running_job_is_refused_naming_it_and_nothing_changes(node, run):
    _database(node)
    node.outputs[SQUEUE] = (0, read(fixture("squeue", "bob-sleep-job-running.txt")), "")
    done = run("slurm_accounts", _args(**PHYSICS_GONE))
    assert done.failed
    assert done.result["msg"].startswith(
        "slurm_accounts: refusing to remove what active jobs run under (nothing was changed)"
    )
    assert "account physics: jobs 10 (bob, account physics, qos normal, RUNNING)" in done.result["msg"]
    assert done.result["blocked"] == {"user bob": ["10"], "account physics": ["10"]}
    assert _changing(node) == []
    assert not [call for call in node.calls if call[0].endswith("scancel")]


def test_allow_cancel_jobs_cancels_waits_then_removes(node, run):
    _database(node)
    node.outputs[SQUEUE] = (0, read(fixture("squeue", "bob-sleep-job-running.txt")), "")
    # Once cancelled, the job is no longer listed.
    node.outputs[SQUEUE + " --jobs=10"] = (0, read(fixture("squeue", "empty-queue.txt")), "")
    node.outputs["scancel"] = (0, "", "")
    done = run("slurm_accounts", _args(**PHYSICS_GONE, allow_cancel_jobs=True))
    assert not done.failed and done.result["cancelled_jobs"] == ["10"]
    order = [call[0].rsplit("/", 1)[-1] + " " + " ".join(call[1:3]) for call in node.calls if "show" not in call]
    assert order == [
        "squeue --all --format=%i|%u|%a|%q|%T",
        "scancel 10",
        "squeue --all --format=%i|%u|%a|%q|%T",
        "sacctmgr --immediate delete",
        "sacctmgr --immediate delete",
    ]
    assert _changing(node)[-1] == ["delete", "account", "where", "Name=physics", "Cluster=cluster"]


JOBS_ACTIVE = (1, "", read(fixture("sacctmgr_refusal", "delete-user-jobs-active-karaage.txt")))


@pytest.fixture
def cancelled_bob(node, monkeypatch):
    """bob's running job 10 in the queue, gone from it once cancelled; no real sleeps."""
    _database(node)
    node.outputs[SQUEUE] = (0, read(fixture("squeue", "bob-sleep-job-running.txt")), "")
    node.outputs[SQUEUE + " --jobs=10"] = (0, read(fixture("squeue", "empty-queue.txt")), "")
    node.outputs["scancel"] = (0, "", "")
    monkeypatch.setattr("time.sleep", lambda seconds: None)


def test_a_removal_slurmdbd_refuses_for_the_cancelled_jobs_is_tried_again_until_it_records_their_end(
    node, run, cancelled_bob
):
    # slurmdbd has not had the job's end from slurmctld yet: it refuses twice, then removes.
    node.outputs["sacctmgr --immediate delete user"] = [JOBS_ACTIVE, JOBS_ACTIVE, (0, "", "")]
    done = run("slurm_accounts", _args(**PHYSICS_GONE, allow_cancel_jobs=True))
    assert not done.failed, done.result
    deletes = [args[:2] for args in _changing(node) if args[0] == "delete"]
    assert deletes == [["delete", "user"]] * 3 + [["delete", "account"]]


def test_a_removal_still_refused_after_cancel_timeout_fails_saying_slurmdbd_counts_the_jobs(
    node, run, cancelled_bob, monkeypatch
):
    node.outputs["sacctmgr --immediate delete user"] = JOBS_ACTIVE
    clock = iter(range(0, 1000, 5))  # each reading of the clock 5 s later
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    done = run("slurm_accounts", _args(**PHYSICS_GONE, allow_cancel_jobs=True, cancel_timeout=30))
    assert done.failed
    assert done.result["msg"].startswith("slurm_accounts: sacctmgr refused 'remove user bob'.")
    assert done.result["msg"].endswith("slurmdbd still counted jobs active 30 s after jobs 10 were cancelled.")
    assert "Job(s) active, cancel job(s) before remove" in done.result["stderr"]
    assert done.result["applied_before"] == []
    assert not [args for args in _changing(node) if args[:2] == ["delete", "account"]]


def test_a_removal_refused_for_jobs_squeue_does_not_list_is_not_retried_and_points_at_runaway_jobs(node, run):
    _database(node)
    node.outputs["sacctmgr --immediate delete user"] = [JOBS_ACTIVE, (0, "", "")]
    done = run("slurm_accounts", _args(**PHYSICS_GONE))
    assert done.failed
    assert done.result["msg"].endswith("squeue lists none of those jobs: see `sacctmgr show runawayjobs`.")
    assert [args[:2] for args in _changing(node)] == [["delete", "user"]]


def test_a_refused_command_says_which_change_and_what_was_applied_before(node, run):
    _database(node, "fresh")
    node.outputs["sacctmgr --immediate add account"] = (1, "", " Problem adding accounts: Unknown parent\n")
    done = run("slurm_accounts", _args())
    assert done.failed
    assert done.result["msg"].startswith("slurm_accounts: sacctmgr refused 'add account ml:")
    assert done.result["applied_before"] == [
        "add qos low: description=Preemptible work, priority=0, preempt_mode=requeue, usage_factor=0.5",
        "add qos high: description=Urgent work, priority=100, max_tres_per_user=gres/gpu=2",
    ]
    assert "Unknown parent" in done.result["stderr"]


def test_a_bad_entry_fails_before_any_change(node, run):
    _database(node)
    done = run("slurm_accounts", _args(users=[{"name": "bob", "accounts": ["physics"], "default_account": "ml"}]))
    assert done.failed
    assert done.result["msg"] == (
        "slurm_accounts: users[0] (bob).default_account: 'ml' is not one of its accounts ['physics']"
    )
    assert _changing(node) == []


@pytest.mark.parametrize("check_mode", [True, False])
def test_without_sacctmgr_check_mode_skips_and_a_run_fails(node, run, check_mode):
    done = run("slurm_accounts", _args(), check_mode=check_mode)
    if check_mode:
        assert not done.failed and done.result["skipped"] and not done.result["changed"]
        assert "sacctmgr is not installed yet" in done.result["msg"]
    else:
        assert done.failed and "sacctmgr not found" in done.result["msg"]


def test_an_unreachable_database_fails_a_run_and_is_skipped_in_check_mode(node, run):
    node.programs.add("sacctmgr")
    node.outputs["sacctmgr --parsable2 show"] = (
        1,
        "",
        "sacctmgr: error: Problem talking to the database: Connection refused\n",
    )
    failed = run("slurm_accounts", _args())
    assert failed.failed and failed.result["msg"].startswith("slurm_accounts: reading the accounting database failed")
    checked = run("slurm_accounts", _args(), check_mode=True)
    assert checked.result["skipped"] and "Connection refused" in checked.result["msg"]
