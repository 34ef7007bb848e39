"""The slurm role's MpiDefault decision (roles/slurm/tasks/mpi.yml) through ansible-playbook: every host
of the run looks for Slurm's plugin file, and all of them get pmix only when all have it; otherwise all
keep none and the run says which hosts lack it. Hosts use the local connection; each one's plugin
directory is the test's own, so nothing on this machine is read or changed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.conftest import local_inventory, local_playbook
from tests.paths import PROJECT

PLAYBOOK = PROJECT / "tests" / "integration" / "playbooks" / "slurm_mpi_default.yml"
HOSTS = ("head01", "node01", "node02")


def _run(tmp_path: Path, with_plugin: set[str], *extra: str):
    hosts = {}
    for host in HOSTS:
        plugins = tmp_path / host
        plugins.mkdir(exist_ok=True)
        if host in with_plugin:
            (plugins / "mpi_pmix.so").write_bytes(b"")
        hosts[host] = f"slurm_plugin_dir={plugins}"
    decisions = tmp_path / "decisions"
    decisions.mkdir(exist_ok=True)
    inventory = local_inventory(tmp_path, hosts)
    done = local_playbook(tmp_path, PLAYBOOK, inventory, "-e", f"decisions_dir={decisions}", *extra)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    return {path.stem: json.loads(path.read_text()) for path in decisions.glob("*.json")}, " ".join(done.stdout.split())


def test_every_host_with_the_plugin_gets_pmix(tmp_path):
    decisions, output = _run(tmp_path, set(HOSTS))
    assert decisions == {host: {"value": "pmix", "missing": [], "message": ""} for host in HOSTS}
    assert "skipped: MpiDefault" not in output


def test_one_host_without_the_plugin_keeps_none_on_every_host_and_says_so(tmp_path):
    decisions, output = _run(tmp_path, {"head01", "node01"})
    assert {host: decision["value"] for host, decision in decisions.items()} == dict.fromkeys(HOSTS, "none")
    assert {tuple(decision["missing"]) for decision in decisions.values()} == {("node02",)}
    assert (
        "skipped: MpiDefault=pmix: the installed Slurm has no pmix plugin "
        f"({tmp_path}/node02/mpi_pmix.so is missing on node02)" in output
    )


def test_none_asked_looks_for_nothing(tmp_path):
    decisions, output = _run(tmp_path, set(), "-e", "slurm_mpi_default=none")
    assert decisions == {host: {"value": "none", "missing": [], "message": ""} for host in HOSTS}
    assert "skipped: MpiDefault" not in output


def test_check_mode_decides_the_same(tmp_path):
    # In check mode the decision is made as in a real run (stat changes nothing); the files that
    # would keep it are not written.
    _, output = _run(tmp_path, {"node01"}, "--check")
    assert "skipped: MpiDefault=pmix: the installed Slurm has no pmix plugin (missing: head01 (" in output
    assert "node02 (" in output and "node01 (" not in output


def test_an_unknown_type_is_refused_naming_the_variable(tmp_path):
    inventory = local_inventory(tmp_path, {"node01": f"slurm_plugin_dir={tmp_path}"})
    done = local_playbook(
        tmp_path, PLAYBOOK, inventory, "-e", "slurm_mpi_default=openmpi", "-e", f"decisions_dir={tmp_path}"
    )
    assert done.returncode != 0
    assert 'expected slurm_mpi_default none, pmi2 or pmix (is "openmpi")' in " ".join(done.stdout.split())
