"""clusterforge_in_container: the one place that says whether a node is a container."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.paths import PROJECT, load_plugin
from tests.paths import filters as filters_of


@pytest.fixture(scope="module")
def in_container():
    return filters_of("plugins/filter/node.py")["clusterforge_in_container"]


def _facts(vtype, role, guest=None, host=None):
    """Shaped like ansible-core's Linux virtual facts; None leaves the tech lists out (older facts)."""
    facts = {"virtualization_type": vtype, "virtualization_role": role}
    if guest is not None:
        facts.update(virtualization_tech_guest=guest, virtualization_tech_host=host or [])
    return facts


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # systemd in Docker (the lab, Molecule): container=docker in PID 1's environment, /.dockerenv
        (_facts("docker", "guest", ["container", "docker"]), True),
        # Podman: container=podman
        (_facts("podman", "guest", ["container", "podman"]), True),
        # systemd-nspawn: only /run/systemd/container says so
        (_facts("systemd-nspawn", "guest", ["container", "systemd-nspawn"]), True),
        # A container inside a KVM guest: the type is the first signal found, the container wins
        (_facts("docker", "guest", ["container", "docker", "kvm"]), True),
        # Facts without the tech lists (older ansible-core, a hand-made fact cache)
        (_facts("lxc", "guest"), True),
        # A KVM virtual machine is not a container
        (_facts("kvm", "guest", ["kvm"]), False),
        # Bare metal that runs Docker itself: a container host, not a container
        (_facts("NA", "NA", [], ["docker"]), False),
        # An LXC host
        (_facts("lxc", "host"), False),
    ],
    ids=["docker", "podman", "nspawn", "docker-in-kvm", "lxc-old-facts", "kvm", "bare-metal", "lxc-host"],
)
def test_container_or_not(in_container, facts, expected):
    assert in_container(facts) is expected


def test_missing_virtual_facts_are_an_error_not_a_guess(in_container):
    with pytest.raises(AnsibleFilterError, match="gather the 'virtual' subset"):
        in_container({"distribution": "Debian"})


def test_not_facts_is_an_error(in_container):
    with pytest.raises(AnsibleFilterError, match="expects ansible_facts, got str"):
        in_container("docker")


def test_roles_leave_container_detection_to_the_filter():
    """Roles read clusterforge_in_container; none inspects virtualization facts itself."""
    signals = ("virtualization_role", "virtualization_tech", "/.dockerenv", "/run/systemd/container")
    offenders = [
        str(path.relative_to(PROJECT))
        for path in (PROJECT / "roles").rglob("*.yml")
        if any(signal in path.read_text() for signal in signals)
    ]
    assert offenders == []


def test_documentation_names_the_filter():
    module = load_plugin("plugins/filter/node.py")
    assert yaml.safe_load(module.DOCUMENTATION)["name"] == "clusterforge_in_container"
