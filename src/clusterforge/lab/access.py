"""How Ansible reaches lab nodes over SSH, as on a real cluster: a key pair of the lab, an admin
user with passwordless sudo on every node, and a known_hosts file of the nodes' own host keys."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from clusterforge.errors import EnvironmentProblem

# The non-root user Ansible logs in as; plays become root with sudo.
ADMIN_USER = "clusterforge"
KEY_NAME = "id_ed25519"
KNOWN_HOSTS = "known_hosts"
HOST_KEY = "/etc/ssh/ssh_host_ed25519_key.pub"
HOST_KEY_TIMEOUT_S = 30

# Run as root in the node (docker exec): the admin user, its key and its sudoers entry. Idempotent.
_AUTHORIZE = r"""set -eu
user="$1"; key="$2"
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
install -d -m 0700 -o "$user" -g "$user" "$home/.ssh"
printf '%s\n' "$key" > "$home/.ssh/authorized_keys"
chown "$user:$user" "$home/.ssh/authorized_keys"
chmod 0600 "$home/.ssh/authorized_keys"
printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$user" > /etc/sudoers.d/90-clusterforge-lab
chmod 0440 /etc/sudoers.d/90-clusterforge-lab
visudo -cqf /etc/sudoers.d/90-clusterforge-lab
"""


def key_path(lab_dir: Path) -> Path:
    return lab_dir / KEY_NAME


def known_hosts_path(lab_dir: Path) -> Path:
    return lab_dir / KNOWN_HOSTS


def ensure_key_pair(lab_dir: Path) -> str:
    """The lab's ed25519 key pair (private key 0600, OpenSSH format, no passphrase: a lab key),
    made once and reused on every `lab up`; returns the public key line."""
    private = key_path(lab_dir)
    public = private.with_name(KEY_NAME + ".pub")
    if private.exists():
        os.chmod(private, 0o600)  # ssh refuses a private key others can read
        key = serialization.load_ssh_private_key(private.read_bytes(), password=None)
    else:
        lab_dir.mkdir(parents=True, exist_ok=True)
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
        # Created 0600 from the start: never readable by others, not even for a moment.
        descriptor = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
    line = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    public_line = f"{line.decode()} clusterforge-lab-{lab_dir.name}"
    public.write_text(public_line + "\n")
    return public_line


def connection_vars(lab_dir: Path) -> dict[str, str]:
    """The inventory variables of the SSH connection (ansible_host is per node: node_vars)."""
    return {
        "ansible_connection": "ssh",
        "ansible_user": ADMIN_USER,
        "ansible_ssh_private_key_file": str(key_path(lab_dir)),
        # The plays say `become: true`; how is sudo, as on a real cluster. ansible_become itself is
        # not set: as a variable it would override the tasks that say `become: false`.
        "ansible_become_method": "sudo",
        # The lab's own known_hosts, filled by `lab up` from the nodes' keys: checking stays on
        # (ansible.cfg), and the user's ~/.ssh/known_hosts never collects the lab's addresses.
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={shlex.quote(str(known_hosts_path(lab_dir)))}",
    }


def authorize(container, public_key: str) -> None:
    """Create the admin user in the node with the lab's key and passwordless sudo."""
    done = container.exec_run(["sh", "-c", _AUTHORIZE, "authorize", ADMIN_USER, public_key])
    if done.exit_code != 0:
        output = done.output.decode(errors="replace").strip()
        raise EnvironmentProblem(f"{container.name}: setting up the SSH user {ADMIN_USER} failed: {output}")


def host_key(container) -> str:
    """The node's ed25519 host key ("ssh-ed25519 AAAA..."), read through Docker rather than over
    the network, so the lab's known_hosts trusts no answer on first use."""
    deadline = time.monotonic() + HOST_KEY_TIMEOUT_S
    while True:
        done = container.exec_run(["cat", HOST_KEY])
        fields = done.output.decode(errors="replace").split()
        if done.exit_code == 0 and len(fields) >= 2:
            return f"{fields[0]} {fields[1]}"
        if time.monotonic() > deadline:
            raise EnvironmentProblem(
                f"{container.name}: no SSH host key at {HOST_KEY} after {HOST_KEY_TIMEOUT_S}s "
                "(clusterforge-lab-ssh-host-keys.service makes it at boot)"
            )
        time.sleep(1)


def write_known_hosts(lab_dir: Path, keys: dict[str, str]) -> Path:
    """known_hosts of the lab: address -> host key, one line each, replacing the last one."""
    path = known_hosts_path(lab_dir)
    path.write_text("".join(f"{address} {key}\n" for address, key in sorted(keys.items())))
    return path
