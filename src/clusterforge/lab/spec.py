"""What a lab is: its sizes, its topology, its images and how a node container runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterforge.errors import UsageError
from clusterforge.topology.source import load_yaml

# How the lab image is built (clusterforge.lab.image): here, so that the CLI's parser names them
# without importing the Docker SDK, which every command would then pay for.
BUILDERS = ("auto", "dockerfile", "debootstrap")
DEBIAN_RELEASES = ("trixie", "bookworm")
DEFAULT_RELEASE = "trixie"
IMAGE_REPOSITORY = "clusterforge/lab-node"

# Compute nodes for each named size; every size has one head node. The lab's topology
# file (inventories/lab/lab.topology.yml) describes the rest.
SIZES: dict[str, int] = {"tiny": 1, "small": 2, "medium": 4, "large": 8}
DEFAULT_SIZE = "small"
# How Ansible reaches the nodes: SSH as a sudoer, as on a real cluster (pipelining, ControlPersist
# and sudo are exercised), or `docker exec` as root (community.docker.docker).
CONNECTIONS = ("ssh", "docker")
DEFAULT_CONNECTION = "ssh"
DOCKER_CONNECTION_VARS = {"ansible_connection": "community.docker.docker"}
# A lab is for trying roles, not for scale: more containers than this would starve the host.
MAX_LAB_HOSTS = 16

# How a node container runs systemd without --privileged (measured on a machine where --privileged is refused):
# the same settings are in .config/molecule/config.yml, and a unit test keeps the two equal.
NODE_CAPABILITIES = ("SYS_ADMIN", "NET_ADMIN")
NODE_SECURITY_OPTS = ("seccomp=unconfined", "apparmor=unconfined")
NODE_TMPFS = ("/run", "/run/lock")
NODE_VOLUMES = ("/sys/fs/cgroup:/sys/fs/cgroup:rw",)
NODE_CGROUPNS = "host"
NODE_COMMAND = "/lib/systemd/systemd"
# The lab's shared file system: one Docker volume per lab, mounted read-write at the same path on
# every node, standing in for the cluster's Lustre or NFS (one POSIX file system every node sees,
# locks included). Jobs whose ranks move between nodes keep their checkpoints there, and torchrun
# on a torch without libuv keeps its rendezvous there (docs/training.md).
SHARED_MOUNT = "/shared"

# apt on a node goes through a package cache (apt-cacher-ng) on the machine that hosts the
# containers when one answers there, and directly to Debian's archive when none does: an apt
# drop-in names apt-proxy-detect as apt's Proxy-Auto-Detect, and both are mounted read-only from
# APT_DIR (package data). .ci/lab-host-setup.sh starts that cache on CI hosts. In Molecule the same
# files come from the checkout (MOLECULE_PROJECT_DIRECTORY); a unit test keeps the two equal.
APT_DIR = Path(__file__).parent / "apt"
APT_DETECT = "apt-proxy-detect"
APT_MOUNTS = (
    (APT_DETECT, "/usr/local/lib/clusterforge/apt-proxy-detect"),
    ("01clusterforge-lab-apt-proxy", "/etc/apt/apt.conf.d/01clusterforge-lab-apt-proxy"),
)
APT_DIR_IN_PROJECT = "src/clusterforge/lab/apt"


@dataclass(frozen=True)
class LabHost:
    name: str
    group: str
    container: str


def image_tag(release: str) -> str:
    check_release(release)
    return f"{IMAGE_REPOSITORY}:{release}"


def check_release(release: str) -> None:
    if release not in DEBIAN_RELEASES:
        raise UsageError(f"unknown lab OS {release!r}: expected one of {', '.join(DEBIAN_RELEASES)}")


def check_connection(connection: str) -> None:
    if connection not in CONNECTIONS:
        raise UsageError(f"unknown lab connection {connection!r}: expected one of {', '.join(CONNECTIONS)}")


def check_size(size: str) -> None:
    if size not in SIZES:
        raise UsageError(f"unknown lab size {size!r}: expected one of {', '.join(SIZES)}")


def check_lab_name(name: str) -> None:
    if not name or not all(c.isalnum() or c == "-" for c in name) or not name[0].isalpha():
        raise UsageError(f"invalid lab name {name!r}: expected letters, digits and '-', starting with a letter")


def sized_topology(source: Path, size: str | None, lab_name: str, connection_vars: dict | None = None) -> dict:
    """The lab's topology document: `source` with the size's compute count (when a size is
    given) and Ansible reaching each host with `connection_vars` (default: through its container).
    ansible_host is the container's name; an SSH lab sets each node's address in host_vars."""
    check_lab_name(lab_name)
    document, _ = load_yaml(source)  # the topology loader's limits: size, depth, encoding, repeated keys
    if not isinstance(document, dict):
        raise UsageError(f"{source}: expected a topology mapping")
    if size is not None:
        check_size(size)
        document.setdefault("roles", {}).setdefault("compute", {})["count"] = SIZES[size]
    ansible = document.setdefault("ansible", {})
    ansible.setdefault("vars", {}).update(
        connection_vars or DOCKER_CONNECTION_VARS, ansible_python_interpreter="/usr/bin/python3"
    )
    ansible["host"] = container_name(lab_name, "{name}")
    return document


def lab_hosts(plan, lab_name: str) -> list[LabHost]:
    if len(plan.hosts) > MAX_LAB_HOSTS:
        raise UsageError(
            f"{plan.path}: {len(plan.hosts)} hosts is too many for a lab of containers (at most {MAX_LAB_HOSTS})"
        )
    return [LabHost(h.name, h.role, container_name(lab_name, h.name)) for h in plan.hosts]


def container_name(lab_name: str, host: str) -> str:
    return f"clusterforge-{lab_name}-{host}"


def network_name(lab_name: str) -> str:
    return f"clusterforge-{lab_name}"


def shared_volume_name(lab_name: str) -> str:
    return f"clusterforge-{lab_name}-shared"


def docker_run_options(lab_name: str | None = None) -> dict:
    """Keyword arguments for docker-py's containers.run() that boot systemd unprivileged; with
    `lab_name`, the lab's shared volume at SHARED_MOUNT too (Molecule's instances have none)."""
    volumes = {}
    if lab_name is not None:
        volumes[shared_volume_name(lab_name)] = {"bind": SHARED_MOUNT, "mode": "rw"}
    for spec in NODE_VOLUMES:
        source, target, mode = spec.split(":")
        volumes[source] = {"bind": target, "mode": mode}
    for name, target in APT_MOUNTS:
        volumes[str(APT_DIR / name)] = {"bind": target, "mode": "ro"}
    return {
        "cap_add": list(NODE_CAPABILITIES),
        "security_opt": list(NODE_SECURITY_OPTS),
        "tmpfs": dict.fromkeys(NODE_TMPFS, ""),
        "volumes": volumes,
        "cgroupns": NODE_CGROUPNS,
        "command": NODE_COMMAND,
        "privileged": False,
    }
