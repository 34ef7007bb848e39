"""`clusterforge run --slices 3` and `--slice I/N` for real, over 13 hosts reached with the local
connection: a Slurm controller and three scalable units of four compute nodes."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clusterforge import errors
from clusterforge.paths import project_dir
from clusterforge.runner import slices
from tests.integration.conftest import run_playbook as run
from tests.unit.clusterforge.runner.test_slices import EXAMPLES, listing_of

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "outcomes.yml"
UNITS = {f"su{unit}": [f"node{(unit - 1) * 4 + n:02d}" for n in range(1, 5)] for unit in (1, 2, 3)}
FAILING = "node06"  # in su2


@pytest.fixture
def env(tmp_path) -> dict:
    return {**os.environ, "CLUSTERFORGE_STATE_DIR": str(tmp_path / "state")}


@pytest.fixture
def hosts(tmp_path) -> Path:
    local = f"ansible_connection=local ansible_python_interpreter={sys.executable} ansible_become=false"
    compute = [host for unit in UNITS.values() for host in unit]
    lines = ["[slurm_controller]", f"head01 {local}", "[compute]"]
    lines += [f"{host} {local} outcome={'fail' if host == FAILING else 'ok'}" for host in compute]
    for unit, members in UNITS.items():
        lines += [f"[{unit}]", *members]
    path = tmp_path / "hosts.ini"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_three_slices_merge_into_one_summary_junit_and_exit_code(hosts, env):
    done = run(env, str(PLAYBOOK), "-i", str(hosts), "--slices", "3", "--json")
    assert done.returncode == errors.EXIT_HOSTS_FAILED, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    run_dir = Path(summary["run_dir"])
    assert json.loads((run_dir / "summary.json").read_text()) == summary
    assert len(summary["hosts"]) == 13
    assert summary["totals"]["failed"] == 1 and summary["hosts"][FAILING]["failed_tasks"][0]["message"] == (
        f"asked to fail on {FAILING}"
    )
    # The controller and one unit in slice 1, a unit in each other slice.
    by_slice = {}
    for entry in summary["slices"]:
        own = json.loads(Path(entry["summary"]).read_text())
        assert Path(entry["run_dir"]).parent == run_dir / "slices"
        assert own["exit_code"] == entry["exit_code"] and own["slices"][0]["slice"] == entry["slice"]
        by_slice[entry["index"]] = set(own["hosts"])
    assert sorted(by_slice) == [1, 2, 3]
    assert set.union(*by_slice.values()) == set(summary["hosts"])
    assert sum(len(found) for found in by_slice.values()) == 13  # disjoint
    assert "head01" in by_slice[1]
    for members in UNITS.values():
        assert sum(1 for found in by_slice.values() if set(members) <= found) == 1
    codes = {entry["index"]: entry["exit_code"] for entry in summary["slices"]}
    failing_slice = next(index for index, found in by_slice.items() if FAILING in found)
    assert codes.pop(failing_slice) == errors.EXIT_HOSTS_FAILED and set(codes.values()) == {errors.EXIT_OK}
    # One JUnit: a test case per host, the failure once.
    suites = ET.parse(summary["junit"]).getroot()
    cases = suites.findall("./testsuite/testcase")
    assert sorted(case.get("name") for case in cases) == sorted(summary["hosts"])
    assert [case.get("name") for case in cases if case.find("failure") is not None] == [FAILING]


def test_one_slice_alone_runs_its_hosts_with_a_record_of_its_own(hosts, env):
    done = run(env, str(PLAYBOOK), "-i", str(hosts), "--slice", "1/3", "--json")
    summary = json.loads(done.stdout)
    assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr
    assert "head01" in summary["hosts"] and FAILING not in summary["hosts"] and len(summary["hosts"]) == 5
    assert summary["slices"] == [{"slice": "1/3", "index": 1, "of": 3, "hosts": 5}]
    # Run with `--limit @FILE`, the file in its run directory.
    limit_file = Path(summary["run_dir"]) / "slice-hosts.txt"
    assert sorted(limit_file.read_text().split()) == sorted(summary["hosts"])


def test_mitogen_strategy_runs_every_slice(hosts, env):
    """--mitogen with --slices: each slice's ansible-playbook ran Mitogen's strategy (ansible-core
    warns of a strategy from outside ansible.builtin) and the merged result is the same."""
    done = run(env, str(PLAYBOOK), "-i", str(hosts), "--slices", "3", "--mitogen", "--json")
    assert done.returncode == errors.EXIT_HOSTS_FAILED, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert len(summary["hosts"]) == 13 and summary["totals"]["failed"] == 1
    for entry in summary["slices"]:
        output = "".join(path.read_text() for path in Path(entry["run_dir"]).glob("artifacts/*/stdout"))
        assert "strategy plugins not included in ansible.builtin are deprecated" in output, output[-2000:]


def test_limit_takes_from_the_slices_and_bad_slices_are_refused(hosts, env):
    done = run(env, str(PLAYBOOK), "-i", str(hosts), "--slices", "3", "--limit", "su1:head01", "--json")
    assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert sorted(summary["hosts"]) == sorted(["head01", *UNITS["su1"]])
    assert [(entry["hosts"], entry["status"]) for entry in summary["slices"]] == [
        (1, "successful"),
        (4, "successful"),
        (0, "no host"),
    ]
    for bad in (["--slices", "0"], ["--slice", "4/3"], ["--slice", "x"], ["--slices", "2", "--slice", "1/2"]):
        refused = run(env, str(PLAYBOOK), "-i", str(hosts), *bad)
        assert refused.returncode == errors.EXIT_USAGE, bad


def test_ansible_inventory_reads_a_topology_as_the_unit_tests_build_it():
    path = EXAMPLES / "h100-superpod.topology.yml"
    read = slices.load_inventory(project_dir(), path)
    built = slices.Inventory.from_list(listing_of(path))
    assert read.hosts == built.hosts
    assert slices.assign(read, 3) == slices.assign(built, 3)
