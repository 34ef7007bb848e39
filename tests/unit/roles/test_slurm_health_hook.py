"""The Slurm health hook's drain and resume decisions: the rendered clusterforge-slurm-health script run
with bash against a fake node state (sinfo, scontrol and systemctl stand-ins on PATH). Molecule's slurm
scenario runs it against a real slurmctld; this is where "never resume an administrator's drain" is held
without one."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.unit.roles.test_slurm import _template

PREFIX = "clusterforge-health:"
BASH = shutil.which("bash")

# sinfo --format='%T|%E' prints the node's state and reason; scontrol update logs its arguments and
# changes the state as slurmctld would; systemctl is-active answers from the state file.
FAKE_SINFO = """#!/usr/bin/env python3
import json, os
node = json.load(open(os.environ["FAKE_NODE"]))
print(node["state"] + "|" + node["reason"])
"""
FAKE_SCONTROL = """#!/usr/bin/env python3
import json, os, sys
path = os.environ["FAKE_NODE"]
node = json.load(open(path))
args = dict(arg.split("=", 1) for arg in sys.argv[2:])
with open(path + ".log", "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if args["state"] == "drain":
    node.update(state="idle+drain" if "drain" not in node["state"] else node["state"], reason=args["reason"])
elif args["state"] == "resume":
    node.update(state=node["state"].replace("+drain", "").replace("drained", "idle"), reason="none")
json.dump(node, open(path, "w"))
"""
FAKE_SYSTEMCTL = """#!/usr/bin/env python3
import json, os, sys
node = json.load(open(os.environ["FAKE_NODE"]))
sys.exit(0 if sys.argv[-1] == "munge" and node["munged"] else 3)
"""


@pytest.fixture(scope="module")
def hook(tmp_path_factory) -> Path:
    """The rendered hook, its PATH line pointed at the fakes first (the only change made to it)."""
    root = tmp_path_factory.mktemp("hook")
    fakes = root / "bin"
    fakes.mkdir()
    for name, text in {"sinfo": FAKE_SINFO, "scontrol": FAKE_SCONTROL, "systemctl": FAKE_SYSTEMCTL}.items():
        (fakes / name).write_text(text)
        (fakes / name).chmod(0o755)
    text = _template(
        "clusterforge-slurm-health.j2",
        clusterforge_expected_gpus=0,
        slurm_health_node_checks=False,
        slurm_health_checks_dir=str(root / "checks.d"),
    )
    assert text.count("\nPATH=/usr/sbin:") == 1, "the hook sets PATH once; the test puts its fakes before it"
    script = root / "clusterforge-slurm-health"
    script.write_text(text.replace("\nPATH=/usr/sbin:", f"\nPATH={fakes}:/usr/sbin:"))
    (root / "checks.d").mkdir()
    return script


def _run(hook: Path, tmp_path: Path, state: str, reason: str, munged: bool = True, failing_check: str = ""):
    checks = hook.parent / "checks.d"
    for old in checks.iterdir():
        old.unlink()
    if failing_check:
        check = checks / "50-disk"
        check.write_text(f"#!/bin/sh\necho '{failing_check}'\nexit 1\n")
        check.chmod(check.stat().st_mode | stat.S_IXUSR)
    node_file = tmp_path / "node.json"
    node_file.write_text(json.dumps({"state": state, "reason": reason, "munged": munged}))
    env = {**os.environ, "FAKE_NODE": str(node_file), "SLURMD_NODENAME": "slurm-node01"}
    result = subprocess.run([BASH, str(hook)], env=env, capture_output=True, text=True, check=False)
    log = Path(f"{node_file}.log")
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, json.loads(node_file.read_text()), calls


def test_a_healthy_node_is_left_alone(hook, tmp_path):
    result, node, calls = _run(hook, tmp_path, "idle", "none")
    assert result.returncode == 0, result.stderr
    assert calls == []
    assert node["state"] == "idle"


def test_a_failing_check_drains_the_node_with_the_hook_s_reason(hook, tmp_path):
    result, node, calls = _run(hook, tmp_path, "idle", "none", failing_check="/scratch is full")
    assert result.returncode == 1
    assert calls == [["update", "nodename=slurm-node01", "state=drain", f"reason={PREFIX} 50-disk: /scratch is full"]]
    assert node["state"] == "idle+drain"


def test_munged_down_drains_the_node(hook, tmp_path):
    result, _, calls = _run(hook, tmp_path, "idle", "none", munged=False)
    assert result.returncode == 1
    assert calls == [
        ["update", "nodename=slurm-node01", "state=drain", f"reason={PREFIX} check_munged: munged is not running"]
    ]


def test_the_hook_resumes_a_drain_it_made_once_the_checks_pass(hook, tmp_path):
    result, node, calls = _run(hook, tmp_path, "idle+drain", f"{PREFIX} check_munged: munged is not running")
    assert result.returncode == 0, result.stderr
    assert calls == [["update", "nodename=slurm-node01", "state=resume"]]
    assert node["state"] == "idle"


@pytest.mark.parametrize("state", ["idle+drain", "drained", "mixed+drain"])
@pytest.mark.parametrize("reason", ["maintenance: replacing DIMM B2", "clusterforge", "health check by admin"])
def test_an_administrator_s_drain_is_never_resumed(hook, tmp_path, state, reason):
    result, node, calls = _run(hook, tmp_path, state, reason)
    assert result.returncode == 0, result.stderr
    assert calls == []
    assert (node["state"], node["reason"]) == (state, reason)


def test_an_administrator_s_drain_reason_is_never_overwritten_by_a_failure(hook, tmp_path):
    result, node, calls = _run(
        hook, tmp_path, "idle+drain", "maintenance: replacing DIMM B2", failing_check="disk full"
    )
    assert result.returncode == 1
    assert calls == []
    assert node["reason"] == "maintenance: replacing DIMM B2"


def test_the_hook_updates_its_own_reason_when_another_check_fails(hook, tmp_path):
    old = f"{PREFIX} check_munged: munged is not running"
    result, node, calls = _run(hook, tmp_path, "idle+drain", old, failing_check="disk full")
    assert result.returncode == 1
    assert calls == [["update", "nodename=slurm-node01", "state=drain", f"reason={PREFIX} 50-disk: disk full"]]
    assert node["reason"] == f"{PREFIX} 50-disk: disk full"


def test_an_unreadable_node_state_is_an_error_not_a_pass(hook, tmp_path):
    sinfo = hook.parent / "bin" / "sinfo"
    working = sinfo.read_text()
    sinfo.write_text("#!/bin/sh\nexit 1\n")  # slurmctld unreachable: sinfo prints nothing
    try:
        result, _, calls = _run(hook, tmp_path, "idle+drain", f"{PREFIX} check_munged: munged is not running")
    finally:
        sinfo.write_text(working)
    assert result.returncode == 2
    assert "cannot read the state of slurm-node01" in result.stderr
    assert calls == []
