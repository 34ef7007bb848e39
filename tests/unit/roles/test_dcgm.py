"""dcgm: the NVIDIA repository each supported release resolves to, the override from the
nvidia_driver role's repository, the input checks and the probe parsing, evaluated by Ansible's own
templating."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import OS_FACTS as FACTS
from tests.unit.roles.harness import render, vars_file

ROLE = PROJECT / "roles" / "dcgm"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
BASE = "https://developer.download.nvidia.com/compute/cuda/repos"


def _task(name: str) -> dict:
    return next(task for task in TASKS if task["name"] == name)


def resolve(host: str, expression: str, **overrides):
    facts = FACTS[host]
    os_vars = yaml.safe_load(vars_file(ROLE, facts).read_text())
    variables = {**ROLE_VARS, **os_vars, **DEFAULTS, **overrides, "ansible_facts": facts}
    return render(expression, **variables)


@pytest.mark.parametrize(
    ("host", "repo"),
    [("debian13", "debian12"), ("debian12", "debian12"), ("ubuntu2204", "ubuntu2204"), ("ubuntu2404", "ubuntu2404")],
)
def test_each_release_installs_from_nvidia_s_repository_for_it(host, repo):
    assert resolve(host, "{{ dcgm_repo_url }}") == f"{BASE}/{repo}/x86_64/"
    assert resolve(host, "{{ dcgm_repo_key_url }}") == f"{BASE}/{repo}/x86_64/3bf863cc.pub"
    assert resolve(host, "{{ dcgm_repo_key_fingerprint }}") == "EB693B3035CD5710E231E123A4B469963BF863CC"
    assert resolve(host, "{{ dcgm_package }}={{ dcgm_version }}") == "datacenter-gpu-manager=1:3.3.5"


def test_the_nvidia_driver_role_s_repository_is_followed_where_set():
    mirror = "http://mirror.example/cuda/debian12/x86_64/"
    assert resolve("debian13", "{{ dcgm_repo_url }}", nvidia_driver_cuda_repo_url=mirror) == mirror


def test_unsupported_releases_are_refused():
    check = _task("Check the release is one the role installs on")["ansible.builtin.assert"]
    for facts, supported in (
        ({"distribution": "Debian", "distribution_major_version": "13"}, True),
        ({"distribution": "Ubuntu", "distribution_major_version": "20"}, False),
        ({"distribution": "Rocky", "distribution_major_version": "9"}, False),
    ):
        assert render("{{ " + check["that"] + " }}", ansible_facts=facts, **ROLE_VARS) is supported


@pytest.mark.parametrize(
    ("overrides", "valid"),
    [
        ({}, True),
        ({"dcgm_version": "3.3.5"}, True),
        ({"dcgm_version": "latest"}, False),
        ({"dcgm_version": "1:3.3.5; rm -rf /"}, False),
        ({"dcgm_repo_url": "ftp://x/"}, False),
        ({"dcgm_gpu_dir": "proc/driver"}, False),
    ],
)
def test_the_inputs_are_checked(overrides, valid):
    that = _task("Validate the package, version and repository")["ansible.builtin.assert"]["that"]
    verdicts = [resolve("debian13", "{{ " + condition + " }}", **overrides) for condition in that]
    assert all(verdicts) is valid


@pytest.mark.parametrize(
    ("stdout", "installed", "gpus"),
    [
        ("", "", "0"),
        ("pkg|1:3.3.5\n", "1:3.3.5", "0"),
        ("pkg|1:3.3.6\ngpu|0000:19:00.0\ngpu|0000:3b:00.0\n", "1:3.3.6", "2"),
    ],
)
def test_the_probe_reads_the_installed_version_and_the_gpus(stdout, installed, gpus):
    noted = _task("Note what the node has")["ansible.builtin.set_fact"]
    probe = {"stdout_lines": stdout.splitlines()}
    assert render(noted["__dcgm_installed"], __dcgm_probe=probe) == installed
    assert str(render(noted["__dcgm_gpus"], __dcgm_probe=probe)) == gpus
