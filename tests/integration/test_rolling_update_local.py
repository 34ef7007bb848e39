"""playbooks/rolling_update.yml on hosts reached with the local connection, with a fake scontrol
and systemctl (tests/integration/test_node_drain_local.py) and a test stage (role rolled_stage,
given as the registry with -e, its task file in a copy of playbooks/) that changes nothing: a node
whose GPU check fails after the stage stays drained, a node that passes is returned to service,
an administrator's drain stays.
tests/integration/test_rolling_update.py rolls the real base stage on the lab."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.integration.conftest import local_inventory
from tests.integration.test_node_drain_local import (
    ADMIN,
    OURS,
    PROJECT,
    fake_tools,
    play,
    task_results,
    updates,
)
from tests.unit.plugins.module_utils.samples import fixture

# An H100 node whose GPUs report the hardware power brake: gpu_check's throttle check fails.
POWER_BRAKE = fixture("nvidia-smi_query", "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt")
NODES = {
    "node01": {"drain": True, "reason": ADMIN, "jobs": 0},
    "node02": {"drain": False, "reason": "", "jobs": 0},
    "node06": {"drain": False, "reason": "", "jobs": 0},
}
STAGE = {"name": "rolled", "hosts": "all", "roles": ["rolled_stage"], "orchestrator": None}


@pytest.fixture(scope="module")
def rolled(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("rolling-update")
    env = fake_tools(tmp, NODES)
    env["ANSIBLE_ROLES_PATH"] = os.pathsep.join([str(PROJECT / "roles"), str(PROJECT / "tests/integration/roles")])
    replay = tmp / "replay"
    for host in NODES:
        (replay / host).mkdir(parents=True)  # empty: no GPU, no HCA to check ("skipped: no hardware")
    shutil.copy(POWER_BRAKE, replay / "node06" / "nvidia-smi-q.txt")
    inventory = local_inventory(tmp, {"node01": "", "node02": "", "node06": "clusterforge_expected_gpus=8"})
    registry = {"__clusterforge_stages": [STAGE]}
    # The stage's one definition, as the project's stages have theirs (playbooks/stages/<name>.yml),
    # in a copy of the project's playbooks.
    playbooks = tmp / "playbooks"
    shutil.copytree(PROJECT / "playbooks", playbooks)
    (playbooks / "stages" / "rolled.yml").write_text(
        "- name: Rolled stage\n  ansible.builtin.include_role:\n    name: rolled_stage\n"
    )
    # One node a batch, in inventory order: node06 fails last, after the others were rolled.
    return play(
        tmp,
        env,
        inventory,
        playbooks / "rolling_update.yml",
        "-e",
        json.dumps(registry),
        "-e",
        "rolling_update_stage=rolled rolling_update_hosts=all rolling_update_serial=1",
        "-e",
        f"clusterforge_validation_replay_dir={replay}/{{{{ inventory_hostname }}}}",
    )


def test_the_stage_is_applied_to_every_node(rolled):
    applied = task_results(rolled["report"], "Say the stage was applied", role="rolled_stage")
    assert set(applied) == set(NODES), rolled["output"]


def test_a_node_whose_checks_fail_stays_drained(rolled):
    assert rolled["rc"] == 2, rolled["output"]  # node06 failed
    assert updates(rolled["calls"], "node06") == [f"state=drain reason={OURS}"]
    assert rolled["state"]["node06"]["drain"] is True
    kept = task_results(rolled["report"], "Keep the node drained when a node check failed", role=None)
    assert kept["node06"]["failed"] and "node06 stays drained: " in kept["node06"]["msg"]
    assert "throttle" in kept["node06"]["msg"]


def test_a_node_whose_checks_pass_is_returned_to_service(rolled):
    assert updates(rolled["calls"], "node02") == [f"state=drain reason={OURS}", "state=resume"]
    assert rolled["state"]["node02"]["drain"] is False
    kept = task_results(rolled["report"], "Keep the node drained when a node check failed", role=None)
    assert not kept["node02"].get("failed")


def test_an_administrators_drain_survives_the_roll(rolled):
    assert updates(rolled["calls"], "node01") == []
    assert rolled["state"]["node01"] == NODES["node01"]


# A node whose stage asks for a reboot (as nvidia_driver does for a loaded module of another version)
# while rolling_update_allow_reboot is false: no reboot, the roll fails and the node stays drained.
# (The allowed path reboots the machine, which a local host must not do: its conditions are held by
# tests/unit/test_rolling_update_reboot.py.)
@pytest.fixture(scope="module")
def reboot_refused(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("rolling-update-reboot")
    nodes = {"node07": {"drain": False, "reason": "", "jobs": 0}}
    env = fake_tools(tmp, nodes)
    env["ANSIBLE_ROLES_PATH"] = os.pathsep.join([str(PROJECT / "roles"), str(PROJECT / "tests/integration/roles")])
    (tmp / "replay" / "node07").mkdir(parents=True)
    inventory = local_inventory(tmp, {"node07": "clusterforge_reboot_required=true"})
    playbooks = tmp / "playbooks"  # the test stage's definition beside the project's, as in rolled
    shutil.copytree(PROJECT / "playbooks", playbooks)
    (playbooks / "stages" / "rolled.yml").write_text(
        "- name: Rolled stage\n  ansible.builtin.include_role:\n    name: rolled_stage\n"
    )
    return play(
        tmp,
        env,
        inventory,
        playbooks / "rolling_update.yml",
        "-e",
        json.dumps({"__clusterforge_stages": [STAGE]}),
        "-e",
        "rolling_update_stage=rolled rolling_update_hosts=all rolling_update_serial=1",
        "-e",
        f"clusterforge_validation_replay_dir={tmp / 'replay'}/{{{{ inventory_hostname }}}}",
    )


def test_a_required_reboot_that_is_not_allowed_fails_the_node_and_keeps_it_drained(reboot_refused):
    assert reboot_refused["rc"] == 2, reboot_refused["output"]
    rebooted = task_results(
        reboot_refused["report"], "Reboot where the stage requires it and reboots are allowed", role=None
    )
    assert rebooted["node07"].get("skipped") is True
    refused = task_results(reboot_refused["report"], "Fail when a required reboot is not allowed", role=None)
    assert refused["node07"]["failed"]
    assert "needs a reboot to finish the rolled stage" in refused["node07"]["msg"]
    assert updates(reboot_refused["calls"], "node07") == [f"state=drain reason={OURS}"]
    assert reboot_refused["state"]["node07"]["drain"] is True
