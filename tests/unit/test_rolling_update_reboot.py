"""playbooks/rolling_update.yml's reboot path, its conditions evaluated by Ansible's own templating: a node
is rebooted only when a stage asked for it (clusterforge_reboot_required) and rolling_update_allow_reboot
says yes; asked for but not allowed, the node fails and stays drained. The reboot itself cannot run here
(the lab's nodes are containers; tests/integration/test_rolling_update_local.py runs the not-allowed path)."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render

PLAY = yaml.safe_load((PROJECT / "playbooks" / "rolling_update.yml").read_text())[0]
POST = {task["name"]: task for task in PLAY["post_tasks"]}


def _when(task: str, **variables) -> bool:
    conditions = POST[task]["when"]
    conditions = conditions if isinstance(conditions, list) else [conditions]
    return all(render("{{ (%s) | bool }}" % condition, **variables) for condition in conditions)  # noqa: UP031 jinja braces


@pytest.mark.parametrize(
    ("variables", "reboots", "fails"),
    [
        ({}, False, False),  # nothing asked for a reboot
        ({"clusterforge_reboot_required": False, "rolling_update_allow_reboot": True}, False, False),
        ({"clusterforge_reboot_required": True}, False, True),  # asked for, not allowed by default
        ({"clusterforge_reboot_required": True, "rolling_update_allow_reboot": False}, False, True),
        ({"clusterforge_reboot_required": True, "rolling_update_allow_reboot": True}, True, False),
        # -e gives strings: "false" is false.
        ({"clusterforge_reboot_required": "true", "rolling_update_allow_reboot": "false"}, False, True),
    ],
)
def test_a_node_is_rebooted_only_when_a_stage_asks_and_reboots_are_allowed(variables, reboots, fails):
    assert _when("Reboot where the stage requires it and reboots are allowed", **variables) is reboots
    assert _when("Fail when a required reboot is not allowed", **variables) is fails


def test_the_kernel_facts_are_read_again_only_after_a_reboot():
    task = "Gather the kernel facts again after the reboot"
    assert _when(task, __rolling_update_reboot={"rebooted": True}) is True
    assert _when(task, __rolling_update_reboot={"skipped": True}) is False


def test_the_reboot_comes_before_the_node_s_checks_and_its_return_to_service():
    names = list(POST)
    reboot = names.index("Reboot where the stage requires it and reboots are allowed")
    assert (
        reboot
        < names.index("Fail when a required reboot is not allowed")
        < names.index("Check the node's services came up")
    )
