"""dnf_vendor_repository: its input validation, the name-version-release specs, the .repo
definition it renders, the module-stream detection and the stale versionlock entries, evaluated
with Ansible's own templating. The role has not run on an EL node (no RHEL image in the lab)."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "dnf_vendor_repository"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())

RHEL9 = "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/"
# NVIDIA's RPM key D42D0685 (see roles/nvidia_driver/vars/RedHat.yml for the source).
NVIDIA_RPM_KEY = "610C7B14E068A878070DA4E99CD0A493D42D0685"
NCCL = {
    "dnf_vendor_repository_caller": "nccl",
    "dnf_vendor_repository_fingerprint_variable": "nccl_repo_key_fingerprint",
    "dnf_vendor_repository_label": "NCCL",
    "dnf_vendor_repository_name": "cuda-rhel9-x86_64",
    "dnf_vendor_repository_url": RHEL9,
    "dnf_vendor_repository_key_url": RHEL9 + "D42D0685.pub",
    "dnf_vendor_repository_key_fingerprint": NVIDIA_RPM_KEY,
    "dnf_vendor_repository_packages": {"libnccl": "2.22.3-1+cuda12.4", "libnccl-devel": "2.22.3-1+cuda12.4"},
}


def _render(expression, variables):
    return render(expression, **variables)


def _variables(**overrides) -> dict:
    return {**DEFAULTS, **ROLE_VARS, **NCCL, **overrides}


def _task(name: str) -> dict:
    return next(task for task in TASKS if task["name"] == name)


def _holds(task_name: str, **overrides) -> bool:
    task = _task(task_name)
    variables = {**_variables(**overrides), **task.get("vars", {})}
    that = task["ansible.builtin.assert"]["that"]
    return all(_render("{{ " + c + " }}", variables) for c in ([that] if isinstance(that, str) else that))


@pytest.mark.parametrize(
    ("override", "accepted"),
    [
        ({}, True),
        ({"dnf_vendor_repository_key_fingerprint": "610C 7B14 E068 A878 070D  A4E9 9CD0 A493 D42D 0685"}, True),
        ({"dnf_vendor_repository_key_fingerprint": ""}, False),
        ({"dnf_vendor_repository_key_fingerprint": "D42D0685"}, False),
        ({"dnf_vendor_repository_packages": {"nvidia-driver": "3:550.163.01-1.el9"}}, True),
        ({"dnf_vendor_repository_packages": {"libnccl": "latest"}}, False),
        ({"dnf_vendor_repository_packages": {"libnccl": "2.22.3"}}, False),  # no release: not exact
        ({"dnf_vendor_repository_packages": {}}, False),
        ({"dnf_vendor_repository_packages": ["libnccl"]}, False),
        ({"dnf_vendor_repository_module_stream": "nvidia-driver:550-dkms"}, True),
        ({"dnf_vendor_repository_module_stream": "nvidia-driver:550-open"}, True),
        ({"dnf_vendor_repository_module_stream": "nvidia-driver"}, False),
        ({"dnf_vendor_repository_name": "../cuda"}, False),
        ({"dnf_vendor_repository_url": "developer.download.nvidia.com/rhel9"}, False),
    ],
)
def test_inputs(override, accepted):
    assert _holds("Validate the role's inputs", **override) is accepted


def test_the_refusals_name_the_callers_variable():
    task = _task("Validate the role's inputs")["ansible.builtin.assert"]
    message = _render(task["fail_msg"], _variables(dnf_vendor_repository_key_fingerprint="D42D0685"))
    assert message.startswith("nccl: ")
    assert 'nccl_repo_key_fingerprint as 40 hex digits (is "D42D0685")' in message
    refusal = _task("Refuse a key whose fingerprint is not {{ dnf_vendor_repository_fingerprint_variable }}")
    assert "refusing to trust it" in refusal["ansible.builtin.assert"]["fail_msg"]


@pytest.mark.parametrize(
    ("key_file", "accepted"),
    [
        ("/etc/pki/rpm-gpg/RPM-GPG-KEY-cuda-rhel9-x86_64", True),
        ("/etc/pki/rpm-gpg", False),
        ("/etc/pki/rpm-gpg/../../passwd", False),
    ],
)
def test_key_file_stays_under_rpm_gpg(key_file, accepted):
    assert _holds("Refuse a key file outside /etc/pki/rpm-gpg", dnf_vendor_repository_key_file=key_file) is accepted


def test_packages_are_installed_as_name_version_release():
    assert _render("{{ __dnf_vendor_repository_specs }}", _variables()) == [
        "libnccl-2.22.3-1+cuda12.4",
        "libnccl-devel-2.22.3-1+cuda12.4",
    ]


def test_install_and_lock_tasks():
    install = _task("Install the packages at their exact versions")["ansible.builtin.dnf"]
    assert install["allow_downgrade"] is True
    assert install["disable_plugin"] == ["versionlock"]
    lock = _task("Lock the packages at their versions")["community.general.dnf_versionlock"]
    variables = _variables()
    assert _render(lock["name"], variables) == ["libnccl-2.22.3-1+cuda12.4", "libnccl-devel-2.22.3-1+cuda12.4"]
    assert _render(lock["state"], variables) == "present"
    released = _variables(dnf_vendor_repository_versionlock=False)
    assert _render(lock["name"], released) == ["libnccl", "libnccl-devel"]
    assert _render(lock["state"], released) == "absent"


def test_repository_definition_for_nvidia_rhel9():
    args = _task("Add the repository")["ansible.builtin.yum_repository"]
    rendered = {key: _render(value, _variables()) for key, value in args.items()}
    assert rendered == {
        "name": "cuda-rhel9-x86_64",
        "file": "cuda-rhel9-x86_64",
        "description": "cuda-rhel9-x86_64, managed by clusterforge",
        "baseurl": RHEL9,
        "gpgcheck": True,
        "repo_gpgcheck": True,
        "gpgkey": "file:///etc/pki/rpm-gpg/RPM-GPG-KEY-cuda-rhel9-x86_64",
        "enabled": True,
        "owner": "root",
        "group": "root",
        "mode": "0644",
    }
    key = _task("Import the key into rpm's database")["ansible.builtin.rpm_key"]
    spaced = _variables(dnf_vendor_repository_key_fingerprint="610c 7b14 e068 a878 070d a4e9 9cd0 a493 d42d 0685")
    assert _render(key["fingerprint"], spaced) == NVIDIA_RPM_KEY


DNF_MODULE_LIST = {
    "none": "",
    "550-dkms": (
        "Name          Stream        Profiles                Summary\n"
        "nvidia-driver 550-dkms [e]  default [d], fm, ks, src Nvidia driver for 550-dkms branch\n"
    ),
    "550-open": "nvidia-driver 550-open [e]  default [d], fm, ks, src Nvidia driver for 550-open branch\n",
    "550-dkms-next": "nvidia-driver 550-dkms-next [e] default [d] a stream whose name starts the same\n",
}


@pytest.mark.parametrize(
    ("listed", "enabled", "other"),
    [("none", False, False), ("550-dkms", True, False), ("550-open", False, True), ("550-dkms-next", False, True)],
)
def test_stream_detection(listed, enabled, other):
    task = _task("Note whether the module stream needs enabling")
    variables = {
        **_variables(dnf_vendor_repository_module_stream="nvidia-driver:550-dkms"),
        **task["vars"],
        "__dnf_vendor_repository_streams": {"stdout": DNF_MODULE_LIST[listed]},
    }
    facts = task["ansible.builtin.set_fact"]
    assert _render(facts["__dnf_vendor_repository_stream_enabled"], variables) is enabled
    assert _render(facts["__dnf_vendor_repository_stream_other"], variables) is other


def test_no_stream_needs_no_enabling():
    task = _task("Note whether the module stream needs enabling")
    variables = {**_variables(), **task["vars"]}
    assert _render(task["ansible.builtin.set_fact"]["__dnf_vendor_repository_stream_enabled"], variables) is True


@pytest.mark.parametrize(
    ("locklist", "stale"),
    [
        (["libnccl-0:2.22.3-1+cuda12.4.*", "libnccl-devel-0:2.22.3-1+cuda12.4.*", "bash-0:5.1.8-9.el9.*"], []),
        (
            [
                "libnccl-0:2.21.5-1+cuda12.4.*",
                "libnccl-0:2.22.3-1+cuda12.4.*",
                "libnccl-devel-0:2.21.5-1+cuda12.4.*",
                "libnccl-devel-0:2.22.3-1+cuda12.4.*",
                "libnccl-extra-0:1.0-1.*",
            ],
            ["libnccl-0:2.21.5-1+cuda12.4.*", "libnccl-devel-0:2.21.5-1+cuda12.4.*"],
        ),
    ],
)
def test_a_version_move_drops_the_old_locks_only(locklist, stale):
    task = _task("Drop the locks of versions no longer pinned")
    variables = {**_variables(), **task["vars"], "__dnf_vendor_repository_lock": {"locklist_post": locklist}}
    assert _render("{{ __dnf_vendor_repository_stale }}", variables) == stale


def test_epoch_in_the_pinned_version_matches_the_locklist():
    task = _task("Drop the locks of versions no longer pinned")
    packages = {"nvidia-driver": "3:550.163.01-1.el9"}
    locklist = ["nvidia-driver-3:550.163.01-1.el9.*", "nvidia-driver-3:550.144.03-1.el9.*"]
    variables = {
        **_variables(dnf_vendor_repository_packages=packages),
        **task["vars"],
        "__dnf_vendor_repository_lock": {"locklist_post": locklist},
    }
    assert _render("{{ __dnf_vendor_repository_stale }}", variables) == ["nvidia-driver-3:550.144.03-1.el9.*"]
