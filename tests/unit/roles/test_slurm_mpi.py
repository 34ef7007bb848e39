"""The slurm role's MpiDefault: pmix only where every Slurm host of the run has Slurm's plugin file
(the filter clusterforge_slurm_mpi_default, as tasks/mpi.yml calls it), and slurm.conf says so."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.paths import filters
from tests.unit.roles.harness import render
from tests.unit.roles.test_slurm import DEFAULTS, ROLE, _conf, _template

DECIDE = filters("plugins/filter/slurm_mpi.py")["clusterforge_slurm_mpi_default"]
PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
TASKS = yaml.safe_load((ROLE / "tasks" / "mpi.yml").read_text())


def _stat(exists: bool, plugin_dir: str = PLUGIN_DIR) -> dict:
    """What tasks/mpi.yml notes of a host's plugin file (__slurm_mpi_plugin_file)."""
    return {"path": f"{plugin_dir}/mpi_pmix.so", "exists": exists}


def _decide(probes: dict, wanted: str = "pmix") -> dict:
    return DECIDE(probes, wanted)


def test_the_role_asks_for_pmix_by_default():
    assert DEFAULTS["slurm_mpi_default"] == "pmix"


def test_every_host_with_the_plugin_gets_pmix():
    decision = _decide({"head01": _stat(True), "node01": _stat(True), "node02": _stat(True)})
    assert decision == {"value": "pmix", "missing": [], "message": ""}
    assert "MpiDefault=pmix" in _conf(_template("slurm.conf.j2", __slurm_mpi=decision))


def test_one_host_without_the_plugin_keeps_none_and_says_where():
    decision = _decide({"node02": _stat(False), "head01": _stat(True), "node01": _stat(False)})
    assert decision["value"] == "none"
    assert decision["missing"] == ["node01", "node02"]
    assert decision["message"] == (
        "skipped: MpiDefault=pmix: the installed Slurm has no pmix plugin "
        f"({PLUGIN_DIR}/mpi_pmix.so is missing on node01, node02); slurm.conf keeps MpiDefault=none"
    )
    lines = _conf(_template("slurm.conf.j2", __slurm_mpi=decision))
    assert "MpiDefault=none" in lines and "MpiDefault=pmix" not in lines


def test_hosts_that_look_in_different_places_are_named_each_with_its_path():
    decision = _decide({"node01": _stat(False, "/usr/lib64/slurm"), "node02": _stat(False)})
    assert decision["message"] == (
        "skipped: MpiDefault=pmix: the installed Slurm has no pmix plugin (missing: "
        f"node01 (/usr/lib64/slurm/mpi_pmix.so), node02 ({PLUGIN_DIR}/mpi_pmix.so)); slurm.conf keeps MpiDefault=none"
    )


@pytest.mark.parametrize("probes", [{}, {"node01": {"changed": False, "skipped": True}}])
def test_none_asked_is_none_without_a_probe(probes):
    assert _decide(probes, "none") == {"value": "none", "missing": [], "message": ""}


@pytest.mark.parametrize("probe", [{"skipped": True}, {"path": "/x/mpi_pmix.so"}, "exists", None])
def test_a_probe_that_is_not_path_and_exists_is_refused_naming_the_host(probe):
    with pytest.raises(AnsibleFilterError, match=r"node01: expected \{path, exists\} of the plugin file"):
        _decide({"node01": probe})


def test_the_tasks_probe_the_plugin_file_named_by_the_wanted_type():
    _validate, probe, note, decide, report = TASKS
    path = render(probe["ansible.builtin.stat"]["path"], slurm_plugin_dir=PLUGIN_DIR, slurm_mpi_default="pmix")
    assert path == f"{PLUGIN_DIR}/mpi_pmix.so"
    assert note["ansible.builtin.set_fact"]["__slurm_mpi_plugin_file"]["path"] == probe["ansible.builtin.stat"]["path"]
    assert decide["run_once"] and "clusterforge_slurm_mpi_default" in decide["ansible.builtin.set_fact"]["__slurm_mpi"]
    assert report["ansible.builtin.debug"]["msg"].startswith("{{ __slurm_mpi['message'] }}")


def test_the_plugin_directory_follows_the_architecture():
    os_vars = yaml.safe_load((ROLE / "vars" / "Debian-13.yml").read_text())
    for arch in ("x86_64", "aarch64"):
        assert render(os_vars["__slurm_plugin_dir"], ansible_facts={"architecture": arch}) == (
            f"/usr/lib/{arch}-linux-gnu/slurm-wlm"
        )
