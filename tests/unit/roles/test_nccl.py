"""nccl's per-OS package names and versions, and its guards, evaluated by Ansible's own templating."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render as _render

ROLE = PROJECT / "roles" / "nccl"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
PINNED = {name: DEFAULTS[name] for name in ("nccl_version", "nccl_release", "nccl_cuda_version")}


NVIDIA_APT = {"libnccl2": "2.22.3-1+cuda12.4", "libnccl-dev": "2.22.3-1+cuda12.4"}
NVIDIA_DNF = {"libnccl": "2.22.3-1+cuda12.4", "libnccl-devel": "2.22.3-1+cuda12.4"}
# NVIDIA's repository keys, as github.com/NVIDIA/cuda-repo-management SIGNATURES.md prints them.
NVIDIA_APT_KEY = "EB693B3035CD5710E231E123A4B469963BF863CC"
NVIDIA_RPM_KEY = "610C7B14E068A878070DA4E99CD0A493D42D0685"
DNF_ROLE = PROJECT / "roles" / "dnf_vendor_repository"
RHEL_TASKS = yaml.safe_load((ROLE / "tasks" / "install-RedHat.yml").read_text())
EL9 = {
    "rhel9": {"distribution": "RedHat", "distribution_major_version": "9", "os_family": "RedHat"},
    "rocky9": {"distribution": "Rocky", "distribution_major_version": "9", "os_family": "RedHat"},
}


def _os(file_name: str, **overrides) -> dict:
    """The role's public defaults as Ansible sees them on a node whose first_found hit is file_name."""
    os_vars = yaml.safe_load((ROLE / "vars" / file_name).read_text())
    variables = {**PINNED, **overrides, **os_vars}
    return {
        name: _render(DEFAULTS[name], **variables)
        for name in (
            "nccl_install_from",
            "nccl_packages",
            "nccl_repo_url",
            "nccl_repo_key_url",
            "nccl_repo_key_fingerprint",
        )
    }


@pytest.mark.parametrize(
    ("file_name", "install_from", "packages", "repo"),
    [
        ("Debian-13.yml", "distribution", {"libnccl2": "2.22.3-1-1", "libnccl-dev": "2.22.3-1-1"}, "debian12"),
        (
            "Debian-12.yml",
            "repository",
            NVIDIA_APT,
            "debian12",
        ),
        (
            "Ubuntu-22.yml",
            "repository",
            NVIDIA_APT,
            "ubuntu2204",
        ),
        (
            "Ubuntu-24.yml",
            "repository",
            NVIDIA_APT,
            "ubuntu2404",
        ),
        ("RedHat.yml", "repository", NVIDIA_DNF, "rhel9"),
    ],
)
def test_pinned_packages_per_os(file_name, install_from, packages, repo):
    rendered = _os(file_name)
    assert rendered["nccl_install_from"] == install_from
    assert rendered["nccl_packages"] == packages
    assert rendered["nccl_repo_url"] == f"https://developer.download.nvidia.com/compute/cuda/repos/{repo}/x86_64/"
    assert rendered["nccl_repo_key_url"].startswith(rendered["nccl_repo_url"])
    # apt repositories are signed by 3bf863cc, the rpm repositories by D42D0685.
    key = {"RedHat.yml": ("D42D0685.pub", NVIDIA_RPM_KEY)}.get(file_name, ("3bf863cc.pub", NVIDIA_APT_KEY))
    assert rendered["nccl_repo_key_url"] == rendered["nccl_repo_url"] + key[0]
    assert rendered["nccl_repo_key_fingerprint"] == key[1]


def test_nvidia_versions_follow_the_pinned_nccl_and_cuda():
    rendered = _os("Ubuntu-24.yml", nccl_version="2.27.7", nccl_release="1", nccl_cuda_version="12.9")
    assert rendered["nccl_packages"] == {"libnccl2": "2.27.7-1+cuda12.9", "libnccl-dev": "2.27.7-1+cuda12.9"}


def test_every_vars_file_is_a_release_the_role_checks_for():
    """Each release vars file is one the OS check lets through; EL 9 reads the family's file."""
    for path in (ROLE / "vars").glob("*-*.yml"):
        assert path.stem in ROLE_VARS["__nccl_supported_releases"], path.name
    assert ROLE_VARS["__nccl_supported_os_families"] == ["Debian", "RedHat"]
    assert {"RedHat-9", "Rocky-9"} <= set(ROLE_VARS["__nccl_supported_releases"])
    assert (ROLE / "tasks" / "install-RedHat.yml").is_file()


def _handed(host: str, **overrides) -> dict:
    """What the RHEL tasks hand to dnf_vendor_repository on host, as Ansible templates it."""
    os_vars = yaml.safe_load((ROLE / "vars" / "RedHat.yml").read_text())
    variables = {**ROLE_VARS, **DEFAULTS, **PINNED, **os_vars, **overrides, "ansible_facts": EL9[host]}
    include = next(t for t in RHEL_TASKS if "ansible.builtin.include_role" in t)
    assert include["ansible.builtin.include_role"]["name"] == "dnf_vendor_repository"
    return {name: _render(value, **variables) for name, value in include["vars"].items()}


@pytest.mark.parametrize("host", sorted(EL9))
def test_el9_hands_nvidia_s_rhel9_repository_to_dnf_vendor_repository(host):
    handed = _handed(host)
    assert handed["dnf_vendor_repository_caller"] == "nccl"
    assert handed["dnf_vendor_repository_fingerprint_variable"] == "nccl_repo_key_fingerprint"
    assert handed["dnf_vendor_repository_name"] == "cuda-rhel9-x86_64"
    assert (
        handed["dnf_vendor_repository_url"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/"
    )
    assert handed["dnf_vendor_repository_key_url"] == handed["dnf_vendor_repository_url"] + "D42D0685.pub"
    assert handed["dnf_vendor_repository_key_fingerprint"] == NVIDIA_RPM_KEY
    assert handed["dnf_vendor_repository_packages"] == NVIDIA_DNF
    assert handed["dnf_vendor_repository_versionlock"] is True
    assert handed["dnf_vendor_repository_module_stream"] == ""
    assert _handed(host, nccl_hold=False)["dnf_vendor_repository_versionlock"] is False


@pytest.mark.parametrize("host", sorted(EL9))
def test_el9_name_version_release_specs_and_their_validation(host):
    handed = _handed(host, nccl_version="2.27.7", nccl_cuda_version="12.9")
    dnf_vars = yaml.safe_load((DNF_ROLE / "vars" / "main.yml").read_text())
    assert _render(dnf_vars["__dnf_vendor_repository_specs"], **handed) == [
        "libnccl-2.27.7-1+cuda12.9",
        "libnccl-devel-2.27.7-1+cuda12.9",
    ]
    validate = next(
        t
        for t in yaml.safe_load((DNF_ROLE / "tasks" / "main.yml").read_text())
        if t["name"] == "Validate the role's inputs"
    )
    variables = {**dnf_vars, **handed, **validate["vars"]}
    for condition in validate["ansible.builtin.assert"]["that"]:
        assert _render("{{ " + condition + " }}", **variables) is True, condition


def test_el9_refuses_the_distribution_source():
    refuse = next(t for t in RHEL_TASKS if t["name"] == "Refuse the distribution source on the RHEL family")
    that = refuse["ansible.builtin.assert"]["that"]
    assert _render("{{ " + that + " }}", nccl_install_from="repository") is True
    assert _render("{{ " + that + " }}", nccl_install_from="distribution") is False


def _assert_task(name: str) -> dict:
    return next(task for task in MAIN_TASKS if task["name"] == name)["ansible.builtin.assert"]


def _holds(task: dict, **variables) -> bool:
    conditions = [task["that"]] if isinstance(task["that"], str) else task["that"]
    return all(_render("{{ " + condition + " }}", **variables) for condition in conditions)


NCCL_TESTS = {
    "nccl_tests_version": "2.13.10",
    "nccl_tests_url": "https://mirror.example/nccl-tests-2.13.10.tar.gz",
    "nccl_tests_sha256": "a" * 64,
    "nccl_tests_cuda_home": "/usr/local/cuda",
    "nccl_tests_nccl_home": "/usr",
    "nccl_tests_mpi": False,
    "nccl_tests_mpi_home": "",
    "nccl_tests_make_args": [],
}


@pytest.mark.parametrize(
    ("override", "accepted"),
    [
        ({}, True),
        ({"nccl_tests_sha256": ""}, False),  # no checksum: refused, nothing is built unchecked
        ({"nccl_tests_sha256": "a" * 63}, False),
        ({"nccl_tests_mpi": True}, False),  # MPI=1 without MPI_HOME
        ({"nccl_tests_mpi": True, "nccl_tests_mpi_home": "/usr/lib/x86_64-linux-gnu/openmpi"}, True),
        ({"nccl_tests_url": "ftp://mirror.example/a.tgz"}, False),
    ],
)
def test_nccl_tests_inputs(override, accepted):
    task = _assert_task("Validate the nccl-tests inputs")
    assert _holds(task, **{**NCCL_TESTS, **override}) is accepted
    assert "nccl_tests_sha256" in task["fail_msg"]


@pytest.mark.parametrize(
    ("root", "accepted"),
    [
        ("/opt/nccl-tests", True),
        ("/usr/local/nccl-tests", True),
        ("/opt", False),
        ("/usr", False),
        ("opt/nccl-tests", False),
    ],
)
def test_nccl_tests_root_is_a_directory_of_the_roles_own(root, accepted):
    task = _assert_task("Refuse an nccl-tests root that is not a directory of the role's own")
    assert _holds(task, nccl_tests_root=root) is accepted


def test_make_gets_nccl_tests_build_interface():
    variables = {**NCCL_TESTS, "nccl_tests_root": "/opt/nccl-tests", "ansible_facts": {"processor_nproc": 4}}
    variables.update(nccl_tests_mpi=True, nccl_tests_mpi_home="/opt/mpi", nccl_tests_make_args=["NAME_SUFFIX=_mpi"])
    argv = _render(ROLE_VARS["__nccl_tests_make_argv"], **variables)
    assert argv == [
        "make",
        "-j4",
        "BUILDDIR=/opt/nccl-tests/2.13.10/build",
        "CUDA_HOME=/usr/local/cuda",
        "NCCL_HOME=/usr",
        "MPI=1",
        "MPI_HOME=/opt/mpi",
        "NAME_SUFFIX=_mpi",
    ]


def test_nccl_check_looks_where_the_role_links_by_default():
    bin_dirs = re.search(r"default: \[(.*)\]", (PROJECT / "plugins/modules/nccl_check.py").read_text()).group(1)
    assert f"{DEFAULTS['nccl_tests_root']}/build" in [d.strip() for d in bin_dirs.split(",")]


def test_the_default_nccl_tests_release_is_pinned_by_its_sha256():
    defaults = yaml.safe_load((PROJECT / "roles" / "nccl" / "defaults" / "main.yml").read_text())
    assert re.fullmatch(r"[0-9a-f]{64}", defaults["nccl_tests_sha256"])
    assert "v{{ nccl_tests_version }}.tar.gz" in defaults["nccl_tests_url"]
