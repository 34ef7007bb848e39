"""The shared Molecule config runs roles the way the project runs them."""

from __future__ import annotations

import configparser

import yaml


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
