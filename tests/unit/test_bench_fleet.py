"""bench/fleet.py's measurement helpers."""

from __future__ import annotations

import importlib.util
import sys

import psutil
import pytest

from tests.paths import PROJECT


@pytest.fixture(scope="module")
def fleet():
    spec = importlib.util.spec_from_file_location("fleet", PROJECT / "bench" / "fleet.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["fleet"] = module
    spec.loader.exec_module(module)
    return module


class FakeProcess:
    def __init__(self, pss, error=None):
        self.pss, self.error = pss, error

    def memory_full_info(self):
        if self.error:
            raise self.error
        return type("Info", (), {"pss": self.pss})()


def test_pss_sums_the_tree_and_skips_processes_that_ended(fleet):
    tree = [FakeProcess(100), FakeProcess(50), FakeProcess(0, psutil.NoSuchProcess(1)), FakeProcess(7)]
    assert fleet.pss_of_tree(tree) == 157


def test_per_stage_sums_plays_of_a_stage_and_counts_tasks_per_host(fleet):
    plays = [
        {
            "play": "a",
            "tasks": {"n1": 3, "n2": 2},
            "changed": {"n1": 1},
            "wall_s": 1,
            "main_cpu_s": 1,
            "children_cpu_s": 2,
        },
        {"play": "b", "tasks": {"n1": 4, "n2": 4}, "changed": {}, "wall_s": 1, "main_cpu_s": 1, "children_cpu_s": 1},
        {"play": "c", "tasks": {"n1": 5}, "changed": {}, "wall_s": 1, "main_cpu_s": 0, "children_cpu_s": 1},
    ]
    stages = fleet.per_stage(plays, {"a": "validate", "b": "validate", "c": "base"})
    assert stages["validate"]["host_tasks"] == 13
    assert (stages["validate"]["min_per_host"], stages["validate"]["max_per_host"]) == (6, 7)
    assert stages["validate"]["changed"] == 1
    assert fleet.stage_cpu(stages["validate"]) == 5
    assert stages["base"]["host_tasks"] == 5


def test_every_stage_play_maps_to_its_stage(fleet):
    mapping = fleet.stage_of_plays(PROJECT)
    assert mapping["Preflight checks on every node"] == "preflight"
    assert "validate" in mapping.values()
