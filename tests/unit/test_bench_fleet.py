"""bench/fleet.py's measurement helpers and clusterforge.runner.mitogen's environment."""

from __future__ import annotations

import importlib.util
import sys

import psutil
import pytest

from clusterforge.errors import UsageError
from clusterforge.runner import mitogen
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


def test_mitogen_environment_names_its_linear_strategy():
    if importlib.util.find_spec("ansible_mitogen") is None:
        pytest.skip("mitogen not installed (pip install 'clusterforge[mitogen]')")
    env = mitogen.environment()
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (mitogen.strategy_plugins() / "mitogen_linear.py").is_file()
    assert env["ANSIBLE_STRATEGY_PLUGINS"] == str(mitogen.strategy_plugins())


def test_mitogen_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(mitogen.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"mitogen package is not installed"):
        mitogen.environment()
