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


# The RHEL family's tasks are reached through include_tasks/include_role, which a syntax check of
# site.yml does not open; a play that imports them statically makes ansible-playbook parse them.
RHEL_PATH_PLAY = """\
- name: Parse the RHEL family's install path
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The dnf repository role
      ansible.builtin.import_role:
        name: dnf_vendor_repository
    - name: The driver's RHEL tasks
      ansible.builtin.import_tasks: {project}/roles/nvidia_driver/tasks/install-RedHat.yml
    - name: NCCL's RHEL tasks
      ansible.builtin.import_tasks: {project}/roles/nccl/tasks/install-RedHat.yml
"""


def test_syntax_check_of_the_rhel_install_path(project, tmp_path):
    play = tmp_path / "rhel-path.yml"
    play.write_text(RHEL_PATH_PLAY.format(project=project))
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), str(play), "--syntax-check"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
