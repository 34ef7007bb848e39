"""clusterforge_node_check_args: the node checks' options from a host's variables, as validate.yml's."""

from __future__ import annotations

import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.paths import PROJECT, filters, load_plugin

node_check_args = filters("plugins/filter/node_checks.py")["clusterforge_node_check_args"]
TABLE = load_plugin("plugins/filter/node_checks.py").NODE_CHECK_OPTIONS


def _validate_node_check_options() -> dict:
    """validate_node_checks.yml's option -> variable, for each module (options it reads from a host
    variable with `| default(omit)`; require_hardware and replay_dir are validate.yml's own)."""
    tasks = yaml.safe_load((PROJECT / "playbooks" / "tasks" / "validate_node_checks.yml").read_text())
    table = {}
    for task in tasks:
        module = next(key for key in ("gpu_check", "ib_check") if key in task)
        table[module] = {
            option: match.group(1)
            for option, value in task[module].items()
            if (match := re.fullmatch(r"\{\{ (\w+) \| default\(omit\) \}\}", str(value)))
        }
    return table


def test_the_table_is_validate_node_checks_own():
    assert _validate_node_check_options() == TABLE


def test_only_the_variables_a_host_sets_become_options():
    host_vars = {
        "clusterforge_expected_gpus": 8,
        "clusterforge_expected_gpu_model": "NVIDIA H100 80GB HBM3",
        "clusterforge_expected_hca_rates": {"mlx5_0": 400},
        "inventory_hostname": "node01",
    }
    assert node_check_args(host_vars) == {
        "gpu_check": {"expected_gpus": 8, "model": "NVIDIA H100 80GB HBM3"},
        "ib_check": {"expected_hcas": {"mlx5_0": 400}},
    }


def test_a_replay_directory_goes_to_every_module():
    checks = node_check_args({}, replay_dir="/var/lib/replay")
    assert checks == {"gpu_check": {"replay_dir": "/var/lib/replay"}, "ib_check": {"replay_dir": "/var/lib/replay"}}
    assert node_check_args({}, replay_dir="") == {"gpu_check": {}, "ib_check": {}}


def test_something_other_than_host_variables_is_refused():
    with pytest.raises(AnsibleFilterError, match="expected the host's variables"):
        node_check_args(["node01"])
