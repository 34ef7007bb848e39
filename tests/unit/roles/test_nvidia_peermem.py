"""nvidia_peermem's decision, on sysfs trees laid out as the kernel's: the role's own probe script
(tasks/main.yml) run by sh on the tree, its own decision expression templated by Ansible. The lab
has neither GPUs nor an HCA, so the path where the node gets the module is only tested here."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "nvidia_peermem"
TASKS = {task["name"]: task for task in yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())}
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


def _decide(tmp_path, *, groups, rdma=(), modules=()):
    """The skip reason the role reaches on a node with these RDMA devices and loaded modules."""
    rdma_class, sys_module = tmp_path / "infiniband", tmp_path / "module"
    sys_module.mkdir()
    if rdma:
        rdma_class.mkdir()
    for name in rdma:
        (rdma_class / name).symlink_to(tmp_path)  # sysfs class entries are links to the device
    for name in modules:
        (sys_module / name).mkdir()
    probe = TASKS["Read the node's RDMA devices and loaded NVIDIA modules"]["ansible.builtin.command"]["argv"]
    variables = (
        DEFAULTS
        | VARS
        | {
            "group_names": groups,
            "__nvidia_peermem_rdma_class": str(rdma_class),
            "__nvidia_peermem_sys_module": str(sys_module),
        }
    )
    argv = [render(arg, **variables) for arg in probe]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    decision = TASKS["Decide whether the node gets the module"]
    variables["__nvidia_peermem_probe"] = {"stdout_lines": out.splitlines()}
    for name, expression in decision["vars"].items():
        variables[name] = render(expression, **variables)
    facts = decision["ansible.builtin.set_fact"]
    return render(facts["nvidia_peermem_skip_reason"], **variables).strip(), render(
        facts["__nvidia_peermem_loaded"], **variables
    )


def test_a_gpu_node_with_an_hca_and_the_driver_loaded_gets_the_module(tmp_path):
    assert _decide(tmp_path, groups=["gpu", "infiniband"], rdma=["mlx5_0", "mlx5_1"], modules=["nvidia"]) == ("", False)


def test_the_module_already_loaded_is_not_loaded_again(tmp_path):
    reason, loaded = _decide(tmp_path, groups=["gpu"], rdma=["mlx5_0"], modules=["nvidia", "nvidia_peermem"])
    assert (reason, loaded) == ("", True)


@pytest.mark.parametrize(
    ("groups", "rdma", "modules", "reason"),
    [
        (["infiniband"], ["mlx5_0"], ["nvidia"], "not a GPU node (not in the gpu group)"),
        (["gpu"], [], ["nvidia"], "no hardware: no RDMA device ({tmp}/infiniband lists none)"),
        (["gpu"], ["mlx5_0"], [], "no hardware: the nvidia driver is not loaded (no {tmp}/module/nvidia)"),
        # A loaded nouveau or another vendor's module is not the NVIDIA driver.
        (["gpu"], ["mlx5_0"], ["nouveau"], "no hardware: the nvidia driver is not loaded (no {tmp}/module/nvidia)"),
    ],
)
def test_a_node_without_all_three_is_skipped_with_the_first_missing(tmp_path, groups, rdma, modules, reason):
    assert _decide(tmp_path, groups=groups, rdma=rdma, modules=modules)[0] == reason.format(tmp=tmp_path)
