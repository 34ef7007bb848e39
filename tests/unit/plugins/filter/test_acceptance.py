"""The acceptance playbook's filters: leaf groups for the NCCL runs, and the per-node step lines."""

from __future__ import annotations

import importlib.util

import pytest
from ansible.errors import AnsibleFilterError

from tests.paths import PROJECT

_spec = importlib.util.spec_from_file_location("acceptance_filters", PROJECT / "plugins" / "filter" / "acceptance.py")
acceptance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(acceptance)


def test_gpu_nodes_of_one_leaf_run_together_and_others_alone():
    placements = {
        "gpu01": {"leaves": ["leaf1"], "pod": None},
        "gpu02": {"leaves": ["leaf2"], "pod": None},
        "gpu03": {"leaves": ["leaf1", "leaf9"], "pod": None},
        "gpu04": {"leaves": [], "pod": None},
    }
    groups = acceptance.leaf_groups(placements, ["head01", "gpu01", "gpu02", "gpu03", "gpu04"])
    assert groups == [
        {"leaf": None, "hosts": ["head01"]},
        {"leaf": "leaf1", "hosts": ["gpu01", "gpu03"]},
        {"leaf": "leaf2", "hosts": ["gpu02"]},
        {"leaf": None, "hosts": ["gpu04"]},
    ]


def test_without_a_topology_every_node_is_alone():
    assert acceptance.leaf_groups({}, ["a", "b"]) == [{"leaf": None, "hosts": ["a"]}, {"leaf": None, "hosts": ["b"]}]


def test_placements_that_are_not_a_mapping_are_refused():
    with pytest.raises(AnsibleFilterError, match="expected the plan's placements"):
        acceptance.leaf_groups(["gpu01"], ["gpu01"])


def test_step_lines_name_each_step_and_its_verdict_and_replayed_ones():
    check = {"check": "x", "status": "fail"}
    records = {
        "node01": [
            {"module": "dcgm_check", "checks": [{"check": "dcgm.present", "status": "skipped"}], "source": "live"},
            {"module": "ib_counters", "checks": [check], "source": "replay"},
        ],
        "node02": [],
    }
    assert acceptance.steps(records) == [
        "node01: dcgm_check skipped, ib_counters fail (replayed)",
        "node02: no step ran",
    ]
