"""The lab's default connection is SSH, as on a real cluster: Ansible logs in as the lab's admin
user with the lab's key, becomes root with sudo, checks host keys against the lab's known_hosts,
and keeps one multiplexed master connection per node (ControlPersist)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from clusterforge import errors
from tests.integration.conftest import HANG_GUARD_S, TEST_LAB
from tests.paths import PROJECT

pytestmark = pytest.mark.lab
ANSIBLE = Path(sys.executable).parent / "ansible"
HOSTS = ("head01", "node01", "node02")


@pytest.fixture
def control():
    """A short folder for the master connections' sockets: a Unix socket path has at most 108
    bytes, too few under pytest's tmp_path."""
    path = Path(tempfile.mkdtemp(prefix="cf-cp-"))
    yield path
    shutil.rmtree(path)


def _ansible(inventory: Path, control_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """An ad-hoc command with the project's ansible.cfg, its master connections in control_dir."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_dir),
        "ANSIBLE_NOCOLOR": "1",
    }
    return subprocess.run(
        [str(ANSIBLE), "all", "-i", str(inventory), *args],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=env,
        check=False,
        timeout=HANG_GUARD_S,
    )


def _answers(output: str) -> dict[str, str]:
    """host -> the command's stdout, from ansible's `host | CHANGED | rc=0 >>` blocks."""
    found, host = {}, None
    for line in output.splitlines():
        if " | CHANGED | rc=0 >>" in line:
            host = line.split(" | ")[0]
        elif host is not None:
            found[host], host = line.strip(), None
    return found


def test_ansible_logs_in_as_the_admin_user_and_becomes_root_with_sudo(lab, docker_client, control):
    plain = _ansible(lab["inventory"], control, "-m", "command", "-a", "id -un")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert _answers(plain.stdout) == dict.fromkeys(HOSTS, "clusterforge")
    become = _ansible(lab["inventory"], control, "--become", "-vvv", "-m", "command", "-a", "id -un")
    assert become.returncode == 0, become.stdout[-3000:] + become.stderr
    assert _answers(become.stdout) == dict.fromkeys(HOSTS, "root")
    # Over ssh with the lab's key to the node's address, through sudo, pipelined (no module file put).
    assert "SSH: EXEC ssh" in become.stdout and "ControlPersist=60s" in become.stdout
    assert "sudo -H -S -n" in become.stdout
    assert "PUT " not in become.stdout
    # Each node's sshd logged the admin user's key login; Docker's exec is not SSH.
    for host in HOSTS:
        node = docker_client.containers.get(f"clusterforge-{TEST_LAB}-{host}")
        journal = node.exec_run(["journalctl", "-u", "ssh", "--no-pager", "-o", "cat"]).output.decode()
        assert "Accepted publickey for clusterforge" in journal, journal[-2000:]
        sessions = node.exec_run(["ss", "-Htn", "state", "established", "( sport = :22 )"]).output.decode()
        assert sessions.strip(), f"{host}: no established SSH connection (ControlPersist keeps one)"
    # The controller kept one master connection per node (ControlPersist), as sockets.
    sockets = [path for path in control.iterdir() if stat.S_ISSOCK(path.stat().st_mode)]
    assert len(sockets) == len(HOSTS), sorted(path.name for path in control.iterdir())


def test_a_host_key_that_does_not_match_is_refused(lab, tmp_path, control):
    """Host keys are checked against the lab's known_hosts: a node presenting another key is
    unreachable, never silently accepted."""
    known = lab["inventory"].parent / "known_hosts"
    lines = known.read_text().splitlines()
    assert len(lines) == len(HOSTS)
    forged = tmp_path / "known_hosts"
    # Every address with a key that is not its own: the next node's.
    forged.write_text(
        "".join(
            f"{a.split()[0]} {' '.join(b.split()[1:])}\n" for a, b in zip(lines, lines[1:] + lines[:1], strict=True)
        )
    )
    done = _ansible(
        lab["inventory"],
        tmp_path / "cp",
        "-e",
        f"ansible_ssh_common_args='-o UserKnownHostsFile={forged}'",
        "-m",
        "command",
        "-a",
        "true",
    )
    assert done.returncode != 0
    assert done.stdout.count("UNREACHABLE!") == len(HOSTS), done.stdout
    assert "Host key verification failed" in done.stdout or "HOST IDENTIFICATION HAS CHANGED" in done.stdout


def _forge(known: Path) -> None:
    """Every address in `known` given a key that is not its own: the next node's."""
    lines = known.read_text().splitlines()
    known.write_text(
        "".join(
            f"{a.split()[0]} {' '.join(b.split()[1:])}\n" for a, b in zip(lines, lines[1:] + lines[:1], strict=True)
        )
    )


def test_a_changed_host_key_is_refused_through_clusterforge_run_as_through_ansible_playbook(lab, tmp_path):
    """ansible-runner turns host key checking off unless told: `clusterforge run` names it (on, as
    ansible.cfg says), and a node whose key changed is unreachable through both."""
    known = lab["inventory"].parent / "known_hosts"
    real = known.read_text()
    env = {**os.environ, **lab["env"], "ANSIBLE_NOCOLOR": "1"}
    env.pop("ANSIBLE_HOST_KEY_CHECKING", None)
    playbook = PROJECT / "tests" / "integration" / "playbooks" / "reach.yml"

    def both(control: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
        # Fresh master-connection folders: a connection still open from an earlier test would
        # skip the handshake, and with it the host key check.
        fresh = {**env, "ANSIBLE_SSH_CONTROL_PATH_DIR": tempfile.mkdtemp(prefix=f"cf-{control}-")}
        plain = subprocess.run(
            [str(ANSIBLE.with_name("ansible-playbook")), "-i", str(lab["inventory"]), str(playbook)],
            capture_output=True,
            text=True,
            cwd=PROJECT,
            env={**fresh, "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")},
            check=False,
            timeout=HANG_GUARD_S,
        )
        fresh = {**env, "ANSIBLE_SSH_CONTROL_PATH_DIR": tempfile.mkdtemp(prefix=f"cf-{control}-")}
        ours = subprocess.run(
            [sys.executable, "-m", "clusterforge.cli", "run", str(playbook), "-i", str(lab["inventory"]), "--json"],
            capture_output=True,
            text=True,
            cwd=PROJECT,
            env=fresh,
            check=False,
            timeout=HANG_GUARD_S,
        )
        return plain, ours

    # With the nodes' own keys both reach every node: what fails below is the key.
    plain, ours = both("real")
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr
    assert ours.returncode == 0, ours.stdout[-3000:] + ours.stderr
    try:
        _forge(known)
        plain, ours = both("forged")
    finally:
        known.write_text(real)
    assert plain.returncode == 4 and plain.stdout.count("UNREACHABLE!") == len(HOSTS), plain.stdout[-3000:]
    assert "HOST IDENTIFICATION HAS CHANGED" in plain.stdout or "Host key verification failed" in plain.stdout
    summary = json.loads(ours.stdout)
    assert ours.returncode == errors.EXIT_HOSTS_UNREACHABLE, ours.stdout[-3000:] + ours.stderr
    assert summary["totals"]["unreachable"] == len(HOSTS)
    for host in HOSTS:
        message = summary["hosts"][host]["unreachable_message"]
        assert "HOST IDENTIFICATION HAS CHANGED" in message or "Host key verification failed" in message, message
