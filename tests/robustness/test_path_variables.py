"""Path variables that a role chmods, chowns, writes or runs as root refuse system directories
(and directories above them) and system files, naming the variable, its value and what is
allowed: each role's guard task rendered by Ansible's own templating over the role's defaults."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT, filters
from tests.unit.roles.harness import render

unsafe_paths = filters("plugins/filter/paths.py")["clusterforge_unsafe_paths"]

# (role, the guard task, the variable holding its messages)
GUARDS = {
    "kubernetes": ("Refuse system paths", "__kubernetes_bad_paths"),
    "k8s_nvidia_device_plugin": ("Refuse system paths", "__k8s_nvidia_device_plugin_bad_paths"),
    "node_exporter": ("Refuse system paths", "__node_exporter_bad_paths"),
    "dcgm_exporter": ("Refuse system paths", "__dcgm_exporter_bad_paths"),
    "slurm": ("Refuse system paths", "__slurm_bad_paths"),
    "docker": ("Refuse system paths", "__docker_bad_paths"),
    "os_tuning": ("Refuse files outside the drop-in directories the role owns", "__os_tuning_bad_paths"),
}

# A value each variable accepted before, which reaches a system file or directory.
HOSTILE = [
    ("kubernetes", "kubernetes_sysctl_file", "/etc/sysctl.conf"),
    ("kubernetes", "kubernetes_sysctl_file", "/etc/passwd"),
    ("kubernetes", "kubernetes_config_dir", "/etc"),
    ("kubernetes", "kubernetes_config_dir", "/"),
    ("k8s_nvidia_device_plugin", "k8s_nvidia_device_plugin_manifest_dir", "/etc/kubernetes"),
    ("k8s_nvidia_device_plugin", "k8s_nvidia_device_plugin_manifest_dir", "/usr"),
    ("node_exporter", "node_exporter_textfile_dir", "/var/lib"),
    ("node_exporter", "node_exporter_textfile_dir", "/tmp"),
    ("dcgm_exporter", "dcgm_exporter_config_dir", "/etc"),
    ("dcgm_exporter", "dcgm_exporter_config_dir", "/etc/dcgm/../.."),
    ("slurm", "slurm_health_check_program", "/usr/bin/python3"),
    ("slurm", "slurm_health_check_program", "/etc/passwd"),
    ("slurm", "slurm_health_checks_dir", "/usr/local/sbin"),
    ("slurm", "slurm_health_checks_dir", "/etc"),
    ("docker", "docker_data_root", "/"),
    ("docker", "docker_data_root", "/var"),
    ("os_tuning", "os_tuning_sysctl_file", "/etc/sysctl.conf"),
]


def _defaults(role: str) -> dict:
    return yaml.safe_load((PROJECT / "roles" / role / "defaults" / "main.yml").read_text())


def _messages(role: str, **overrides) -> list[str]:
    task_name, variable = GUARDS[role]
    tasks = yaml.safe_load((PROJECT / "roles" / role / "tasks" / "main.yml").read_text())
    guard = next(task for task in tasks if task["name"] == task_name)
    values = {name: value for name, value in _defaults(role).items() if not str(value).startswith("{{")}
    return render(guard["vars"][variable], **(values | overrides))


def _local_nvme_message(value) -> str:
    tasks = yaml.safe_load((PROJECT / "roles" / "local_nvme" / "tasks" / "main.yml").read_text())
    guard = next(task for task in tasks if task["name"] == "Validate the role's inputs")
    values = {name: value for name, value in _defaults("local_nvme").items() if not str(value).startswith("{{")}
    values["local_nvme_mount_path"] = value
    rules = render(guard["vars"]["__local_nvme_rules"], **values)
    return render(guard["vars"]["__local_nvme_bad_inputs"], __local_nvme_rules=rules, **values) or ""


@pytest.mark.parametrize("role", sorted(GUARDS))
def test_the_defaults_pass(role):
    assert _messages(role) == []


@pytest.mark.parametrize(("role", "variable", "value"), HOSTILE, ids=[f"{v}={p}" for _, v, p in HOSTILE])
def test_a_system_path_is_refused_naming_the_variable_its_value_and_what_is_allowed(role, variable, value):
    messages = _messages(role, **{variable: value})
    assert len(messages) == 1, messages
    assert messages[0].startswith(f'{variable} is "{value}", expected ')
    assert len(messages[0]) > len(f'{variable} is "{value}", expected ') + 10


@pytest.mark.parametrize("value", ["/var/lib", "/", "/mnt", "/raid/../etc"])
def test_local_nvme_mount_path_refuses_system_directories(value):
    message = _local_nvme_message(value)
    assert message.startswith(f'local_nvme_mount_path is "{value}", expected '), message


def test_local_nvme_mount_path_accepts_a_directory_of_its_own():
    assert _local_nvme_message("/mnt/nvme") == ""


# --- the shared rule itself -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/", "/etc", "/var", "/var/lib", "/usr/local", "/proc/sys", "/dev/shm", "/boot/x", "etc", "/a/./b",
     "/a/../etc", "/a//b", "/a/", "", "/a b"],
)  # fmt: skip
def test_directories_refused(path):
    assert unsafe_paths({"v": path}) != []


@pytest.mark.parametrize(
    "path", ["/var/lib/docker", "/etc/kubernetes/clusterforge", "/raid", "/mnt/nvme", "/var/lib/prometheus/x"]
)
def test_directories_of_their_own_allowed(path):
    assert unsafe_paths({"v": path}) == []


def test_the_root_directory_is_named_as_such():
    assert unsafe_paths({"docker_data_root": "/"}) == [
        'docker_data_root is "/", expected a directory of the role\'s own, not / (which holds every system directory)'
    ]


def test_a_value_that_is_not_a_string_is_refused():
    assert unsafe_paths({"v": ["/x"]}) == ["v is \"['/x']\", expected an absolute path without ., .., // or a "
                                           "trailing / (letters, digits, . _ @ + -)"]  # fmt: skip


def test_files_sit_directly_in_an_allowed_directory_with_the_suffix():
    assert unsafe_paths({"f": "/etc/sysctl.d/60-k.conf"}, within="/etc/sysctl.d", suffix=".conf") == []
    for bad in ("/etc/sysctl.d/.conf", "/etc/sysctl.d/sub/x.conf", "/etc/sysctl.d/x.cfg", "/etc/sysctl.d/.."):
        assert unsafe_paths({"f": bad}, within="/etc/sysctl.d", suffix=".conf") == [
            f'f is "{bad}", expected a .conf file directly under /etc/sysctl.d/'
        ]
