"""The Slurm health hook on careless and hostile checks: the rendered hook runs for real against a
checks directory of its own, with stand-ins for sinfo, scontrol and systemctl that record what the
hook tells slurmctld (the reason is the observable)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.unit.roles.test_slurm import TEMPLATES, _variables, render

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the hook runs checks only from a root-owned directory")


def _hook(tmp_path: Path, checks: dict[str, str], timeout: int = 1) -> Path:
    checks_dir = tmp_path / "checks"
    checks_dir.mkdir(mode=0o755)
    for name, body in checks.items():
        path = checks_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    fake = tmp_path / "bin"
    fake.mkdir()
    record = tmp_path / "scontrol.args"
    stand_ins = {
        "sinfo": "echo 'idle|none'",
        "systemctl": "exit 0",
        "scontrol": f'printf "%s\\n" "$@" >> {shlex.quote(str(record))}',
    }
    for name, body in stand_ins.items():
        (fake / name).write_text(f"#!/bin/bash\n{body}\n")
        (fake / name).chmod(0o755)
    text = render(
        (TEMPLATES / "clusterforge-slurm-health.j2").read_text(),
        **_variables(
            slurm_health_checks_dir=str(checks_dir),
            slurm_health_node_checks=False,
            slurm_health_check_timeout=timeout,
            clusterforge_expected_gpus=0,
        ),
    )
    # The hook sets a fixed PATH (it runs as root under slurmd); the stand-ins go first in it.
    assert "\nPATH=/usr/sbin:/usr/bin:/sbin:/bin\n" in text
    text = text.replace("\nPATH=/usr/sbin:", f"\nPATH={fake}:/usr/sbin:", 1)
    hook = tmp_path / "hook"
    hook.write_text(text)
    hook.chmod(0o755)
    return hook


def _reason(tmp_path: Path, hook: Path) -> str:
    done = subprocess.run([str(hook)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    args = (tmp_path / "scontrol.args").read_text().splitlines()
    return next(arg for arg in args if arg.startswith("reason=")).removeprefix("reason=")


def test_a_silent_failing_check_is_named_with_its_exit_status(tmp_path):
    reason = _reason(tmp_path, _hook(tmp_path, {"10-silent": "exit 3"}))
    assert reason == "clusterforge-health: 10-silent: failed with exit status 3 and no output"


def test_a_timed_out_check_is_named_with_the_timeout(tmp_path):
    reason = _reason(tmp_path, _hook(tmp_path, {"20-slow": "sleep 30"}, timeout=1))
    assert reason == "clusterforge-health: 20-slow: timed out after 1 s"


def test_escape_and_carriage_return_sequences_never_reach_scontrol(tmp_path):
    body = r"printf 'disk \033[31mRED\033[0m bad\rOK fine\033]0;title\007 end\n'; exit 1"
    reason = _reason(tmp_path, _hook(tmp_path, {"30-noisy": body}))
    assert not any(ord(char) < 32 or ord(char) == 127 for char in reason), repr(reason)
    assert reason.startswith("clusterforge-health: 30-noisy: disk RED bad")
    assert "[31m" not in reason


@pytest.mark.parametrize("target", ["directory", "check"])
def test_checks_anyone_but_root_could_write_are_not_run(tmp_path, target):
    marker = tmp_path / "ran"
    hook = _hook(tmp_path, {"40-check": f"touch {shlex.quote(str(marker))}; exit 0"})
    (tmp_path / "checks" if target == "directory" else tmp_path / "checks" / "40-check").chmod(0o777)
    reason = _reason(tmp_path, hook)
    assert not marker.exists()
    assert "not root-owned or" in reason and "writable" in reason


def test_a_check_owned_by_another_user_is_not_run(tmp_path):
    marker = tmp_path / "ran"
    hook = _hook(tmp_path, {"50-check": f"touch {shlex.quote(str(marker))}; exit 0"})
    os.chown(tmp_path / "checks" / "50-check", 65534, 65534)
    reason = _reason(tmp_path, hook)
    assert not marker.exists()
    assert reason == "clusterforge-health: 50-check: not run: not root-owned or group- or world-writable"


def test_a_linked_check_is_judged_by_the_file_it_runs(tmp_path):
    target = tmp_path / "target-check"
    target.write_text("#!/bin/bash\necho linked check ran; exit 5\n")
    target.chmod(0o755)
    hook = _hook(tmp_path, {})
    (tmp_path / "checks" / "60-linked").symlink_to(target)
    assert _reason(tmp_path, hook) == "clusterforge-health: 60-linked: linked check ran"
    target.chmod(0o777)
    (tmp_path / "scontrol.args").unlink()
    assert "60-linked: not run" in _reason(tmp_path, hook)
