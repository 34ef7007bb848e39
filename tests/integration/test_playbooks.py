"""The playbooks parse as Ansible sees them, and site.yml refuses an inventory without hosts."""

from __future__ import annotations

import os
import re
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


# --- site.yml refuses to run on an inventory without hosts ------------------------------------


def _site(project: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """ansible-playbook site.yml for real, from the project (its ansible.cfg), with no inventory
    from the environment and facts cached under tmp_path."""
    env = {k: v for k, v in os.environ.items() if k != "ANSIBLE_INVENTORY"}
    env |= {"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [str(BIN / "ansible-playbook"), "site.yml", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


def _says_how_to_give_an_inventory(output: str) -> None:
    assert "The inventory has no hosts (ansible.cfg names none), so site.yml would do nothing." in output
    assert "ansible-playbook -i LAB_INVENTORY site.yml" in output
    assert "the path `clusterforge lab up` prints" in output
    assert "ansible-playbook -i cluster.topology.yml site.yml" in output


def test_site_without_an_inventory_fails_saying_how_to_give_one(project, tmp_path):
    done = _site(project, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    _says_how_to_give_an_inventory(done.stdout + done.stderr)
    # It stops there: no stage's play starts.
    assert "PLAY [Preflight checks on every node]" not in done.stdout
    assert re.search(r"^localhost +: ok=0 +changed=0 +unreachable=0 +failed=1 ", done.stdout, re.MULTILINE)


def test_site_on_an_inventory_file_without_hosts_fails_the_same_way(project, tmp_path):
    empty = tmp_path / "hosts.ini"
    empty.write_text("[compute]\n")
    done = _site(project, tmp_path, "-i", str(empty))
    assert done.returncode == 2, done.stdout + done.stderr
    _says_how_to_give_an_inventory(done.stdout + done.stderr)


def test_site_on_an_inventory_with_hosts_skips_the_check_and_adds_no_host(project, tmp_path):
    """The check's play matches no host, so the run's recap has the inventory's hosts only (no
    localhost); --tags that match no task keep the stages to their fact gathering."""
    hosts = tmp_path / "hosts.ini"
    hosts.write_text(
        f"[all]\nh1 ansible_connection=local ansible_python_interpreter={sys.executable} ansible_become=false\n"
    )
    done = _site(project, tmp_path, "-i", str(hosts), "--tags", "clusterforge-no-such-tag")
    assert done.returncode == 0, done.stdout + done.stderr
    check, preflight = done.stdout.split("PLAY [Check the inventory has hosts", 1)[1].split("PLAY [", 2)[:2]
    assert "skipping: no hosts matched" in check
    assert preflight.startswith("Preflight checks on every node]")
    recap = done.stdout.split("PLAY RECAP", 1)[1]
    assert re.findall(r"^(\S+) +: ok=", recap, re.MULTILINE) == ["h1"]
