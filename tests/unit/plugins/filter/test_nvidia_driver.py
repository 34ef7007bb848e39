"""The driver's reboot decision: plugins/filter/nvidia_driver.py, and roles/nvidia_driver/tasks/module.yml's
tasks that act on it, evaluated by Ansible's own templating. Molecule cannot reach a real reboot (a lab
node is a container, and it has no GPU), so this is where reboot-or-not is held."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader

from tests.paths import PROJECT, filters
from tests.unit.roles.harness import render

filter_loader.add_directory(str(PROJECT / "plugins" / "filter"))
driver_reboot = filters("plugins/filter/nvidia_driver.py")["clusterforge_driver_reboot"]
TASKS = {task["name"]: task for task in yaml.safe_load((PROJECT / "roles/nvidia_driver/tasks/module.yml").read_text())}

GPU = ["0000:17:00.0"]
INSTALLED = "550.163.01-2"


def _decide(**overrides):
    arguments = {"gpus": GPU, "nouveau_loaded": False, "loaded": "", "allow": True, "in_container": False}
    return driver_reboot(INSTALLED, **(arguments | overrides))


@pytest.mark.parametrize(
    ("case", "reasons"),
    [
        ({}, []),  # nothing loaded yet: the module is loaded, no reboot
        ({"loaded": "550.163.01"}, []),  # the installed version is the loaded one
        ({"loaded": "535.247.01"}, ["the loaded nvidia module is 535.247.01, the installed driver 550.163.01"]),
        ({"nouveau_loaded": True}, ["nouveau is loaded and holds the GPUs"]),
        ({"nouveau_loaded": True, "gpus": []}, []),  # nouveau without an NVIDIA GPU holds nothing of ours
        (
            {"nouveau_loaded": True, "loaded": "535.247.01"},
            [
                "nouveau is loaded and holds the GPUs",
                "the loaded nvidia module is 535.247.01, the installed driver 550.163.01",
            ],
        ),
    ],
)
def test_a_reboot_is_needed_for_nouveau_or_a_loaded_module_of_another_version(case, reasons):
    decision = _decide(**case)
    assert decision["reasons"] == reasons
    assert decision["now"] is bool(reasons)


@pytest.mark.parametrize("installed", ["550.163.01-2", "1:550.163.01-2", "550.163.01-4~bpo13+1", "550.163.01"])
def test_the_package_epoch_and_revision_are_not_part_of_the_module_version(installed):
    assert driver_reboot(installed, GPU, False, "550.163.01", True, False)["reasons"] == []


@pytest.mark.parametrize(
    ("allow", "in_container", "why"),
    [
        (False, False, "nvidia_driver_allow_reboot is false"),
        (True, True, "a container is not rebooted"),
        (False, True, "a container is not rebooted"),
    ],
)
def test_a_needed_reboot_not_allowed_or_in_a_container_is_reported_not_done(allow, in_container, why):
    decision = _decide(loaded="535.247.01", allow=allow, in_container=in_container)
    assert decision["now"] is False
    assert decision["skipped"] == (
        "skipped: reboot: the loaded nvidia module is 535.247.01, the installed driver 550.163.01; "
        f"{why} (clusterforge_reboot_required is set)"
    )


def test_nothing_is_reported_when_no_reboot_is_needed_or_it_is_done():
    assert _decide()["skipped"] == ""
    assert _decide(loaded="535.247.01")["skipped"] == ""


def test_a_missing_version_is_a_clear_error():
    with pytest.raises(AnsibleFilterError, match="expected the driver's package version"):
        driver_reboot("", GPU, False, "", True, False)


def _when(task: str, **variables) -> bool:
    conditions = TASKS[task]["when"]
    conditions = conditions if isinstance(conditions, list) else [conditions]
    return all(render("{{ (%s) | bool }}" % condition, **variables) for condition in conditions)  # noqa: UP031 jinja braces


def _role_variables(**overrides) -> dict:
    """The role's variables as module.yml sees them, its decision rendered from its own set_fact."""
    variables = {
        "nvidia_driver_version": INSTALLED,
        "__nvidia_driver_gpus": GPU,
        "__nvidia_driver_nouveau_loaded": False,
        "__nvidia_driver_loaded": "",
        "nvidia_driver_allow_reboot": True,
        "__nvidia_driver_in_container": False,
    } | overrides
    decide = TASKS["Decide whether the node needs a reboot for the driver"]["ansible.builtin.set_fact"]
    variables["__nvidia_driver_reboot"] = render(decide["__nvidia_driver_reboot"], **variables)
    return variables


@pytest.mark.parametrize(
    ("overrides", "asks", "reboots"),
    [
        ({}, False, False),
        ({"__nvidia_driver_loaded": "550.163.01"}, False, False),
        ({"__nvidia_driver_loaded": "535.247.01"}, True, True),
        ({"__nvidia_driver_loaded": "535.247.01", "nvidia_driver_allow_reboot": False}, True, False),
        ({"__nvidia_driver_loaded": "535.247.01", "__nvidia_driver_in_container": True}, True, False),
        ({"__nvidia_driver_nouveau_loaded": True}, True, True),
    ],
)
def test_the_role_asks_for_and_does_the_reboot_as_decided(overrides, asks, reboots):
    variables = _role_variables(**overrides)
    assert _when("Ask for a reboot in the run summary", **variables) is asks
    assert _when("Reboot for the driver", **variables) is reboots
    # nvidia-persistenced is started only on a node that needs no reboot.
    starts = _when(
        "Start nvidia-persistenced on a GPU host",
        **variables,
        nvidia_driver_persistenced=True,
        ansible_check_mode=False,
    )
    assert starts is not asks
