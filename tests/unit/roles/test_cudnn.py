"""cudnn: the package names, versions and repository URLs per OS, the archive's URL and prefix, and
the role's guards (Debian's nvidia-cudnn, the archive's sha256 and root), by Ansible's own templating."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import OS_FACTS as FACTS
from tests.unit.roles.harness import render as _render
from tests.unit.roles.harness import vars_file

ROLE = PROJECT / "roles" / "cudnn"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
PINNED = {name: DEFAULTS[name] for name in ("cudnn_version", "cudnn_cuda_major", "cudnn_package_release")}

APT_KEY = "EB693B3035CD5710E231E123A4B469963BF863CC"
DNF_KEY = "610C7B14E068A878070DA4E99CD0A493D42D0685"


def _vars_file(facts: dict) -> str:
    return vars_file(ROLE, facts).name


def _os(host: str, **overrides) -> dict:
    """The role's public defaults as Ansible sees them on `host`."""
    facts = FACTS[host]
    os_vars = yaml.safe_load((ROLE / "vars" / _vars_file(facts)).read_text())
    variables = {**DEFAULTS, **PINNED, **overrides, **ROLE_VARS, **os_vars, "ansible_facts": facts}
    return {
        name: _render(DEFAULTS[name], **variables)
        for name in (
            "cudnn_packages",
            "cudnn_repo_url",
            "cudnn_repo_key_url",
            "cudnn_repo_key_fingerprint",
            "cudnn_archive_packages",
            "cudnn_archive_url",
        )
    }


APT = {
    "libcudnn9-cuda-12": "9.10.2.21-1",
    "libcudnn9-dev-cuda-12": "9.10.2.21-1",
    "libcudnn9-headers-cuda-12": "9.10.2.21-1",
}
DNF = {
    "libcudnn9-cuda-12": "9.10.2.21-1",
    "libcudnn9-devel-cuda-12": "9.10.2.21-1",
    "libcudnn9-headers-cuda-12": "9.10.2.21-1",
}


@pytest.mark.parametrize(
    ("host", "vars_file", "packages", "repo", "key", "fingerprint", "archive_packages"),
    [
        ("debian12", "Debian-12.yml", APT, "debian12", "3bf863cc.pub", APT_KEY, ["tar", "xz-utils"]),
        # NVIDIA's debian12 repository on Debian 13 too; never Debian's own nvidia-cudnn.
        ("debian13", "Debian-13.yml", APT, "debian12", "3bf863cc.pub", APT_KEY, ["tar", "xz-utils"]),
        ("ubuntu2204", "Ubuntu.yml", APT, "ubuntu2204", "3bf863cc.pub", APT_KEY, ["tar", "xz-utils"]),
        ("ubuntu2404", "Ubuntu.yml", APT, "ubuntu2404", "3bf863cc.pub", APT_KEY, ["tar", "xz-utils"]),
        ("rhel9", "RedHat.yml", DNF, "rhel9", "D42D0685.pub", DNF_KEY, ["tar", "xz"]),
        ("rocky9", "RedHat.yml", DNF, "rhel9", "D42D0685.pub", DNF_KEY, ["tar", "xz"]),
    ],
)
def test_pinned_packages_and_repository_per_os(host, vars_file, packages, repo, key, fingerprint, archive_packages):
    assert _vars_file(FACTS[host]) == vars_file
    rendered = _os(host)
    assert rendered["cudnn_packages"] == packages
    assert rendered["cudnn_repo_url"] == f"https://developer.download.nvidia.com/compute/cuda/repos/{repo}/x86_64/"
    assert rendered["cudnn_repo_key_url"] == rendered["cudnn_repo_url"] + key
    assert rendered["cudnn_repo_key_fingerprint"] == fingerprint
    assert rendered["cudnn_archive_packages"] == archive_packages
    assert "nvidia-cudnn" not in rendered["cudnn_packages"]


def test_every_supported_release_has_data_and_others_do_not_pass_the_os_check():
    supported = ROLE_VARS["__cudnn_supported_releases"]
    for facts in FACTS.values():
        assert f"{facts['distribution']}-{facts['distribution_major_version']}" in supported
        assert facts["os_family"] in ROLE_VARS["__cudnn_supported_os_families"]
    assert "Debian-11" not in supported and "Ubuntu-20" not in supported and "RedHat-8" not in supported


def test_names_and_versions_follow_the_pinned_cudnn_and_cuda_major():
    rendered = _os("ubuntu2404", cudnn_version="9.12.0.46", cudnn_cuda_major="13", cudnn_package_release="2")
    assert rendered["cudnn_packages"] == {
        "libcudnn9-cuda-13": "9.12.0.46-2",
        "libcudnn9-dev-cuda-13": "9.12.0.46-2",
        "libcudnn9-headers-cuda-13": "9.12.0.46-2",
    }
    assert rendered["cudnn_archive_url"] == (
        "https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/linux-x86_64/"
        "cudnn-linux-x86_64-9.12.0.46_cuda13-archive.tar.xz"
    )


def test_the_archive_unpacks_under_a_versioned_prefix_of_the_root():
    variables = {**DEFAULTS, **ROLE_VARS, "cudnn_archive_root": "/opt/cudnn"}
    assert _render(ROLE_VARS["__cudnn_archive_prefix"], **variables) == "/opt/cudnn/9.10.2.21-cuda12"
    assert _render(ROLE_VARS["__cudnn_archive_library"], **variables) == "/opt/cudnn/9.10.2.21-cuda12/lib/libcudnn.so.9"
    assert _render(ROLE_VARS["__cudnn_archive_file"], **variables) == (
        "/opt/cudnn/archives/cudnn-linux-x86_64-9.10.2.21_cuda12-archive.tar.xz"
    )


def _task(name: str) -> dict:
    return next(task for task in MAIN_TASKS if task["name"] == name)


def _holds(name: str, **variables) -> bool:
    that = _task(name)["ansible.builtin.assert"]["that"]
    conditions = [that] if isinstance(that, str) else that
    return all(_render("{{ " + condition + " }}", **variables) for condition in conditions)


@pytest.mark.parametrize(
    ("override", "accepted"),
    [
        ({}, True),
        ({"cudnn_version": "9.10.2"}, False),  # NVIDIA names cuDNN with four numbers
        ({"cudnn_version": "8.9.7.29"}, False),  # cuDNN 8's packages are named otherwise
        ({"cudnn_cuda_major": "12.4"}, False),
        ({"cudnn_source": "debian"}, False),
    ],
)
def test_inputs(override, accepted):
    assert _holds("Validate the role's inputs", **{**PINNED, "cudnn_source": "repository", **override}) is accepted


ARCHIVE = {
    "cudnn_archive_url": "https://mirror.example/cudnn-linux-x86_64-9.10.2.21_cuda12-archive.tar.xz",
    "cudnn_archive_sha256": "a" * 64,
    "cudnn_archive_packages": ["tar", "xz-utils"],
}


@pytest.mark.parametrize(
    ("override", "accepted"),
    [
        ({}, True),
        ({"cudnn_archive_sha256": ""}, False),  # the default: no checksum is pinned, the site sets it
        ({"cudnn_archive_sha256": "a" * 63}, False),
        ({"cudnn_archive_url": "ftp://mirror.example/cudnn.tar.xz"}, False),
        ({"cudnn_archive_url": "https://mirror.example/cudnn.zip"}, False),
    ],
)
def test_archive_inputs(override, accepted):
    assert _holds("Validate the archive inputs", **{**ARCHIVE, **override}) is accepted
    assert "cudnn_archive_sha256" in _task("Validate the archive inputs")["ansible.builtin.assert"]["fail_msg"]


def test_the_archive_source_requires_a_sha256_by_default():
    assert DEFAULTS["cudnn_archive_sha256"] == ""
    assert _holds("Validate the archive inputs", **{**DEFAULTS, **ROLE_VARS}) is False


@pytest.mark.parametrize(
    ("root", "accepted"),
    [
        ("/opt/cudnn", True),
        ("/usr/local/cudnn-9", True),
        ("/opt", False),
        ("/usr", False),
        ("opt/cudnn", False),
        ("/", False),
    ],
)
def test_archive_root_is_a_directory_of_the_roles_own(root, accepted):
    assert (
        _holds("Refuse an archive root that is not a directory of the role's own", cudnn_archive_root=root) is accepted
    )


@pytest.mark.parametrize(
    ("packages", "accepted"),
    [
        (APT, True),
        ({"nvidia-cudnn": "9.1.0.70~cuda12.4"}, False),
        ({**APT, "nvidia-cudnn": "9.1.0.70~cuda12.4"}, False),
    ],
)
def test_debian_nvidia_cudnn_is_refused(packages, accepted):
    name = "Refuse Debian's nvidia-cudnn package"
    assert _holds(name, cudnn_packages=packages, **ROLE_VARS) is accepted
    assert re.search(
        r"downloads cuDNN from NVIDIA at install time and fails\s+offline",
        _task(name)["ansible.builtin.assert"]["fail_msg"],
    )
