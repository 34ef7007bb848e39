"""`clusterforge run --mitogen`: the environment that selects Mitogen's strategy for one run."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.errors import UsageError
from clusterforge.runner import mitogen
from clusterforge.runner import playbook as runner


def test_mitogen_environment_names_its_linear_strategy():
    env = mitogen.environment()
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (mitogen.strategy_plugins() / "mitogen_linear.py").is_file()
    assert env["ANSIBLE_STRATEGY_PLUGINS"] == str(mitogen.strategy_plugins())


def test_mitogen_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(mitogen.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"mitogen package is not installed"):
        mitogen.environment()


def test_the_run_environment_selects_mitogen_only_when_asked():
    project = Path("/p")
    plain = runner._ansible_environment(project)
    assert "ANSIBLE_STRATEGY" not in plain and plain["ANSIBLE_CONFIG"] == "/p/ansible.cfg"
    chosen = runner._ansible_environment(project, use_mitogen=True)
    assert chosen == {**plain, **mitogen.environment()}


def test_run_passes_the_mitogen_environment_to_ansible_runner(monkeypatch, tmp_path):
    seen = {}

    def fake_run(**kwargs):
        seen.update(kwargs["envvars"])
        raise RuntimeError("stop here")

    monkeypatch.setattr(runner.ansible_runner, "run", fake_run)
    options = runner.RunOptions(inventory=tmp_path / "hosts.ini", mitogen=True)
    with pytest.raises(RuntimeError, match="stop here"):
        runner._run(tmp_path, options, tmp_path, "site.yml", "hosts.ini", [], None, None, None)
    assert seen["ANSIBLE_STRATEGY"] == "mitogen_linear"
