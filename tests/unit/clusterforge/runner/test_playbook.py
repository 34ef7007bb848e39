from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge import errors
from clusterforge.errors import UsageError
from clusterforge.runner import playbook as runner

# The shape of ansible-runner's Runner.stats (from the playbook_on_stats event).
STATS = {
    "ok": {"head01": 10, "node01": 9, "node02": 3},
    "changed": {"head01": 2},
    "failures": {"node01": 1},
    "dark": {"node02": 1},
    "skipped": {"head01": 4, "node01": 4},
    "rescued": {},
    "ignored": {},
    "processed": {"head01": 1, "node01": 1, "node02": 1},
}


def test_summary_has_one_row_per_host():
    hosts = {h.host: h for h in runner.summarise(STATS)}
    assert set(hosts) == {"head01", "node01", "node02"}
    assert (hosts["head01"].ok, hosts["head01"].changed, hosts["head01"].skipped) == (10, 2, 4)
    assert hosts["node01"].failed == 1
    assert hosts["node02"].unreachable == 1


def test_summary_of_no_stats_is_empty():
    assert runner.summarise(None) == []


@pytest.mark.parametrize(
    ("status", "rc", "stats", "code"),
    [
        ("successful", 0, {"ok": {"a": 1}}, errors.EXIT_OK),
        ("failed", 2, STATS, errors.EXIT_HOSTS_UNREACHABLE),
        ("failed", 2, {"ok": {"a": 1}, "failures": {"a": 1}}, errors.EXIT_HOSTS_FAILED),
        ("failed", 4, {}, errors.EXIT_HOSTS_FAILED),
        ("canceled", 254, {}, errors.EXIT_INTERRUPTED),
    ],
)
def test_exit_codes(status, rc, stats, code):
    result = runner.RunResult(status=status, rc=rc, run_dir=Path("."), hosts=runner.summarise(stats))
    assert result.exit_code == code


def test_stage_and_site_resolve_inside_the_project(project):
    assert runner.resolve_playbook(project, "site") == project / "site.yml"
    assert runner.resolve_playbook(project, "base") == project / "playbooks" / "base.yml"


def test_unknown_playbook_is_a_usage_error(project):
    with pytest.raises(UsageError, match="playbook 'nosuch' not found"):
        runner.resolve_playbook(project, "nosuch")


def test_missing_inventory_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"inventory not found: .*missing\.yml"):
        runner.resolve_inventory(tmp_path / "missing.yml")
