from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge import errors
from clusterforge.errors import UsageError
from clusterforge.runner import inventory
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
        ("failed", 2, {"ok": {"a": 1}, "failures": {}}, errors.EXIT_HOSTS_FAILED),
        ("canceled", 254, {}, errors.EXIT_INTERRUPTED),
        # Nothing ran: bad input (a syntax error, a --limit matching nothing, no hosts at all)...
        ("failed", 4, None, errors.EXIT_USAGE),
        ("failed", 1, {}, errors.EXIT_USAGE),
        ("successful", 0, {"ok": {}}, errors.EXIT_USAGE),
        # ... or a machine that cannot run Ansible.
        ("failed", 127, None, errors.EXIT_ENVIRONMENT),
    ],
)
def test_exit_codes(status, rc, stats, code):
    result = runner.RunResult(status=status, rc=rc, run_dir=Path("."), hosts=runner.summarise(stats))
    assert result.exit_code == code


def test_a_locale_ansible_refuses_is_a_machine_problem():
    output = "ERROR: Ansible requires the locale encoding to be UTF-8; Detected None."
    result = runner.RunResult(status="failed", rc=1, run_dir=Path("."), ansible_output=output)
    assert result.exit_code == errors.EXIT_ENVIRONMENT
    assert "before any host ran (exit status 1)" in result.no_host_reason


def test_a_run_that_matched_no_host_says_so():
    result = runner.RunResult(status="successful", rc=0, run_dir=Path("."))
    assert result.no_host_reason.startswith("no host matched")
    assert runner.RunResult(status="canceled", rc=254, run_dir=Path(".")).no_host_reason == ""


def test_stage_and_site_resolve_inside_the_project(project):
    assert runner.resolve_playbook(project, "site") == project / "site.yml"
    assert runner.resolve_playbook(project, "base") == project / "playbooks" / "base.yml"


def test_acceptance_resolves_by_name_and_by_file_name(project):
    # `clusterforge run acceptance` and `clusterforge run acceptance.yml` from any directory.
    expected = project / "playbooks" / "acceptance.yml"
    assert runner.resolve_playbook(project, "acceptance") == expected
    assert runner.resolve_playbook(project, "acceptance.yml") == expected


def test_unknown_playbook_is_a_usage_error(project):
    with pytest.raises(UsageError, match="playbook 'nosuch' not found"):
        runner.resolve_playbook(project, "nosuch")


def test_missing_inventory_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"inventory not found: .*missing\.yml"):
        inventory.resolve(tmp_path / "missing.yml")


def test_a_topology_inventory_without_its_plugin_line_is_refused(tmp_path, project):
    # Ansible would read it with the yaml plugin: an inventory without a single host.
    example = next((project / "inventories" / "examples").glob("*.topology.yml"))
    source = tmp_path / "cluster.topology.yml"
    source.write_text("\n".join(line for line in example.read_text().splitlines() if not line.startswith("plugin:")))
    with pytest.raises(UsageError, match=r"cluster\.topology\.yml: plugin: expected `plugin: topology`"):
        inventory.resolve(source)
    inventory.resolve(example)  # the example itself is valid


def test_an_invalid_topology_in_an_inventory_directory_is_refused(tmp_path):
    (tmp_path / "hosts.ini").write_text("[all]\nalpha\n")
    (tmp_path / "cluster.topology.yml").write_text("plugin: topology\ncluster: {name: x}\n")
    with pytest.raises(UsageError, match=r"invalid topology inventory:\n.*cluster\.topology\.yml"):
        inventory.resolve(tmp_path)
