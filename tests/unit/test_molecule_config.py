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


def test_facts_are_not_injected_as_variables_as_in_ansible_cfg(project):
    cfg = configparser.ConfigParser()
    cfg.read(project / "ansible.cfg")
    defaults = _config(project)["provisioner"]["config_options"]["defaults"]
    assert cfg.getboolean("defaults", "inject_facts_as_vars") is False
    assert defaults["inject_facts_as_vars"] is False
