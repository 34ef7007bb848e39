"""bench/fleet.py's measurement helpers."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_plays_map_to_stages_in_the_registry_layout_before_the_constants_role(fleet, tmp_path):
    """--before reads a commit whose stage registry was playbooks/vars/stages.yml."""
    (tmp_path / "playbooks" / "vars").mkdir(parents=True)
    (tmp_path / "playbooks" / "vars" / "stages.yml").write_text("clusterforge_stages: [{name: gpu}]\n")
    (tmp_path / "playbooks" / "gpu.yml").write_text("- {name: GPU play, hosts: compute}\n")
    assert fleet.stage_of_plays(tmp_path) == {"GPU play": "gpu"}


def test_tasks_per_host_shows_a_range_only_when_hosts_differ(fleet):
    assert fleet.tasks_per_host(None) == "0"
    assert fleet.tasks_per_host({"hosts": 2, "min_per_host": 5, "max_per_host": 5}) == "5"
    assert fleet.tasks_per_host({"hosts": 3, "min_per_host": 4, "max_per_host": 9}) == "4-9"


def test_a_setting_keeps_the_projects_callbacks_but_those_left_out(fleet, tmp_path):
    project = PROJECT / "ansible.cfg"
    every = ["ansible.posix.profile_tasks", "fork_warmup", "accelerate", "fleet_tasks"]
    assert fleet.callbacks_enabled(project) == every
    assert fleet.callbacks_enabled(project, without=("fork_warmup",)) == [every[0], *every[2:]]
    env = fleet.environment(tmp_path, project, {}, ("fork_warmup",), "topology,yaml")
    assert env["ANSIBLE_CALLBACKS_ENABLED"] == "ansible.posix.profile_tasks,accelerate,fleet_tasks"
    assert env["ANSIBLE_INVENTORY_ENABLED"] == "topology,yaml"
    # The project's callback directory first: fork_warmup is found wherever it is enabled.
    assert env["ANSIBLE_CALLBACK_PLUGINS"].split(":")[0] == str(PROJECT / "plugins/callback")
    stock = fleet.environment(tmp_path, tmp_path / "stock.cfg", {})
    assert stock["ANSIBLE_CALLBACKS_ENABLED"] == "fleet_tasks"
    accelerated = fleet.environment(tmp_path, project, fleet.ACCELERATED)
    assert accelerated["CLUSTERFORGE_ACCELERATE"] == "1"


def test_stock_writes_config_files_with_builtin_template_and_the_project_with_config_file(fleet, tmp_path):
    project = fleet.environment(tmp_path, PROJECT / "ansible.cfg", {})
    assert project["ANSIBLE_ACTION_PLUGINS"] == str(PROJECT / "plugins/action")
    stock = fleet.environment(tmp_path, tmp_path / "stock.cfg", fleet.BUILTIN_FILES)
    assert (Path(stock["ANSIBLE_ACTION_PLUGINS"]) / "config_file.py").is_file()
    assert Path(stock["ANSIBLE_ACTION_PLUGINS"]) != PROJECT / "plugins/action"


def test_the_callback_writes_a_file_per_process_into_a_directory(tmp_path):
    """bench/slices.py's way: each slice's ansible-playbook writes PID.json with its plays and its
    own CPU."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- name: Two steps\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: One\n      ansible.builtin.set_fact:\n        one: 1\n"
        "    - name: Two\n      ansible.builtin.set_fact:\n        two: 2\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    env = {
        **os.environ,
        "ANSIBLE_CALLBACK_PLUGINS": str(PROJECT / "bench/fleet_plugins/callback"),
        "ANSIBLE_CALLBACKS_ENABLED": "fleet_tasks",
        "FLEET_TASKS_OUT": str(out),
    }
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    done = subprocess.run([str(ansible_playbook), str(playbook)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (written,) = out.glob("*.json")
    recorded = json.loads(written.read_text())
    assert written.stem.isdigit()
    assert [play["tasks"] for play in recorded["plays"]] == [{"localhost": 2}]
    assert recorded["main_cpu_s"] >= sum(play["main_cpu_s"] for play in recorded["plays"]) > 0


def test_a_failed_run_is_reported_by_its_fatal_lines_not_the_timing_at_its_end(fleet, tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "TASK [apt] ***\n"
        'fatal: [node00001]: FAILED! => {"msg": "AttributeError: _module_fqn"}\n'
        "PLAY RECAP ***\n" + "os_tuning : Some task ---- 0.21s\n" * 30
    )
    assert fleet.failure_lines(log) == 'fatal: [node00001]: FAILED! => {"msg": "AttributeError: _module_fqn"}'
    quiet = tmp_path / "quiet.log"
    quiet.write_text("".join(f"line {n}\n" for n in range(20)))
    assert fleet.failure_lines(quiet, limit=2) == "line 18\nline 19"


def test_of_repeated_runs_the_one_with_least_cpu_is_kept(fleet):
    first, noisy, quiet = {"cpu_s": 10.0}, {"cpu_s": 12.0}, {"cpu_s": 9.0}
    assert fleet.least_cpu(None, first) is first
    assert fleet.least_cpu(first, noisy) is first
    assert fleet.least_cpu(first, quiet) is quiet


def test_the_marginal_run_keeps_the_head_and_one_compute_node(fleet):
    assert fleet.fewer_nodes({"node03", "head01", "node01", "node02"}) == ["head01", "node01"]
    with pytest.raises(SystemExit, match="2 or more compute nodes, this one has 1"):
        fleet.fewer_nodes({"head01", "node01"})


def test_the_marginal_cost_is_the_difference_per_added_host_task(fleet):
    few = {"host_tasks": 400, "cpu_s": 30.0, "main_cpu_s": 9.0}
    full = {"host_tasks": 900, "cpu_s": 55.0, "main_cpu_s": 15.0}
    assert fleet.marginal(few, full) == {
        "host_tasks": 500,
        "cpu_s": 25.0,
        "main_cpu_s": 6.0,
        "cpu_ms": 50.0,
        "main_cpu_ms": 12.0,
    }
    with pytest.raises(SystemExit, match="fewer nodes ran 900 host-tasks, all nodes 900"):
        fleet.marginal(full, full)
    # The paper estimate takes the marginal figures when given them.
    lines = fleet.estimate({**full, "wall_s": 1, "peak_pss_mib": 1}, hosts=3, per_task=fleet.marginal(few, full))
    assert lines[0].startswith("10,000 nodes x 300 tasks = 3,000,000 host-tasks: controller CPU 41.7 core-hours")
