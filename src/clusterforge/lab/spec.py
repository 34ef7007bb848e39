"""What a lab is: its sizes, hosts, images and how a node container is run."""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.errors import UsageError

DEBIAN_RELEASES = ("trixie", "bookworm")
DEFAULT_RELEASE = "trixie"
IMAGE_REPOSITORY = "clusterforge/lab-node"

# Hosts per group for each named size. Host names end in their index so that
# hostlist ranges (node[01-04]) work as they do on real clusters.
SIZES: dict[str, dict[str, int]] = {
    "tiny": {"head": 1, "compute": 1},
    "small": {"head": 1, "compute": 2},
    "medium": {"head": 1, "compute": 4},
    "large": {"head": 1, "compute": 8},
}
DEFAULT_SIZE = "small"
_HOST_PREFIX = {"head": "head", "compute": "node"}

# How a node container runs systemd without --privileged (see shared DESIGN.md):
# the same settings are in .config/molecule/config.yml, and a unit test keeps the two equal.
NODE_CAPABILITIES = ("SYS_ADMIN", "NET_ADMIN")
NODE_SECURITY_OPTS = ("seccomp=unconfined", "apparmor=unconfined")
NODE_TMPFS = ("/run", "/run/lock")
NODE_VOLUMES = ("/sys/fs/cgroup:/sys/fs/cgroup:rw",)
NODE_CGROUPNS = "host"
NODE_COMMAND = "/lib/systemd/systemd"


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


def check_lab_name(name: str) -> None:
    if not name or not all(c.isalnum() or c == "-" for c in name) or not name[0].isalpha():
        raise UsageError(f"invalid lab name {name!r}: expected letters, digits and '-', starting with a letter")


def hosts_for(size: str, lab_name: str) -> list[LabHost]:
    """The hosts of a lab of the given size, in inventory order."""
    if size not in SIZES:
        raise UsageError(f"unknown lab size {size!r}: expected one of {', '.join(SIZES)}")
    check_lab_name(lab_name)
    hosts = []
    for group, count in SIZES[size].items():
        for index in range(1, count + 1):
            name = f"{_HOST_PREFIX[group]}{index:02d}"
            hosts.append(LabHost(name=name, group=group, container=container_name(lab_name, name)))
    return hosts


def container_name(lab_name: str, host: str) -> str:
    return f"clusterforge-{lab_name}-{host}"


def network_name(lab_name: str) -> str:
    return f"clusterforge-{lab_name}"


def docker_run_options() -> dict:
    """Keyword arguments for docker-py's containers.run() that boot systemd unprivileged."""
    volumes = {}
    for spec in NODE_VOLUMES:
        source, target, mode = spec.split(":")
        volumes[source] = {"bind": target, "mode": mode}
    return {
        "cap_add": list(NODE_CAPABILITIES),
        "security_opt": list(NODE_SECURITY_OPTS),
        "tmpfs": dict.fromkeys(NODE_TMPFS, ""),
        "volumes": volumes,
        "cgroupns": NODE_CGROUPNS,
        "command": NODE_COMMAND,
        "privileged": False,
    }
