"""Every `clusterforge run` leaves host key checking as plain ansible-playbook has it: ansible-runner
would otherwise turn it off, and the ssh plugin would add StrictHostKeyChecking=no after ansible.cfg's
accept-new (OpenSSH takes the first of the two). Checked on the environment ansible-runner itself
hands to ansible-playbook."""

from __future__ import annotations

import pytest
from ansible_runner.config.runner import RunnerConfig

from clusterforge.runner import playbook as runner
from tests.paths import PROJECT


def _final_env(tmp_path, project) -> dict[str, str]:
    """The environment ansible-runner gives ansible-playbook, from the envvars clusterforge passes."""
    (tmp_path / "run" / "project").mkdir(parents=True)
    config = RunnerConfig(
        private_data_dir=str(tmp_path / "run"),
        playbook="site.yml",
        envvars=runner._ansible_environment(project),
        suppress_env_files=True,
    )
    config.prepare()
    return config.env


def test_the_projects_ansible_cfg_keeps_host_keys_checked_under_ansible_runner(tmp_path, monkeypatch):
    monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING", raising=False)
    assert "\nhost_key_checking = True\n" in (PROJECT / "ansible.cfg").read_text()
    assert _final_env(tmp_path, PROJECT)["ANSIBLE_HOST_KEY_CHECKING"] == "True"


def test_without_it_ansible_runner_turns_checking_off(tmp_path, monkeypatch):
    """What naming it is for: ansible-runner's own default."""
    monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING", raising=False)
    (tmp_path / "project").mkdir()
    config = RunnerConfig(private_data_dir=str(tmp_path), playbook="site.yml", suppress_env_files=True)
    config.prepare()
    assert config.env["ANSIBLE_HOST_KEY_CHECKING"] == "False"


@pytest.mark.parametrize(
    ("cfg", "env", "expected"),
    [
        ("host_key_checking = False\n", None, "False"),
        ("host_key_checking = True\n", None, "True"),
        ("host_key_checking = True\n", "False", "False"),  # the environment wins, as for ansible-playbook
    ],
)
def test_ansible_playbook_gets_what_ansible_cfg_or_the_environment_says(tmp_path, monkeypatch, cfg, env, expected):
    project = tmp_path / "p"
    project.mkdir()
    (project / "ansible.cfg").write_text("[defaults]\n" + cfg)
    if env is None:
        monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING", raising=False)
    else:
        monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", env)
    assert _final_env(tmp_path, project)["ANSIBLE_HOST_KEY_CHECKING"] == expected
