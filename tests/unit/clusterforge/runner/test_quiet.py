"""The dependency warnings clusterforge silences in the Ansible processes it starts: these only,
and the user's own PYTHONWARNINGS still decides last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clusterforge.runner import playbook as runner
from clusterforge.runner import quiet

BIN = Path(sys.executable).parent
OURS = "ignore:DSA is deprecated:UserWarning:ansible._internal._ssh._ssh_agent"


def _run(command: list[str], pythonwarnings: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    if pythonwarnings is not None:
        env["PYTHONWARNINGS"] = pythonwarnings
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=120)


def test_the_users_filters_come_after_ours_and_so_decide_last():
    assert quiet.pythonwarnings(None) == OURS
    assert quiet.pythonwarnings("") == OURS
    assert quiet.pythonwarnings("error::DeprecationWarning") == f"{OURS},error::DeprecationWarning"


def test_ansible_prints_the_warning_and_the_filter_hides_it():
    """If the first assertion fails, the installed ansible-core or cryptography no longer warns:
    remove the entry from quiet.SILENCED."""
    plain = _run([str(BIN / "ansible-playbook"), "--version"], None)
    assert plain.returncode == 0 and "DSA is deprecated" in plain.stderr, plain.stderr
    silenced = _run([str(BIN / "ansible-playbook"), "--version"], quiet.pythonwarnings(None))
    assert silenced.returncode == 0 and silenced.stderr == "", silenced.stderr


def test_the_same_warning_from_another_module_still_shows():
    code = "import warnings; warnings.warn('DSA is deprecated: ours', UserWarning)"
    done = _run([sys.executable, "-c", code], quiet.pythonwarnings(None))
    assert "UserWarning: DSA is deprecated: ours" in done.stderr


def test_clusterforge_run_gives_ansible_playbook_the_filters(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONWARNINGS", "default")
    assert runner._ansible_environment(tmp_path)["PYTHONWARNINGS"] == f"{OURS},default"
