"""os_tuning's defaults and guards, evaluated by Ansible's own templating."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render as _render

# Role files are templates to Ansible; plain YAML strings are not until marked so, as the
# topology inventory plugin marks what it reads.

ROLE = PROJECT / "roles" / "os_tuning"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())


@pytest.mark.parametrize(
    ("inventory", "expected"),
    [
        ({}, 0),  # no topology inventory: not known to be a GPU node
        ({"clusterforge_expected_gpus": 0}, 0),  # head, login, storage node types
        ({"clusterforge_expected_gpus": 8}, 8192),
        ({"clusterforge_expected_gpus": "4"}, 8192),  # -e or an INI inventory gives a string
    ],
    ids=["no-inventory", "no-gpus", "gpu-node", "gpus-as-string"],
)
def test_hugepages_only_on_gpu_nodes_by_default(inventory, expected):
    assert int(_render(DEFAULTS["os_tuning_hugepages"], **inventory)) == expected


PATH_GUARD = "Refuse files outside the drop-in directories the role owns"
FILE_VARIABLES = ["os_tuning_sysctl_file", "os_tuning_memlock_limits_file", "os_tuning_memlock_systemd_file"]


def _path_guard():
    return next(task for task in MAIN_TASKS if task["name"] == PATH_GUARD)


def _bad_paths(**overrides):
    guard = _path_guard()
    variables = {name: DEFAULTS[name] for name in FILE_VARIABLES} | overrides
    return "; ".join(_render(guard["vars"]["__os_tuning_bad_paths"], **variables))


def test_the_default_files_pass_the_path_guard():
    assert _bad_paths() == ""


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("os_tuning_memlock_limits_file", "/etc/security/limits.conf"),
        ("os_tuning_memlock_limits_file", "/etc/security/limits.d/90-x.cfg"),  # pam_limits reads only *.conf
        ("os_tuning_memlock_limits_file", "/etc/security/limits.d/../limits.conf"),
        ("os_tuning_memlock_systemd_file", "/etc/systemd/system.conf"),
        ("os_tuning_memlock_systemd_file", "/etc/systemd/user.conf.d/90-x.conf"),
        ("os_tuning_memlock_systemd_file", "/etc/systemd/system.conf.d/sub/90-x.conf"),
        ("os_tuning_sysctl_file", "/etc/sysctl.conf"),
        ("os_tuning_sysctl_file", ""),
    ],
)
def test_files_outside_the_drop_in_directories_are_refused_by_name(variable, value):
    message = _bad_paths(**{variable: value})
    assert message.startswith(f'{variable} is "{value}", expected a .conf')
    assert ";" not in message  # only the bad variable is named


def test_every_bad_path_is_named_in_one_message():
    message = _bad_paths(os_tuning_sysctl_file="/etc/sysctl.conf", os_tuning_memlock_limits_file="/etc/x.conf")
    assert message.count(" is ") == 2
    assert "os_tuning_sysctl_file" in message
    assert "os_tuning_memlock_limits_file" in message


@pytest.mark.parametrize("name", FILE_VARIABLES)
def test_every_file_variable_is_guarded(name):
    assert name in _path_guard()["vars"]["__os_tuning_bad_paths"]


# Molecule sets a KiB value (a container cannot rise to unlimited); the default is rendered here.
@pytest.mark.parametrize(
    ("memlock", "limits", "systemd"),
    [("unlimited", "unlimited", "infinity"), (4096, "4096", "4096K")],
)
def test_memlock_files_for_unlimited_and_a_number(memlock, limits, systemd):
    variables = {"ansible_managed": "Ansible managed", "os_tuning_memlock": memlock}
    limits_file = _render((ROLE / "templates" / "memlock-limits.conf.j2").read_text(), **variables)
    systemd_file = _render((ROLE / "templates" / "memlock-systemd.conf.j2").read_text(), **variables)
    entries = [line.split() for line in limits_file.splitlines() if line and not line.startswith("#")]
    assert entries == [[who, kind, "memlock", limits] for who in ("*", "root") for kind in ("soft", "hard")]
    assert systemd_file.splitlines()[-2:] == ["[Manager]", f"DefaultLimitMEMLOCK={systemd}"]


def test_sysctl_file_holds_every_key_once_under_the_managed_header():
    settings = {"vm.nr_hugepages": 8192, "net.ipv4.tcp_rmem": "4096 87380 2147483647"}
    text = _render(
        (ROLE / "templates" / "sysctl.conf.j2").read_text(),
        ansible_managed="Ansible managed",
        __os_tuning_sysctl=settings,
    )
    lines = text.splitlines()
    assert lines[:3] == ["#", "# Ansible managed", "#"]
    assert [line for line in lines if not line.startswith("#")] == [
        "vm.nr_hugepages = 8192",
        "net.ipv4.tcp_rmem = 4096 87380 2147483647",
    ]
