"""The playbooks parse as Ansible sees them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


# rolling_update.yml is not imported by site.yml: its syntax is checked on its own.
@pytest.mark.parametrize("playbook", ["site.yml", "playbooks/rolling_update.yml"])
def test_syntax_check_without_an_inventory(project, playbook):
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), playbook, "--syntax-check"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"playbook: {playbook}" in done.stdout


def test_a_broken_inventory_fails_instead_of_running_on_no_hosts(project, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("all:\n  hosts: [unclosed\n")
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(broken), "site.yml", "--syntax-check"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "failed to parse inventory source" in done.stderr
