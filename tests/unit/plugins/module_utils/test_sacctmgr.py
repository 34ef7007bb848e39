"""sacctmgr's tables and the slurm_accounts plan, on real outputs of the Molecule slurm scenario's Slurm
24.11.5 (tests/fixtures/sacctmgr and squeue, each with its .source): a fresh database, the database
after the scenario's accounts were applied, and after verify changed a limit and removed an account.
The declared lists are the scenario's own (molecule/slurm/molecule.yml), the ones those outputs came from."""

from __future__ import annotations

import copy

import pytest
import yaml
from ansible.module_utils.sacctmgr import parse_squeue, parse_table
from ansible.module_utils.slurm_accounts import SHOW_ASSOCS, SpecError, blocking_jobs, diff_text, plan, read_state
from ansible.module_utils.verdicts import ParseError

from tests.paths import PROJECT

from .samples import fixture, read

SCENARIO = yaml.safe_load((PROJECT / "molecule" / "slurm" / "molecule.yml").read_text())
INPUTS = SCENARIO["provisioner"]["inventory"]["group_vars"]["all"]
QOS, ACCOUNTS, USERS = INPUTS["slurm_accounts_qos"], INPUTS["slurm_accounts_accounts"], INPUTS["slurm_accounts_users"]
CLUSTER = "cluster"  # the scenario's ClusterName (the slurm role's default), in the captured commands


def outputs(stage: str, **others: str) -> dict[str, str]:
    """The five tables of one captured stage (fresh, converged, removed); a table not captured at
    that stage is the one of the stage named in `others` (the TRES never change)."""
    names = {
        "qos": "show-qos",
        "accounts": "show-account",
        "assocs": "show-assoc",
        "users": "show-user",
        "tres": "show-tres",
    }
    return {key: read(fixture("sacctmgr", f"{others.get(key, stage)}-{name}.txt")) for key, name in names.items()}


FRESH = read_state(outputs("fresh"))
CONVERGED = read_state(outputs("converged", tres="fresh"))
REMOVED = read_state(outputs("removed", qos="converged", tres="fresh"))


def _with(entries: list[dict], name: str, **fields) -> list[dict]:
    out = copy.deepcopy(entries)
    for entry in out:
        if entry["name"] == name:
            entry.update(fields)
    return out


def test_the_real_tables_parse_with_sacctmgr_s_titles():
    assoc = parse_table(read(fixture("sacctmgr", "converged-show-assoc.txt")), SHOW_ASSOCS)
    ml = next(row for row in assoc if row["Account"] == "ml" and row["User"] == "")
    assert ml == {
        "Account": "ml",
        "User": "",
        "Partition": "",
        "ParentName": "root",
        "Share": "100",
        "GrpTRES": "gres/gpu=2",
        "MaxTRES": "",
        "MaxWall": "",
        "QOS": "high,low,normal",
        "DefaultQOS": "normal",
    }
    assert FRESH.tres >= {"cpu", "mem", "node", "billing", "gres/gpu"}
    assert set(FRESH.qos) == {"normal"} and set(FRESH.account_assocs) == {"root"}
    assert CONVERGED.qos["high"]["Preempt"] == "low" and CONVERGED.qos["low"]["PreemptMode"] == "requeue"
    # sacctmgr stores descriptions in lower case ("Machine learning" was declared).
    assert CONVERGED.accounts["ml"]["Description"] == "machine learning"
    assert CONVERGED.users["alice"]["DefaultAccount"] == "ml"


def test_another_table_is_not_taken_for_the_one_asked_for():
    tables = outputs("converged", tres="fresh")
    tables["qos"], tables["assocs"] = tables["assocs"], tables["qos"]
    with pytest.raises(ParseError, match=r"sacctmgr show qos line 1: expected the header Name\|Descr"):
        read_state(tables)


def test_the_scenario_on_a_fresh_database_is_added_in_dependency_order():
    changes = plan(QOS, ACCOUNTS, USERS, FRESH, CLUSTER)
    assert [change.args for change in changes] == [
        ["add", "qos", "low", "Description=Preemptible work", "Priority=0", "PreemptMode=requeue", "UsageFactor=0.5"],
        ["add", "qos", "high", "Description=Urgent work", "Priority=100", "MaxTRESPerUser=gres/gpu=2"],
        [
            "add", "account", "ml", "Cluster=cluster", "Parent=root", "Description=Machine learning",
            "Organization=research", "Fairshare=100", "GrpTRES=gres/gpu=2", "QOS=high,low,normal", "DefaultQOS=normal",
        ],
        ["add", "account", "vision", "Cluster=cluster", "Parent=ml", "Fairshare=50", "MaxTRES=gres/gpu=1"],
        [
            "add", "account", "physics", "Cluster=cluster", "Parent=root", "Description=Physics",
            "Organization=research", "Fairshare=50", "GrpTRES=gres/gpu=4",
        ],
        ["add", "user", "alice", "Account=ml,vision", "Cluster=cluster", "DefaultAccount=ml"],
        ["add", "user", "bob", "Account=physics", "Cluster=cluster", "MaxWall=1-00:00:00", "DefaultAccount=physics"],
        # high preempts low: set once both exist.
        ["modify", "qos", "where", "Name=high", "set", "Preempt=low"],
    ]  # fmt: skip


def test_re_applying_what_the_database_holds_changes_nothing():
    assert plan(QOS, ACCOUNTS, USERS, CONVERGED, CLUSTER) == []


def test_a_changed_limit_is_one_command_and_its_diff():
    changes = plan(QOS, _with(ACCOUNTS, "ml", grp_tres={"gres/gpu": 3}), USERS, CONVERGED, CLUSTER)
    assert [change.args for change in changes] == [
        ["modify", "account", "where", "Name=ml", "Cluster=cluster", "set", "GrpTRES=gres/gpu=3"]
    ]
    assert [change.text for change in changes] == ["change account ml: grp_tres: gres/gpu=2 -> gres/gpu=3"]
    assert diff_text(changes) == {
        "before": "account ml: grp_tres=gres/gpu=2\n",
        "after": "account ml: grp_tres=gres/gpu=3\n",
    }


def test_after_verify_s_changes_the_scenario_puts_back_what_it_declares():
    changes = plan(QOS, ACCOUNTS, USERS, REMOVED, CLUSTER)
    assert [change.text for change in changes] == [
        "add account physics: parent=root, description=Physics, organization=research, fairshare=50,"
        " grp_tres=gres/gpu=4",
        "add user bob: accounts=physics, max_wall=1-00:00:00, default_account=physics",
        "change account ml: grp_tres: gres/gpu=3 -> gres/gpu=2",
    ]


def test_a_user_s_accounts_are_all_its_associations():
    changes = plan(QOS, ACCOUNTS, _with(USERS, "alice", accounts=["vision"]), CONVERGED, CLUSTER)
    assert [change.args for change in changes] == [
        ["modify", "user", "where", "Name=alice", "set", "DefaultAccount=vision"],
        ["delete", "user", "where", "Name=alice", "Account=ml", "Cluster=cluster"],
    ]
    assert changes[1].removal.accounts == ("ml",) and changes[1].removal.user == "alice"


def test_undeclared_entries_are_left_alone_unless_pruned_and_root_and_normal_never_go():
    assert plan([], [], [], CONVERGED, CLUSTER) == []
    pruned = plan([], [], [], CONVERGED, CLUSTER, prune=True)
    assert [change.text for change in pruned] == [
        "remove user alice",
        "remove user bob",
        "remove account vision",  # below ml: first
        "remove account ml",
        "remove account physics",
        "remove qos high",
        "remove qos low",
    ]


def test_a_removal_is_blocked_by_the_real_running_job_under_it():
    accounts = [*(a for a in ACCOUNTS if a["name"] != "physics"), {"name": "physics", "state": "absent"}]
    users = [*(u for u in USERS if u["name"] != "bob"), {"name": "bob", "state": "absent"}]
    changes = plan(QOS, accounts, users, CONVERGED, CLUSTER)
    assert [change.text for change in changes] == ["remove user bob", "remove account physics"]
    running = parse_squeue(read(fixture("squeue", "bob-sleep-job-running.txt")))
    assert running == [{"JOBID": "10", "USER": "bob", "ACCOUNT": "physics", "QOS": "normal", "STATE": "RUNNING"}]
    assert {label: [j["JOBID"] for j in jobs] for label, jobs in blocking_jobs(changes, running).items()} == {
        "user bob": ["10"],
        "account physics": ["10"],
    }
    assert blocking_jobs(changes, parse_squeue(read(fixture("squeue", "empty-queue.txt")))) == {}
    # A job in another account blocks nothing.
    assert blocking_jobs(changes, [{**running[0], "USER": "alice", "ACCOUNT": "ml"}]) == {}


def test_a_qos_still_listed_cannot_be_removed():
    with pytest.raises(SpecError, match=r"^accounts\[0\] \(ml\)\.qos: 'high' is not a QoS declared or in the database"):
        plan([*QOS[:1], {"name": "high", "state": "absent"}], ACCOUNTS, USERS, CONVERGED, CLUSTER)


def test_removing_a_qos_is_blocked_by_a_job_in_it():
    accounts = _with(ACCOUNTS, "ml", qos=["normal", "low"])
    changes = plan([*QOS[:1], {"name": "high", "state": "absent"}], accounts, USERS, CONVERGED, CLUSTER)
    assert [change.text for change in changes] == [
        "change account ml: qos: high,low,normal -> low,normal",
        "remove qos high",
    ]
    (removal,) = [change for change in changes if change.removal]
    assert removal.args == ["delete", "qos", "where", "Name=high"]
    job = {"JOBID": "7", "USER": "alice", "ACCOUNT": "ml", "QOS": "high", "STATE": "PENDING"}
    assert blocking_jobs(changes, [job]) == {"qos high": [job]}


NOT_TRACKED = r"^accounts\[0\] \(ml\)\.grp_tres: 'gres/fpga' is not a TRES the accounting database tracks \(billing, "
LOOP = _with(_with(ACCOUNTS, "ml", parent="vision"), "vision", parent="ml")
DANGLING = [
    (QOS, _with(ACCOUNTS, "ml", grp_tres={"gres/fpga": 1}), USERS, NOT_TRACKED),
    (QOS, _with(ACCOUNTS, "ml", qos=["normal", "urgent"]), USERS, r"^accounts\[0\] \(ml\)\.qos: 'urgent' is not a QoS"),
    (
        QOS,
        _with(ACCOUNTS, "ml", default_qos="low", qos=["normal"]),
        USERS,
        r"default_qos: 'low' is not in its qos list",
    ),
    (_with(QOS, "high", preempt=["urgent"]), ACCOUNTS, USERS, r"^qos\[1\] \(high\)\.preempt: 'urgent' is not another"),
    (QOS, ACCOUNTS, _with(USERS, "bob", accounts=["chemistry"]), r"^users\[1\] \(bob\): account 'chemistry' is not"),
    (QOS, LOOP, USERS, r"parent: the parents form a loop"),
    (QOS, [*ACCOUNTS[1:], {"name": "ml", "state": "absent"}], USERS, r"account 'ml' is not declared or on the cluster"),
]


@pytest.mark.parametrize("qos,accounts,users,message", DANGLING)
def test_a_reference_to_nothing_is_named_before_any_change(qos, accounts, users, message):
    with pytest.raises(SpecError, match=message):
        plan(qos, accounts, users, CONVERGED, CLUSTER)


def test_removing_an_account_above_a_declared_one_is_refused():
    accounts = [{"name": "ml", "state": "absent"}, {"name": "vision", "parent": "ml"}]
    with pytest.raises(SpecError, match=r"account 'ml' is not declared or on the cluster"):
        plan([], accounts, [], CONVERGED, CLUSTER)
    with pytest.raises(SpecError, match=r"removing ml would remove vision below it"):
        plan([], [{"name": "ml", "state": "absent"}, {"name": "vision"}], [], CONVERGED, CLUSTER)
