"""What the role unit tests share: the facts of each supported release, Ansible's own templating,
and the vars/<OS>.yml a role's first_found picks."""

from __future__ import annotations

from pathlib import Path

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from tests.paths import load_plugin

_trusted = load_plugin("plugins/inventory/topology.py")._trusted

# The facts the roles read, as Ansible gathers them on each supported release.
OS_FACTS = {
    "debian13": {
        "distribution": "Debian",
        "distribution_major_version": "13",
        "distribution_version": "13.2",
        "distribution_release": "trixie",
        "os_family": "Debian",
        "kernel": "6.12.57+deb13-amd64",
    },
    "debian12": {
        "distribution": "Debian",
        "distribution_major_version": "12",
        "distribution_version": "12.12",
        "distribution_release": "bookworm",
        "os_family": "Debian",
        "kernel": "6.1.0-40-amd64",
    },
    "ubuntu2204": {
        "distribution": "Ubuntu",
        "distribution_major_version": "22",
        "distribution_version": "22.04",
        "distribution_release": "jammy",
        "os_family": "Debian",
        "kernel": "5.15.0-160-generic",
    },
    "ubuntu2404": {
        "distribution": "Ubuntu",
        "distribution_major_version": "24",
        "distribution_version": "24.04",
        "distribution_release": "noble",
        "os_family": "Debian",
        "kernel": "6.8.0-87-generic",
    },
    "rhel9": {
        "distribution": "RedHat",
        "distribution_major_version": "9",
        "distribution_version": "9.6",
        "distribution_release": "Plow",
        "os_family": "RedHat",
        "kernel": "5.14.0-570.el9.x86_64",
    },
    "rocky9": {
        "distribution": "Rocky",
        "distribution_major_version": "9",
        "distribution_version": "9.6",
        "distribution_release": "Blue Onyx",
        "os_family": "RedHat",
        "kernel": "5.14.0-570.el9.x86_64",
    },
}


def render(expression, **variables):
    """expression templated by Ansible's own Templar over variables (trusted, as a role's are)."""
    return Templar(loader=DataLoader(), variables=_trusted(variables)).template(_trusted(expression))


def vars_file(role: Path, facts: dict) -> Path:
    """The vars/<OS>.yml the role's first_found picks for these facts, in the roles' order."""
    for name in (
        f"{facts['distribution']}-{facts['distribution_major_version']}.yml",
        f"{facts['distribution']}.yml",
        f"{facts['os_family']}.yml",
    ):
        if (role / "vars" / name).is_file():
            return role / "vars" / name
    raise AssertionError(f"{role.name}: no vars file for {facts}")
