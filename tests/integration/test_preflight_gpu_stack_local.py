"""playbooks/preflight.yml refuses an impossible GPU software stack, on hosts reached with the local
connection: the role variables and the node type's expectations as the inventory gives them. No
containers, nothing on this machine is changed."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.integration.conftest import local_inventory, local_playbook
from tests.paths import PROJECT

TASK = "gpu_stack_check : Check the GPU software stack is one NVIDIA supports"

# One run, one host per case (INI host variables; quoted so that 12.4 stays text).
HOSTS = {
    # CUDA 12.4 needs 550.54.14 (NVIDIA's CUDA release notes, Table 3): an R535 driver cannot run it.
    "old_driver": "cuda_version='12.4' nvidia_driver_branch=535 nvidia_driver_version='535.104.05'",
    "good": (
        "cuda_version='12.4' nvidia_driver_branch=550 nvidia_driver_version='550.163.01'"
        " nvidia_driver_kernel_module=open cudnn_version='9.1.0' nccl_version='2.22.3'"
        " nvidia_fabricmanager_version='550.163.01'"
        " clusterforge_expected_gpu_model='NVIDIA H100 80GB HBM3' clusterforge_expected_nvlink_generation=4"
        " clusterforge_expected_nvswitch=true"
    ),
    "unset": "",
    # Fabric Manager runs only on NVSwitch nodes: a PCIe node type's pin is not checked.
    "pcie": (
        "nvidia_driver_version='550.163.01' nvidia_fabricmanager_version='550.144.03'"
        " clusterforge_expected_nvswitch=false"
    ),
    # The generation comes from the topology's expectations: a B200 node type needs R570 and open modules.
    "blackwell": (
        "nvidia_driver_branch=565 nvidia_driver_kernel_module=proprietary"
        " clusterforge_expected_gpu_model='NVIDIA B200' clusterforge_expected_nvlink_generation=5"
    ),
}


@pytest.fixture(scope="module")
def preflight(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("preflight-gpu-stack")
    done = local_playbook(tmp_path, PROJECT / "playbooks" / "preflight.yml", local_inventory(tmp_path, HOSTS))
    assert f"TASK [{TASK}]" in done.stdout, done.stdout[-3000:] + done.stderr
    task = done.stdout.split(f"TASK [{TASK}]", 1)[1].split("TASK [", 1)[0]
    return done, " ".join(task.split())


def test_a_driver_too_old_for_cuda_is_refused_naming_both_versions_and_the_minimum(preflight):
    done, task = preflight
    assert done.returncode == 2
    assert "fatal: [old_driver]" in task
    assert (
        "old_driver: this GPU software stack cannot work: CUDA 12.4 needs NVIDIA driver 550.54.14 or newer"
        " (release 12.4.0 in NVIDIA's table); the driver is 535.104.05" in task
    ), task


def test_a_possible_stack_and_an_unset_one_pass(preflight):
    _, task = preflight
    assert sorted(re.findall(r"ok: \[(\w+)\]", task)) == ["good", "pcie", "unset"], task


def test_the_gpu_generation_comes_from_the_node_types_expectations(preflight):
    _, task = preflight
    assert "fatal: [blackwell]" in task
    assert (
        "blackwell: this GPU software stack cannot work: NVIDIA B200 (blackwell) needs driver branch 570 or newer;"
        " the driver branch is 565; NVIDIA B200 (blackwell) needs the open kernel modules;"
        " kernel_modules is proprietary" in task
    ), task


# A role's own check: the role's resolved defaults meet the versions pinned elsewhere. The play is
# what a GPU role does (include gpu_stack_check with its name) with a role default in play vars.
ROLE_CHECK_PLAY = """
- hosts: all
  gather_facts: false
  vars:
    cuda_version: "12.4"
  tasks:
    - ansible.builtin.include_role:
        name: gpu_stack_check
      vars:
        gpu_stack_check_caller: cuda
"""


def test_a_roles_own_check_names_the_role_and_sees_its_defaults(tmp_path):
    playbook = tmp_path / "role_check.yml"
    playbook.write_text(ROLE_CHECK_PLAY)
    inventory = local_inventory(
        tmp_path,
        {"pinned_535": "nvidia_driver_version='535.104.05'", "pinned_550": "nvidia_driver_version='550.163.01'"},
    )
    done = local_playbook(tmp_path, playbook, inventory)
    assert done.returncode == 2, done.stdout[-3000:]
    text = " ".join(done.stdout.split())
    assert "fatal: [pinned_535]" in text and "ok: [pinned_550]" in text, text
    assert "cuda: pinned_535: this GPU software stack cannot work: CUDA 12.4 needs NVIDIA driver 550.54.14" in text


@pytest.mark.parametrize("role", ["nvidia_driver", "cuda", "cudnn", "nccl"])
def test_each_gpu_role_checks_the_stack_before_it_installs(role):
    tasks = yaml.safe_load((PROJECT / "roles" / role / "tasks" / "main.yml").read_text())
    names = [task.get("ansible.builtin.include_role", {}).get("name") or task.get("name") for task in tasks]
    check = names.index("gpu_stack_check")
    install = next(
        i for i, task in enumerate(tasks) if str(task.get("ansible.builtin.include_tasks", "")).startswith("install-")
    )
    assert check < install
    assert tasks[check]["vars"]["gpu_stack_check_caller"] == role
