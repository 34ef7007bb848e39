"""nvidia_fabricmanager: which vars/<OS>.yml a host reads, the package name, version and NVIDIA
repository each supported release resolves to, how the version follows the driver's, and the
probe parsing and refusals, evaluated by Ansible's own templating (the compatibility rule itself is
plugins/filter/gpu_stack.py's, called here as the role calls it)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.paths import PROJECT, filters
from tests.unit.roles.harness import OS_FACTS as FACTS
from tests.unit.roles.harness import render as _render
from tests.unit.roles.harness import vars_file

stack_problems = filters("plugins/filter/gpu_stack.py")["clusterforge_gpu_stack_problems"]

ROLE = PROJECT / "roles" / "nvidia_fabricmanager"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
TASKS = yaml.safe_load((ROLE / "tasks" / "fabricmanager.yml").read_text())
MAIN = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
BASE = "https://developer.download.nvidia.com/compute/cuda/repos"
NVIDIA_KEY = "EB693B3035CD5710E231E123A4B469963BF863CC"


def _vars_file(facts: dict):
    return vars_file(ROLE, facts)


def resolve(host: str, name: str, **overrides):
    """A public default as Ansible resolves it on host: extra vars over defaults over the OS data."""
    facts = FACTS[host]
    os_vars = yaml.safe_load(_vars_file(facts).read_text())
    variables = {**ROLE_VARS, **os_vars, **DEFAULTS, **overrides, "ansible_facts": facts}
    return _render("{{ " + name + " }}", **variables)


def _task(tasks: list, name: str) -> dict:
    return next(task for task in tasks if task["name"] == name)


def test_every_supported_release_has_its_vars_file_and_nothing_else_is_supported():
    assert ROLE_VARS["__nvidia_fabricmanager_supported"] == {
        "Debian": ["12", "13"],
        "Ubuntu": ["22", "24"],
        "RedHat": ["9"],
        "Rocky": ["9"],
    }
    picked = {host: _vars_file(facts).name for host, facts in FACTS.items()}
    assert picked == {
        "debian13": "Debian-13.yml",
        "debian12": "Debian-12.yml",
        "ubuntu2204": "Ubuntu.yml",
        "ubuntu2404": "Ubuntu.yml",
        "rhel9": "RedHat.yml",
        "rocky9": "RedHat.yml",
    }
    release_check = _task(TASKS, "Check the release is one the role installs on")["ansible.builtin.assert"]
    for facts in (
        {"distribution": "Ubuntu", "distribution_major_version": "20"},
        {"distribution": "SLES", "distribution_major_version": "15"},
    ):
        assert _render("{{ " + release_check["that"] + " }}", ansible_facts=facts, **ROLE_VARS) is False
    assert "Ubuntu 22.04/24.04, Debian 12/13 and RHEL/Rocky 9" in release_check["fail_msg"]


def test_every_os_file_defines_the_same_names():
    names = {p.name: set(yaml.safe_load(p.read_text())) for p in (ROLE / "vars").glob("*.yml") if p.name != "main.yml"}
    assert len({frozenset(n) for n in names.values()}) == 1, names


@pytest.mark.parametrize(
    ("host", "repo"),
    [("debian13", "debian12"), ("debian12", "debian12"), ("ubuntu2204", "ubuntu2204"), ("ubuntu2404", "ubuntu2404")],
)
def test_apt_releases_take_nvidia_fabricmanager_branch_from_nvidia_s_repository(host, repo):
    assert resolve(host, "nvidia_fabricmanager_package") == "nvidia-fabricmanager-550"
    assert resolve(host, "nvidia_fabricmanager_version") == "550.163.01-1"
    assert resolve(host, "nvidia_fabricmanager_repo_url").strip() == f"{BASE}/{repo}/x86_64/"
    assert resolve(host, "nvidia_fabricmanager_repo_key_url").strip() == f"{BASE}/{repo}/x86_64/3bf863cc.pub"
    assert resolve(host, "nvidia_fabricmanager_repo_key_fingerprint") == NVIDIA_KEY
    assert resolve(host, "nvidia_fabricmanager_repo_keyring") == "/etc/apt/keyrings/nvidia-cuda.asc"
    # Another branch names another package.
    assert resolve(host, "nvidia_fabricmanager_package", nvidia_driver_branch="570") == "nvidia-fabricmanager-570"


@pytest.mark.parametrize("host", ["rhel9", "rocky9"])
def test_rhel_family_takes_nvidia_fabric_manager_from_the_rhel9_repository(host):
    assert resolve(host, "nvidia_fabricmanager_package") == "nvidia-fabric-manager"
    assert resolve(host, "nvidia_fabricmanager_package", nvidia_driver_branch="570") == "nvidia-fabric-manager"
    assert resolve(host, "nvidia_fabricmanager_version") == "550.163.01-1"
    assert resolve(host, "nvidia_fabricmanager_repo_url").strip() == f"{BASE}/rhel9/x86_64/"
    assert resolve(host, "nvidia_fabricmanager_repo_key_url").strip() == f"{BASE}/rhel9/x86_64/D42D0685.pub"
    assert resolve(host, "nvidia_fabricmanager_repo_name") == "cuda-rhel9-x86_64"
    assert resolve(host, "nvidia_fabricmanager_driver_packages") == ["nvidia-driver-cuda", "nvidia-driver"]
    # NVIDIA's RPM key D42D0685, the driver role's too.
    assert resolve(host, "nvidia_fabricmanager_repo_key_fingerprint") == "610C7B14E068A878070DA4E99CD0A493D42D0685"


def test_driver_packages_per_os():
    assert resolve("debian12", "nvidia_fabricmanager_driver_packages") == ["nvidia-driver-cuda", "libnvidia-ml1"]
    assert resolve("debian13", "nvidia_fabricmanager_driver_packages") == ["nvidia-driver-cuda", "libnvidia-ml1"]
    assert resolve("ubuntu2404", "nvidia_fabricmanager_driver_packages") == ["libnvidia-compute-*"]


@pytest.mark.parametrize(
    ("driver_version", "expected"),
    [
        ("550.163.01-1", "550.163.01-1"),  # NVIDIA's driver
        ("550.163.01-2", "550.163.01-1"),  # Debian 13's own driver: same upstream, NVIDIA's release
        ("535.247.01-1~deb12u1", "535.247.01-1"),
        ("1:570.195.03-0ubuntu0.24.04.1", "570.195.03-1"),  # epoch and Ubuntu revision dropped
        ("", "550.163.01-1"),  # the driver role's empty default: the OS data
    ],
)
def test_the_version_follows_the_driver(driver_version, expected):
    assert resolve("ubuntu2404", "nvidia_fabricmanager_version", nvidia_driver_version=driver_version) == expected


def test_the_branch_and_repository_follow_the_driver_role_where_set():
    assert resolve("debian12", "nvidia_fabricmanager_branch") == "550"
    assert resolve("debian12", "nvidia_fabricmanager_branch", nvidia_driver_branch="535") == "535"
    mirror = "http://127.0.0.1:8080/compute/cuda/repos/debian12/x86_64/"
    driver = {
        "nvidia_driver_cuda_repo_url": mirror,
        "nvidia_driver_cuda_repo_key_url": mirror + "3bf863cc.pub",
        "nvidia_driver_cuda_repo_key_fingerprint": "A" * 40,
        "nvidia_driver_cuda_repo_keyring": "/etc/apt/keyrings/site-cuda.asc",
    }
    assert resolve("debian12", "nvidia_fabricmanager_repo_url", **driver) == mirror
    assert resolve("debian12", "nvidia_fabricmanager_repo_key_url", **driver) == mirror + "3bf863cc.pub"
    assert resolve("debian12", "nvidia_fabricmanager_repo_key_fingerprint", **driver) == "A" * 40
    assert resolve("debian12", "nvidia_fabricmanager_repo_keyring", **driver) == "/etc/apt/keyrings/site-cuda.asc"
    # Debian 13's driver comes from Debian: its NVIDIA repository variables are empty, the OS data counts.
    empty = dict.fromkeys(driver, "")
    assert resolve("debian13", "nvidia_fabricmanager_repo_url", **empty).strip() == f"{BASE}/debian12/x86_64/"
    assert resolve("debian13", "nvidia_fabricmanager_repo_key_fingerprint", **empty) == NVIDIA_KEY


@pytest.mark.parametrize(("expected_nvswitch", "enabled"), [(True, True), (False, False), (None, False)])
def test_enabled_follows_the_node_type(expected_nvswitch, enabled):
    extra = {} if expected_nvswitch is None else {"clusterforge_expected_nvswitch": expected_nvswitch}
    assert _render("{{ nvidia_fabricmanager_enabled | bool }}", **DEFAULTS, **extra) is enabled


def test_a_node_type_without_nvswitch_is_skipped_with_the_reason():
    report = _task(MAIN, "Report why Fabric Manager is not installed on this node")
    assert _render("{{ " + report["when"] + " }}", **DEFAULTS, clusterforge_expected_nvswitch=False) is True
    msg = _render(report["ansible.builtin.debug"]["msg"], clusterforge_expected_nvswitch=False)
    assert msg == "skipped: NVIDIA Fabric Manager: the node type has no NVSwitch"
    install = _task(MAIN, "Install NVIDIA Fabric Manager at the driver's version")
    assert install["when"] == "nvidia_fabricmanager_enabled | bool"


@pytest.mark.parametrize(
    ("branch", "version", "accepted"),
    [("550", "550.163.01-1", True), ("550", "535.247.01-1", False), ("55", "55.1-1", False), ("550", "latest", False)],
)
def test_the_version_must_be_an_exact_version_of_the_branch(branch, version, accepted):
    task = _task(TASKS, "Validate the version, package and repository for this OS")["ansible.builtin.assert"]
    variables = {
        "nvidia_fabricmanager_branch": branch,
        "nvidia_fabricmanager_version": version,
        "nvidia_fabricmanager_package": "nvidia-fabricmanager-550",
        "nvidia_fabricmanager_driver_packages": ["nvidia-driver-cuda"],
        "nvidia_fabricmanager_repo_url": f"{BASE}/debian12/x86_64/",
        "nvidia_fabricmanager_repo_key_url": f"{BASE}/debian12/x86_64/3bf863cc.pub",
    }
    assert all(_render("{{ " + c + " }}", **variables) for c in task["that"]) is accepted


PROBE = [
    "pkg|libnvidia-ml1|550.163.01-2",
    "pkg|nvidia-driver-cuda|550.163.01-1",
    "pkg|nvidia-fabricmanager-550|550.127.08-1",
    "nvswitch|0000:05:00.0",
    "nvswitch|0000:06:00.0",
    "nvswitch|0000:05:00.0",
]


def _probe(lines: list[str], package: str = "nvidia-fabricmanager-550") -> dict:
    task = _task(TASKS, "Note what the node has")
    variables = {
        **task["vars"],
        "__nvidia_fabricmanager_probe": {"stdout_lines": lines},
        "nvidia_fabricmanager_package": package,
    }
    return {name: _render(value, **variables) for name, value in task["ansible.builtin.set_fact"].items()}


def test_the_probe_gives_the_driver_fabric_manager_and_nvswitches():
    seen = _probe(PROBE)
    assert seen["__nvidia_fabricmanager_installed"] == "550.127.08-1"
    assert seen["__nvidia_fabricmanager_driver"] == {"key": "libnvidia-ml1", "value": "550.163.01-2"}
    assert seen["__nvidia_fabricmanager_nvswitches"] == ["0000:05:00.0", "0000:06:00.0"]
    bare = _probe([])
    assert bare["__nvidia_fabricmanager_installed"] == ""
    assert bare["__nvidia_fabricmanager_driver"] == {"key": "", "value": ""}
    assert bare["__nvidia_fabricmanager_nvswitches"] == []
    # rpm: epoch 0 is dropped, another is kept (and dropped before the comparison).
    rpm = _probe(
        ["pkg|nvidia-driver|3:550.163.01-1.el9", "pkg|nvidia-fabric-manager|0:550.163.01-1"], "nvidia-fabric-manager"
    )
    assert rpm["__nvidia_fabricmanager_installed"] == "550.163.01-1"
    assert rpm["__nvidia_fabricmanager_driver"] == {"key": "nvidia-driver", "value": "3:550.163.01-1.el9"}


def _driver_problems(driver: str, fabricmanager: str) -> list[str]:
    """The role's refusal: its stack dict rendered as the task does, through the same filter."""
    task = _task(TASKS, "Refuse a Fabric Manager version other than the installed driver's")
    expression = task["vars"]["__nvidia_fabricmanager_driver_problems"].replace("| clusterforge_gpu_stack_problems", "")
    stack = _render(
        expression,
        __nvidia_fabricmanager_driver={"key": "nvidia-driver-cuda", "value": driver},
        nvidia_fabricmanager_version=fabricmanager,
    )
    return stack_problems(stack)


@pytest.mark.parametrize(
    ("driver", "fabricmanager", "refused"),
    [
        ("550.163.01-1", "550.163.01-1", False),
        ("550.163.01-2", "550.163.01-1", False),  # Debian's driver package, NVIDIA's Fabric Manager
        ("3:550.163.01-1.el9", "550.163.01-1", False),
        ("550.163.01-1", "550.127.08-1", True),
        ("570.195.03-0ubuntu1", "550.163.01-1", True),
    ],
)
def test_fabric_manager_must_be_the_installed_driver_s_version(driver, fabricmanager, refused):
    problems = _driver_problems(driver, fabricmanager)
    assert bool(problems) is refused, problems
    if refused:
        assert fabricmanager in problems[0]
        assert driver.split(":")[-1] in problems[0]


def test_the_stack_check_is_gpu_stack_check_for_an_nvswitch_system():
    """The same check as preflight (roles/gpu_stack_check), named for this role; the role runs only
    for NVSwitch systems, so the Fabric Manager pin is always checked against the driver."""
    task = _task(TASKS, "Check the GPU software stack with this role's versions")
    assert task["ansible.builtin.include_role"]["name"] == "gpu_stack_check"
    assert task["vars"] == {"gpu_stack_check_caller": "nvidia_fabricmanager", "gpu_stack_check_nvswitch": True}


@pytest.mark.parametrize(
    ("fingerprint", "accepted"),
    [(NVIDIA_KEY, True), ("EB69 3B30 35CD 5710 E231 E123 A4B4 6996 3BF8 63CC", True), ("", False)],
)
def test_the_key_must_be_pinned_by_fingerprint(fingerprint, accepted):
    task = _task(TASKS, "Refuse a repository key that is not pinned by fingerprint")["ansible.builtin.assert"]
    assert _render("{{ " + task["that"] + " }}", nvidia_fabricmanager_repo_key_fingerprint=fingerprint) is accepted


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg-query")
def test_the_probe_script_runs_and_lists_installed_packages_and_nvswitch_devices(tmp_path):
    """The probe as the task builds its argv (one argument per driver package), against this
    machine's dpkg database and an imitated device list."""
    task = _task(TASKS, "Read the installed driver and Fabric Manager, and look for NVSwitch devices")
    (tmp_path / "devices" / "0000:05:00.0").mkdir(parents=True)
    argv = _render(
        task["ansible.builtin.command"]["argv"],
        **task["vars"],
        **ROLE_VARS,
        ansible_facts={"os_family": "Debian"},
        nvidia_fabricmanager_nvswitch_devices_path=str(tmp_path / "devices"),
        nvidia_fabricmanager_pci_devices_path=str(tmp_path / "no-pci"),
        nvidia_fabricmanager_package="nvidia-fabricmanager-550",
        nvidia_fabricmanager_driver_packages=["dpkg", "no-such-package-*"],
    )
    assert argv[-2:] == ["dpkg", "no-such-package-*"]
    lines = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()
    assert [line.split("|")[:2] for line in lines] == [["pkg", "dpkg"], ["nvswitch", "0000:05:00.0"]]
