"""The shared Molecule config runs roles the way the project runs them."""

from __future__ import annotations

import configparser
import re

import pytest
import yaml

from tests.paths import PROJECT


def _config(project):
    return yaml.safe_load((project / ".config/molecule/config.yml").read_text())


def test_a_check_mode_converge_runs_first_on_the_fresh_node(project):
    sequence = _config(project)["scenario"]["test_sequence"]
    assert sequence.index("prepare") < sequence.index("check") < sequence.index("converge")
    assert sequence.index("converge") < sequence.index("idempotence") < sequence.index("verify")


def test_scenarios_run_the_projects_ansible_cfg_as_shipped(project):
    """What Molecule tests is what users run: the project's ansible.cfg (plugins, pipelining,
    callbacks), not a config Molecule generates, and no scenario overrides an engine setting."""
    provisioner = _config(project)["provisioner"]
    assert provisioner["env"]["ANSIBLE_CONFIG"] == "${MOLECULE_PROJECT_DIRECTORY}/ansible.cfg"
    assert "config_options" not in provisioner
    # Only where facts are cached moves (to the scenario's own directory), and where a log goes.
    allowed = {"ANSIBLE_CONFIG", "ANSIBLE_CACHE_PLUGIN_CONNECTION", "ANSIBLE_LOG_PATH"}
    for scenario in sorted(project.glob("molecule/*/molecule.yml")):
        config = yaml.safe_load(scenario.read_text()) or {}
        section = config.get("provisioner") or {}
        overridden = {name for name in section.get("env") or {} if name.startswith("ANSIBLE_")} - allowed
        assert not overridden, f"{scenario}: {sorted(overridden)}"
        assert "config_options" not in section, scenario
    assert set(provisioner["env"]) <= allowed
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(project / "ansible.cfg")
    assert "fork_warmup" in cfg.get("defaults", "callbacks_enabled")


SCENARIOS = sorted(path.parent for path in (PROJECT / "molecule").glob("*/molecule.yml"))


def _sequence(scenario) -> list[str]:
    own = (yaml.safe_load((scenario / "molecule.yml").read_text()) or {}).get("scenario", {}).get("test_sequence")
    return own or _config(PROJECT)["scenario"]["test_sequence"]


def test_the_node_state_is_read_by_testinfra_through_docker_exec(project):
    verifier = _config(project)["verifier"]
    assert verifier["name"] == "testinfra"
    assert verifier["options"]["connection"] == "docker"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda path: path.name)
def test_every_scenario_has_testinfra_tests_and_runs_them_before_its_plays(scenario):
    assert list((scenario / "tests").glob("test_*.py")), f"{scenario.name}: no tests/test_*.py"
    sequence = _sequence(scenario)
    assert "verify" in sequence
    if (scenario / "verify.yml").exists():
        # The Ansible plays (refusals, re-runs) run as side_effect, after testinfra read the converged node.
        assert _config(PROJECT)["provisioner"]["playbooks"]["side_effect"] == "verify.yml"
        assert sequence.index("idempotence") < sequence.index("verify") < sequence.index("side_effect")


# A verifier reads the node's real state: the role's private (__role_*) variables are its internals, and
# the role's own vars files are not a scenario's expected values.
ROLES = sorted(path.name for path in (PROJECT / "roles").iterdir() if path.is_dir())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda path: path.name)
def test_no_verifier_reads_a_role_s_private_variables_or_vars_files(scenario):
    private = re.compile(r"\b__(%s)_\w+" % "|".join(map(re.escape, ROLES)))  # noqa: UP031 a regex of names
    for path in [*scenario.glob("*.yml"), *scenario.glob("tests/*.py"), *scenario.glob("vars/*.yml")]:
        text = path.read_text()
        assert not private.search(text), f"{path.relative_to(PROJECT)}: {private.search(text).group(0)}"
        assert not re.search(r"roles/\w+/vars/", text), f"{path.relative_to(PROJECT)} reads a role's vars file"
