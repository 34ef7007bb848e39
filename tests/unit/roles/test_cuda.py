"""cuda's per-OS package names, versions and repository URLs, its guards and its environment
files, evaluated by Ansible's own templating. The RHEL path cannot run in the lab (no RHEL
image): these tests are what checks its names and URLs."""

from __future__ import annotations

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from tests.paths import PROJECT, load_plugin

_trusted = load_plugin("plugins/inventory/topology.py")._trusted

ROLE = PROJECT / "roles" / "cuda"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())

DEBIAN_13_TOOLS = {"nvidia-cuda-gdb": "12.4.127~12.4.1-2", "nvidia-profiler": "12.4.127~12.4.1-2"}
DEBIAN_13 = {
    "nvidia-cuda-toolkit": "12.4.131~12.4.1-2",
    "nvidia-cuda-dev": "12.4.127~12.4.1-2",
    "libcudart12": "12.4.127~12.4.1-2",
}
NVIDIA_REPOS = {
    "Debian-12.yml": "debian12",
    "Debian-13.yml": "debian12",
    "Ubuntu-22.yml": "ubuntu2204",
    "Ubuntu-24.yml": "ubuntu2404",
    "RedHat.yml": "rhel9",
}
FACTS = {"distribution_major_version": "9", "distribution_release": "trixie"}


def _render(expression, **variables):
    return Templar(loader=DataLoader(), variables=_trusted(variables)).template(_trusted(expression))


def _variables(file_name: str, **overrides) -> dict:
    """What Ansible sees on a node whose first_found hit is file_name: defaults, then the
    inventory's overrides, then the role's vars and the OS vars (which win over both)."""
    os_vars = yaml.safe_load((ROLE / "vars" / file_name).read_text())
    return {**DEFAULTS, "ansible_facts": FACTS, **overrides, **ROLE_VARS, **os_vars}


def _os(file_name: str, *names: str, **overrides):
    variables = _variables(file_name, **overrides)
    rendered = {name: _render("{{ " + name + " }}", **variables) for name in names}
    return rendered if len(names) > 1 else rendered[names[0]]


@pytest.mark.parametrize(
    ("file_name", "source", "packages"),
    [
        ("Debian-13.yml", "distribution", {**DEBIAN_13, **DEBIAN_13_TOOLS}),
        ("Debian-12.yml", "nvidia", {"cuda-toolkit-12-4": "12.4.1-1"}),
        ("Ubuntu-22.yml", "nvidia", {"cuda-toolkit-12-4": "12.4.1-1"}),
        ("Ubuntu-24.yml", "nvidia", {"cuda-toolkit-12-4": "12.4.1-1"}),
        ("RedHat.yml", "nvidia", {"cuda-toolkit-12-4": "12.4.1-1"}),
    ],
)
def test_full_toolkit_per_os(file_name, source, packages):
    rendered = _os(file_name, "cuda_source", "cuda_packages")
    assert rendered == {"cuda_source": source, "cuda_packages": packages}


@pytest.mark.parametrize(
    ("file_name", "components", "packages"),
    [
        ("Debian-13.yml", "runtime_nvcc", DEBIAN_13),
        ("Debian-13.yml", "runtime", {"libcudart12": "12.4.127~12.4.1-2"}),
        (
            "Ubuntu-24.yml",
            "runtime_nvcc",
            {"cuda-cudart-12-4": "12.4.127-1", "cuda-cudart-dev-12-4": "12.4.127-1", "cuda-nvcc-12-4": "12.4.131-1"},
        ),
        (
            "RedHat.yml",
            "runtime_nvcc",
            {"cuda-cudart-12-4": "12.4.127-1", "cuda-cudart-devel-12-4": "12.4.127-1", "cuda-nvcc-12-4": "12.4.131-1"},
        ),
        ("Debian-12.yml", "runtime", {"cuda-cudart-12-4": "12.4.127-1"}),
    ],
)
def test_component_sets_per_os(file_name, components, packages):
    assert _os(file_name, "cuda_packages", cuda_components=components) == packages


def test_nvidia_releases_side_by_side_each_pinned():
    packages = _os("Ubuntu-22.yml", "cuda_packages", cuda_versions=["12.6"], cuda_components="runtime_nvcc")
    assert packages == {
        "cuda-cudart-12-4": "12.4.127-1",
        "cuda-cudart-dev-12-4": "12.4.127-1",
        "cuda-nvcc-12-4": "12.4.131-1",
        "cuda-cudart-12-6": "12.6.77-1",
        "cuda-cudart-dev-12-6": "12.6.77-1",
        "cuda-nvcc-12-6": "12.6.85-1",
    }
    assert _os("Debian-13.yml", "cuda_packages", cuda_source="nvidia", cuda_version="12.6") == {
        "cuda-toolkit-12-6": "12.6.3-1"
    }


@pytest.mark.parametrize(("file_name", "repo"), NVIDIA_REPOS.items())
def test_nvidia_repository_per_os(file_name, repo):
    rendered = _os(file_name, "cuda_repo_url", "cuda_repo_key_url", "cuda_repo_key_fingerprint")
    assert rendered["cuda_repo_url"] == f"https://developer.download.nvidia.com/compute/cuda/repos/{repo}/x86_64/"
    key = "D42D0685.pub" if repo.startswith("rhel") else "3bf863cc.pub"
    assert rendered["cuda_repo_key_url"] == rendered["cuda_repo_url"] + key
    # NVIDIA's apt key 3bf863cc and RPM key D42D0685 (cuda-repo-management SIGNATURES.md).
    expected = (
        "610C7B14E068A878070DA4E99CD0A493D42D0685"
        if repo.startswith("rhel")
        else "EB693B3035CD5710E231E123A4B469963BF863CC"
    )
    assert rendered["cuda_repo_key_fingerprint"] == expected


def test_debian_13_non_free_signed_by_the_archive_keyring():
    names = ("cuda_debian_mirror_url", "cuda_debian_suites", "cuda_debian_components", "cuda_debian_key_fingerprint")
    rendered = _os("Debian-13.yml", *names)
    assert rendered == {
        "cuda_debian_mirror_url": "http://deb.debian.org/debian",
        "cuda_debian_suites": ["trixie", "trixie-updates"],
        "cuda_debian_components": ["contrib", "non-free", "non-free-firmware"],
        "cuda_debian_key_fingerprint": "04B54C3CDCA79751B16BC6B5225629DF75B188BD",
    }


def test_every_vars_file_is_a_release_the_role_checks_for():
    supported = ROLE_VARS["__cuda_supported"]
    for path in (ROLE / "vars").glob("*-*.yml"):
        distribution, major = path.stem.split("-")
        assert major in supported[distribution], path.name
    assert supported["RedHat"] == supported["Rocky"] == ["9"]
    assert (ROLE / "tasks" / "install-RedHat.yml").is_file() and (ROLE / "tasks" / "install-Debian.yml").is_file()


def _assert_task(name: str) -> dict:
    return next(task for task in MAIN_TASKS if task["name"] == name)["ansible.builtin.assert"]


def _holds(task: dict, file_name: str = "Debian-13.yml", **overrides) -> bool:
    variables = _variables(file_name, **overrides)
    conditions = [task["that"]] if isinstance(task["that"], str) else task["that"]
    return all(_render("{{ " + condition + " }}", **variables) for condition in conditions)


@pytest.mark.parametrize(
    ("override", "accepted"),
    [
        ({}, True),
        ({"cuda_version": "12"}, False),
        ({"cuda_version": "12.4.1"}, False),
        ({"cuda_source": "conda"}, False),
        ({"cuda_components": "minimal"}, False),
        ({"cuda_versions": "12.6"}, False),
        ({"cuda_versions": ["12.6"], "cuda_default_version": "12.6"}, True),
        ({"cuda_default_version": "12.6"}, False),
        ({"cuda_profile_file": "/etc/profile"}, False),
        ({"cuda_ld_so_conf_file": "/etc/ld.so.conf"}, False),
    ],
)
def test_inputs(override, accepted):
    task = _assert_task("Validate the role's inputs")
    assert _holds(task, **override) is accepted


def test_distribution_refuses_releases_side_by_side_naming_why():
    task = _assert_task("Refuse side-by-side releases from the distribution")
    assert _holds(task, cuda_versions=[]) is True
    assert _holds(task, cuda_versions=["12.6"]) is False
    assert "cuda_versions" in task["fail_msg"] and "/usr" in task["fail_msg"]


@pytest.mark.parametrize(
    ("file_name", "override", "accepted"),
    [
        ("Debian-13.yml", {}, True),
        ("Debian-13.yml", {"cuda_version": "12.6"}, False),  # Debian 13 ships 12.4 only
        ("Debian-12.yml", {"cuda_source": "distribution"}, False),  # no toolkit data for Debian 12
        ("Ubuntu-24.yml", {"cuda_versions": ["12.6"]}, True),
        ("Ubuntu-24.yml", {"cuda_versions": ["12.8"]}, False),  # no package versions for 12.8
        ("RedHat.yml", {"cuda_components": "runtime"}, True),
    ],
)
def test_packages_exist_for_the_release(file_name, override, accepted):
    task = _assert_task("Check the role has packages for the release, source and components")
    assert _holds(task, file_name, **override) is accepted


def test_every_release_installed_is_checked_as_preflight_checks_it():
    """roles/gpu_stack_check, once per release, with that release as cuda_version."""
    task = next(t for t in MAIN_TASKS if t["name"] == "Check the GPU software stack with each release installed")
    assert task["ansible.builtin.include_role"] == {"name": "gpu_stack_check"}
    assert task["loop"] == "{{ __cuda_all_versions }}"
    release = task["loop_control"]["loop_var"]
    assert task["vars"] == {"gpu_stack_check_caller": "cuda", "gpu_stack_check_cuda_version": "{{ " + release + " }}"}


def _template(name: str, file_name: str, **overrides) -> str:
    variables = {**_variables(file_name, **overrides), "ansible_managed": "managed"}
    return _render((ROLE / "templates" / name).read_text(), **variables)


def test_environment_of_an_nvidia_default_release():
    profile = _template("clusterforge-cuda.sh.j2", "Ubuntu-24.yml", cuda_versions=["12.6"], cuda_default_version="12.6")
    assert "CUDA 12.6 (nvidia)" in profile
    assert "export CUDA_HOME=/usr/local/cuda\n" in profile
    assert 'PATH="/usr/local/cuda/bin:${PATH}"' in profile
    conf = _template("clusterforge-cuda.conf.j2", "Ubuntu-24.yml")
    assert [line for line in conf.splitlines() if not line.startswith("#")] == ["/usr/local/cuda/lib64"]


def test_environment_of_the_distribution_toolkit():
    profile = _template("clusterforge-cuda.sh.j2", "Debian-13.yml")
    assert "export CUDA_HOME=/usr\n" in profile and "PATH" not in profile
    conf = _template("clusterforge-cuda.conf.j2", "Debian-13.yml")
    assert [line for line in conf.splitlines() if line and not line.startswith("#")] == []
