"""The GPU roles share two apt sources: NVIDIA's CUDA repository (nvidia-cuda.sources) and the
distribution's archive components (clusterforge-<distro>-archive.sources). Each role writes the
file through apt_vendor_repository, so their values must agree to the letter, or every run would
rewrite the file back and forth. Pins stay apart: one preferences file per role."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import OS_FACTS, render, vars_file

# What makes the source file: every apt_vendor_repository variable the .sources template reads.
SOURCE_KEYS = ("name", "url", "suites", "components", "keyring")


def _include(role: str, when: str | None = None) -> dict:
    """The apt_vendor_repository include of the role's install-Debian.yml (the one for `when`)."""
    tasks = yaml.safe_load((PROJECT / "roles" / role / "tasks" / "install-Debian.yml").read_text())
    includes = [t for t in tasks if t.get("ansible.builtin.include_role", {}).get("name") == "apt_vendor_repository"]
    if when is not None:
        includes = [t for t in includes if t.get("when") == when]
    assert len(includes) == 1, (role, when)
    return includes[0]


def _role_variables(role: str, facts: dict, **overrides) -> dict:
    """The role's variables on a node with these facts: vars/main.yml, its vars/<OS>.yml, defaults."""
    path = PROJECT / "roles" / role
    layers = [path / "vars" / "main.yml", vars_file(path, facts), path / "defaults" / "main.yml"]
    variables = {}
    for layer in layers:
        variables.update(yaml.safe_load(layer.read_text()) or {})
    return {**variables, **overrides, "ansible_facts": facts}


def _source(role: str, host: str, when: str | None = None, **overrides) -> dict:
    task = _include(role, when)
    assert "apt_vendor_repository_sources_comment" not in task["vars"], role
    variables = _role_variables(role, OS_FACTS[host], **overrides)
    return {key: render(task["vars"][f"apt_vendor_repository_{key}"], **variables) for key in SOURCE_KEYS}


def _preferences(role: str, when: str | None = None) -> str:
    return _include(role, when)["vars"]["apt_vendor_repository_preferences_name"]


# Each role's way to its NVIDIA-repository path, and its include.
NVIDIA_PATHS = {
    "nvidia_driver": ({"nvidia_driver_source": "nvidia"}, None),
    "cuda": ({"cuda_source": "nvidia"}, "cuda_source == 'nvidia'"),
    "cudnn": ({}, None),
    "nccl": ({"nccl_install_from": "repository"}, None),
    "nvidia_fabricmanager": ({}, None),
    "dcgm": ({}, None),
}
# ... and to the distribution's archive components (Debian 13: the default of all three).
ARCHIVE_PATHS = {
    "nvidia_driver": ({"nvidia_driver_source": "distribution"}, None),
    "cuda": ({"cuda_source": "distribution"}, "cuda_source == 'distribution'"),
    "nccl": ({"nccl_install_from": "distribution"}, None),
}


@pytest.mark.parametrize("host", ["debian12", "ubuntu2404"])
def test_every_gpu_role_writes_the_same_nvidia_cuda_source(host):
    sources = {role: _source(role, host, when, **overrides) for role, (overrides, when) in NVIDIA_PATHS.items()}
    first = next(iter(sources.values()))
    assert first["name"] == "nvidia-cuda"
    assert first["url"].strip().startswith("https://developer.download.nvidia.com/compute/cuda/repos/")
    assert all(source == first for source in sources.values()), sources


@pytest.mark.parametrize("host", ["debian13"])
def test_driver_cuda_and_nccl_write_the_same_archive_source(host):
    sources = {role: _source(role, host, when, **overrides) for role, (overrides, when) in ARCHIVE_PATHS.items()}
    expected = {
        "name": "clusterforge-debian-archive",
        "url": "http://deb.debian.org/debian",
        "suites": ["trixie", "trixie-updates"],
        "components": ["contrib", "non-free", "non-free-firmware"],
        "keyring": "/usr/share/keyrings/debian-archive-keyring.gpg",
    }
    assert sources == dict.fromkeys(ARCHIVE_PATHS, expected)


def test_each_role_pins_in_a_file_of_its_own():
    names = [_preferences(role, when) for role, (_, when) in NVIDIA_PATHS.items()]
    assert len(set(names)) == len(names), names
    assert all(name.startswith("clusterforge-") for name in names), names
