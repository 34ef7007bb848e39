"""DOCA-OFED's reboot decision: plugins/filter/rdma.py, and roles/rdma/tasks/doca.yml's tasks that read
the probe and act on the decision, evaluated by Ansible's own templating. Molecule cannot reach a real
reboot or a real mlx5_core (a lab node is a container of a kernel without RDMA), so this is where
reboot-or-not is held."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader

from tests.paths import PROJECT, filters
from tests.unit.roles.harness import render

filter_loader.add_directory(str(PROJECT / "plugins" / "filter"))
rdma_reboot = filters("plugins/filter/rdma.py")["clusterforge_rdma_reboot"]
TASKS = {task["name"]: task for task in yaml.safe_load((PROJECT / "roles/rdma/tasks/doca.yml").read_text())}

BUILT = "25.10-1.7.2"


def _decide(built=BUILT, **overrides):
    arguments = {"loaded": True, "loaded_version": "25.10-1.7.1", "changed": False, "allow": True}
    return rdma_reboot(built, **(arguments | {"in_container": False} | overrides))


@pytest.mark.parametrize(
    ("built", "case", "reasons"),
    [
        # Nothing loaded (no HCA, or the stack not started yet): the next load takes the new module.
        (BUILT, {"loaded": False, "loaded_version": "", "changed": True}, []),
        (BUILT, {"loaded_version": BUILT}, []),
        (BUILT, {}, ["the loaded mlx5_core is 25.10-1.7.1, DOCA-OFED's built module 25.10-1.7.2"]),
        # The kernel's own mlx5_core has no version: DOCA's module is not the one running.
        (
            BUILT,
            {"loaded_version": ""},
            ["the loaded mlx5_core is the kernel's own (no version), DOCA-OFED's built module 25.10-1.7.2"],
        ),
        # The built module cannot be read (DKMS built nothing readable): only a change in this run counts.
        ("", {"changed": True}, ["DOCA-OFED's packages changed while mlx5_core 25.10-1.7.1 is loaded"]),
        ("", {"changed": False}, []),
        ("", {"changed": True, "loaded": False, "loaded_version": ""}, []),
    ],
)
def test_a_reboot_is_needed_when_the_loaded_mlx5_core_is_not_doca_s_built_one(built, case, reasons):
    decision = _decide(built, **case)
    assert decision["reasons"] == reasons
    assert decision["now"] is bool(reasons)


@pytest.mark.parametrize(
    ("allow", "in_container", "why"),
    [
        (False, False, "rdma_allow_reboot is false"),
        (True, True, "a container is not rebooted"),
        (False, True, "a container is not rebooted"),
    ],
)
def test_a_needed_reboot_not_allowed_or_in_a_container_is_reported_not_done(allow, in_container, why):
    decision = _decide(allow=allow, in_container=in_container)
    assert decision["now"] is False
    assert decision["skipped"] == (
        "skipped: reboot: the loaded mlx5_core is 25.10-1.7.1, DOCA-OFED's built module 25.10-1.7.2; "
        f"{why} (clusterforge_reboot_required is set)"
    )


def test_nothing_is_reported_when_no_reboot_is_needed_or_it_is_done():
    assert _decide(loaded_version=BUILT)["skipped"] == ""
    assert _decide()["skipped"] == ""


def test_a_version_that_is_not_a_string_is_a_clear_error():
    with pytest.raises(AnsibleFilterError, match="expected the built module's version as a string"):
        rdma_reboot(None, loaded=True, loaded_version="", changed=False, allow=False, in_container=False)


def _when(task: str, **variables) -> bool:
    conditions = TASKS[task]["when"]
    conditions = conditions if isinstance(conditions, list) else [conditions]
    return all(render("{{ (%s) | bool }}" % condition, **variables) for condition in conditions)  # noqa: UP031 jinja braces


def _decided(stdout: str, changed: bool = False, **overrides) -> dict:
    """doca.yml's decision over the probe's output, as its set_fact renders it."""
    decide = TASKS["Decide whether the node needs a reboot for DOCA-OFED's modules"]
    variables = {
        "__rdma_doca_probe_raw": {"stdout_lines": stdout.splitlines()},
        "apt_vendor_repository_install_result": {"changed": changed},
        "rdma_allow_reboot": True,
        "clusterforge_in_container": False,
    } | overrides
    for name, expression in decide["vars"].items():
        variables[name] = render(expression, **variables)
    variables["__rdma_doca_reboot"] = render(decide["ansible.builtin.set_fact"]["__rdma_doca_reboot"], **variables)
    return variables


@pytest.mark.parametrize(
    ("stdout", "changed", "overrides", "asks", "reboots"),
    [
        # The probe's lines as the role's shell writes them.
        ("built=", True, {}, False, False),  # nothing loaded
        ("loaded=1\nloaded_version=25.10-1.7.1\nbuilt=25.10-1.7.2", False, {}, True, True),
        ("loaded=1\nloaded_version=25.10-1.7.2\nbuilt=25.10-1.7.2", True, {}, False, False),
        ("loaded=1\nbuilt=25.10-1.7.2", False, {}, True, True),  # the kernel's own mlx5_core
        ("loaded=1\nloaded_version=25.10-1.7.1\nbuilt=", True, {}, True, True),
        ("loaded=1\nloaded_version=25.10-1.7.1\nbuilt=", False, {}, False, False),
        ("loaded=1\nloaded_version=25.10-1.7.1\nbuilt=25.10-1.7.2", False, {"rdma_allow_reboot": False}, True, False),
        (
            "loaded=1\nloaded_version=25.10-1.7.1\nbuilt=25.10-1.7.2",
            False,
            {"clusterforge_in_container": True},
            True,
            False,
        ),
    ],
)
def test_the_role_asks_for_and_does_the_reboot_as_decided(stdout, changed, overrides, asks, reboots):
    variables = _decided(stdout, changed, **overrides)
    assert _when("Ask for a reboot in the run summary", **variables) is asks
    assert _when("Reboot for DOCA-OFED's kernel modules", **variables) is reboots
    report = render(
        TASKS["Note the reboot left undone"]["ansible.builtin.set_fact"]["rdma_reboot_skipped"], **variables
    )
    assert bool(report) is (asks and not reboots)
