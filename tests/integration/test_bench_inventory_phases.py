"""bench/inventory_phases.py times ansible-inventory's phases without changing its output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.paths import PROJECT

EXAMPLE = PROJECT / "inventories" / "examples" / "pcie-roce-small.topology.yml"


def run(*command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")}
    return subprocess.run(command, capture_output=True, text=True, cwd=PROJECT, env=env, check=False)


def test_phases_are_timed_and_the_inventory_is_unchanged(tmp_path):
    phases_file = tmp_path / "phases.json"
    timed = run(sys.executable, "bench/inventory_phases.py", str(phases_file), "-i", str(EXAMPLE), "--list")
    plain = run(str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(EXAMPLE), "--list")
    assert timed.returncode == 0, timed.stderr
    assert json.loads(timed.stdout) == json.loads(plain.stdout)
    phases = json.loads(phases_file.read_text())
    assert set(phases) == {"parse_sources_s", "host_vars_s", "json_s", "total_s"}
    assert phases["total_s"] >= phases["parse_sources_s"] + phases["host_vars_s"] + phases["json_s"] - 0.02


def test_a_failing_inventory_keeps_its_exit_code(tmp_path):
    broken = tmp_path / "broken.topology.yml"
    broken.write_text(EXAMPLE.read_text().replace("plugin: topology", "plugin: topology\nunknown_field: 1"))
    done = run(sys.executable, "bench/inventory_phases.py", str(tmp_path / "p.json"), "-i", str(broken), "--list")
    assert done.returncode != 0
    assert "unknown_field" in done.stderr
