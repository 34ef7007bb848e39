"""clusterforge_slurm_accounts_conf: the slurm.conf settings the declared accounts, users and QoS need,
and the slurm role's slurm.conf carrying them (only with accounting on)."""

from __future__ import annotations

from tests.paths import filters
from tests.unit.roles.test_slurm import _conf, _template

conf = filters("plugins/filter/slurm_accounts.py")["clusterforge_slurm_accounts_conf"]

QOS = [
    {"name": "low", "priority": 0, "preempt_mode": "requeue"},
    {"name": "high", "priority": 100, "preempt": ["low"], "max_tres_per_user": {"gres/gpu": 2}},
]
ACCOUNTS = [{"name": "ml", "fairshare": 100, "grp_tres": {"gres/gpu": 8, "gres/fpga": 2, "cpu": 64}}]


def test_nothing_declared_adds_nothing():
    assert conf([], [], []) == {}
    assert conf([{"name": "gone", "state": "absent"}]) == {}


def test_accounts_enforce_limits_and_track_every_gres_a_limit_names():
    settings = conf([], ACCOUNTS, [])
    assert settings == {
        "AccountingStorageEnforce": "associations,limits,qos",
        "AccountingStorageTRES": "gres/fpga,gres/gpu",
        "PriorityType": "priority/multifactor",
        "PriorityWeightFairshare": "10000",
    }


def test_a_qos_that_preempts_another_turns_qos_preemption_on():
    settings = conf(QOS, [], [])
    assert settings["PreemptType"] == "preempt/qos"
    assert settings["PreemptMode"] == "REQUEUE"
    assert settings["PriorityWeightQOS"] == "10000"
    assert "PriorityWeightFairshare" not in settings
    # Without a preempt list nobody preempts: no preemption settings.
    assert "PreemptType" not in conf([QOS[0]], [], [])


def test_malformed_entries_are_left_to_the_module():
    assert conf(["low", {"name": "x", "grp_tres": "gres/gpu=2"}], None, None)["AccountingStorageTRES"] == "gres/gpu"


def test_slurm_conf_carries_them_only_with_accounting():
    variables = {"slurm_accounts_qos": QOS, "slurm_accounts_accounts": ACCOUNTS}
    with_accounting = _conf(_template("slurm.conf.j2", slurm_accounting=True, **variables))
    assert "PreemptType=preempt/qos" in with_accounting
    assert "AccountingStorageEnforce=associations,limits,qos" in with_accounting
    assert "AccountingStorageTRES=gres/fpga,gres/gpu" in with_accounting
    without = _conf(_template("slurm.conf.j2", **variables))
    assert not [line for line in without if line.startswith(("Preempt", "AccountingStorageEnforce", "Priority"))]
    # Nothing declared: slurm.conf as before the role existed.
    plain = _conf(_template("slurm.conf.j2", slurm_accounting=True))
    assert not [line for line in plain if line.startswith(("Preempt", "AccountingStorageEnforce", "Priority"))]


def test_slurm_conf_extra_wins_over_a_derived_setting():
    text = _template(
        "slurm.conf.j2",
        slurm_accounting=True,
        slurm_accounts_qos=QOS,
        slurm_conf_extra={"PreemptMode": "CANCEL"},
    )
    assert [line for line in _conf(text) if line.startswith("PreemptMode=")] == ["PreemptMode=CANCEL"]
