"""The lab's SSH access: its key pair, the node's user and host key, and the inventory that uses them."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.errors import EnvironmentProblem
from clusterforge.lab import access, cluster

ANSIBLE_INVENTORY = Path(sys.executable).parent / "ansible-inventory"


class Done:
    def __init__(self, exit_code: int, output: bytes):
        self.exit_code, self.output = exit_code, output


class FakeNode:
    """A running lab container as docker-py shows it: a name, an address, exec_run."""

    def __init__(self, name: str, address: str, network: str, answers: dict[str, Done] | None = None):
        self.name = name
        self.attrs = {"NetworkSettings": {"Networks": {network: {"IPAddress": address}}}}
        self.answers = answers or {}
        self.commands: list[list[str]] = []

    def reload(self):
        pass

    def exec_run(self, command):
        self.commands.append(command)
        return self.answers.get(command[0], Done(0, b""))


class FakeClient:
    def __init__(self, nodes):
        self.containers = self
        self.nodes = {node.name: node for node in nodes}

    def get(self, name):
        return self.nodes[name]


def test_key_pair_is_made_once_private_and_usable_by_ssh(tmp_path):
    lab = tmp_path / "labs" / "mylab"
    public = access.ensure_key_pair(lab)
    private = access.key_path(lab)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert public.startswith("ssh-ed25519 ") and public.endswith(" clusterforge-lab-mylab")
    assert (lab / "id_ed25519.pub").read_text() == public + "\n"
    # OpenSSH itself reads the private key and derives the same public key.
    derived = subprocess.run(["ssh-keygen", "-y", "-f", str(private)], capture_output=True, text=True, check=True)
    assert derived.stdout.split()[:2] == public.split()[:2]


def test_key_pair_is_reused_on_re_up_and_its_mode_restored(tmp_path):
    first = access.ensure_key_pair(tmp_path)
    before = access.key_path(tmp_path).read_bytes()
    access.key_path(tmp_path).chmod(0o644)
    assert access.ensure_key_pair(tmp_path) == first
    assert access.key_path(tmp_path).read_bytes() == before
    assert stat.S_IMODE(access.key_path(tmp_path).stat().st_mode) == 0o600


def test_authorize_runs_as_root_in_the_node_with_the_user_and_key(tmp_path):
    node = FakeNode("clusterforge-lab-node01", "172.18.0.3", "clusterforge-lab")
    access.authorize(node, "ssh-ed25519 AAAAC3 clusterforge-lab-lab")
    command = node.commands[0]
    assert command[:2] == ["sh", "-c"]
    assert command[-2:] == ["clusterforge", "ssh-ed25519 AAAAC3 clusterforge-lab-lab"]
    assert "NOPASSWD: ALL" in command[2] and "visudo -cqf" in command[2]


def test_authorize_failure_names_the_node_and_why():
    node = FakeNode("clusterforge-lab-node01", "172.18.0.3", "n", {"sh": Done(1, b"useradd: cannot lock /etc/passwd")})
    with pytest.raises(EnvironmentProblem, match=r"lab-node01: setting up the SSH user clusterforge.*lock"):
        access.authorize(node, "ssh-ed25519 AAAA")


def test_host_key_missing_is_an_error_naming_the_unit(monkeypatch):
    monkeypatch.setattr(access, "HOST_KEY_TIMEOUT_S", 0)
    node = FakeNode("clusterforge-lab-head01", "172.18.0.2", "n", {"cat": Done(1, b"No such file")})
    with pytest.raises(EnvironmentProblem, match=r"head01: no SSH host key.*ssh-host-keys\.service"):
        access.host_key(node)


def test_known_hosts_is_what_ssh_looks_up(tmp_path):
    access.write_known_hosts(tmp_path, {"172.18.0.3": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOvdcB7Yw0Lbqg0Wz8cS6P9F"})
    found = subprocess.run(
        ["ssh-keygen", "-F", "172.18.0.3", "-f", str(access.known_hosts_path(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0 and "ssh-ed25519" in found.stdout


def _up_over_ssh(project, lab_name: str) -> list[FakeNode]:
    """What `lab up` does after the containers boot, against fake nodes."""
    hosts = cluster.prepare(project / "inventories/lab/lab.topology.yml", "tiny", lab_name)
    network = f"clusterforge-{lab_name}"
    nodes = [
        FakeNode(host.container, f"172.18.0.{index}", network, {"cat": Done(0, f"ssh-ed25519 KEY{index} x\n".encode())})
        for index, host in enumerate(hosts, start=2)
    ]
    cluster._open_ssh(FakeClient(nodes), hosts, lab_name, log=lambda _: None)
    return nodes


def test_ssh_inventory_as_ansible_reads_it(project, state_dir):
    """Ansible reads the node addresses from host_vars next to the lab's topology, with the
    lab-wide connection settings from the topology itself."""
    _up_over_ssh(project, "sshunit")
    lab = state_dir / "labs" / "sshunit"
    done = subprocess.run(
        [str(ANSIBLE_INVENTORY), "-i", str(lab / "lab.topology.yml"), "--list"],
        capture_output=True,
        text=True,
        check=True,
        cwd=project,
    )
    hostvars = json.loads(done.stdout)["_meta"]["hostvars"]
    assert {name: hostvars[name]["ansible_host"] for name in ("head01", "node01")} == {
        "head01": "172.18.0.2",
        "node01": "172.18.0.3",
    }
    node = hostvars["node01"]
    assert node["ansible_connection"] == "ssh"
    assert node["ansible_user"] == "clusterforge"
    assert node["ansible_ssh_private_key_file"] == str(lab / "id_ed25519")
    assert node["clusterforge_monitoring_address"] == "clusterforge-sshunit-node01"
    assert (lab / "known_hosts").read_text() == "172.18.0.2 ssh-ed25519 KEY2\n172.18.0.3 ssh-ed25519 KEY3\n"


def test_re_up_rewrites_addresses_and_docker_drops_them(project, state_dir):
    _up_over_ssh(project, "sshunit")
    lab = state_dir / "labs" / "sshunit"
    (lab / "host_vars" / "node99.yml").write_text("ansible_host: 10.0.0.99\n")  # a node since removed
    key = (lab / "id_ed25519").read_bytes()
    _up_over_ssh(project, "sshunit")
    assert sorted(path.name for path in (lab / "host_vars").iterdir()) == ["head01.yml", "node01.yml"]
    assert (lab / "id_ed25519").read_bytes() == key
    cluster._forget_ssh_nodes("sshunit")  # what `lab up --connection docker` does
    assert not (lab / "host_vars").exists() and not (lab / "known_hosts").exists()
    assert (lab / "id_ed25519").exists()
