"""The slurm role's prolog and epilog: slurm.conf's Prolog, Epilog, PrologFlags and RebootProgram
lines, the checks each phase runs, and the rendered scripts run by bash against the project's own
node-check runner and bundle (real recorded outputs replayed: no GPU here), with stand-ins for
sinfo and scontrol that record what the script tells slurmctld."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from tests.paths import FIXTURES
from tests.unit.roles.test_slurm import TEMPLATES, _conf, _template, _variables, render
from tests.unit.roles.test_slurm_node_checks import ROLE, RUNNER, bundle  # noqa: F401 (a fixture)

# Real outputs (tests/fixtures, each with its .source): a clean 8-GPU nvidia-smi -q, an H100 node's
# kernel log with Xid 79 (GPU fallen off the bus), and DeepOps' failed `dcgmi diag -r 1`.
HEALTHY_QUERY = FIXTURES / "nvidia-smi_query" / "azure-8gpu-nvidia-smi-q-d-page-retirement-535.86.10.txt"
XID79_LOG = FIXTURES / "kernel_log_xid" / "h100-xid79-fallen-off-bus-sxid20034-gpud.txt"
DCGMI_FAIL = FIXTURES / "dcgmi_diag" / "r1-deployment-fail-deepops.txt"


def test_slurm_conf_names_the_prolog_epilog_and_their_flags():
    lines = _conf(_template("slurm.conf.j2"))
    assert "Prolog=/usr/local/sbin/clusterforge-slurm-prolog" in lines
    assert "Epilog=/usr/local/sbin/clusterforge-slurm-epilog" in lines
    assert "PrologFlags=Alloc,Contain" in lines
    # A failed prolog requeues the job free to run on another node, not held.
    assert "SchedulerParameters=nohold_on_prolog_fail" in lines
    assert not any(line.startswith("RebootProgram=") for line in lines)


def test_empty_variables_leave_the_lines_out():
    text = _template(
        "slurm.conf.j2",
        slurm_prolog="",
        slurm_epilog="",
        slurm_prolog_flags=[],
        slurm_reboot_program="/usr/sbin/reboot",
    )
    lines = _conf(text)
    assert not [line for line in lines if line.startswith(("Prolog", "Epilog", "SchedulerParameters"))]
    assert "RebootProgram=/usr/sbin/reboot" in lines
    held = _conf(_template("slurm.conf.j2", slurm_prolog_failure_hold=True))
    assert not [line for line in held if line.startswith("SchedulerParameters")]


def _job_checks(**overrides) -> dict:
    variables = _variables(**overrides)
    return {item["phase"]: item for item in render(variables["__slurm_job_checks"], **variables)}


def test_the_prolog_runs_the_health_hook_s_checks_and_dcgm_the_epilog_the_gpus():
    checks = _job_checks(slurm_health_node_checks_replay_dir="/var/lib/replay")
    prolog, epilog = checks["prolog"]["checks"], checks["epilog"]["checks"]
    assert sorted(prolog) == ["dcgm_check", "gpu_check", "ib_check"]
    assert prolog["dcgm_check"] == {"level": 1, "replay_dir": "/var/lib/replay"}
    assert prolog["gpu_check"]["expected_gpus"] == 8
    assert epilog == {"gpu_check": prolog["gpu_check"]}
    assert "dcgm_check" not in _job_checks(slurm_prolog_dcgm_diag_level=0)["prolog"]["checks"]


def _script(tmp_path: Path, phase: str, checks: dict, bundle: Path, state: str = "allocated|none") -> Path:  # noqa: F811
    fake = tmp_path / "bin"
    fake.mkdir()
    record = tmp_path / "scontrol.args"
    stand_ins = {
        "sinfo": f"echo {shlex.quote(state)}",
        "scontrol": f'printf "%s\\n" "$@" >> {shlex.quote(str(record))}',
        # The runner as the role installs it: the project's file, run by python3.
        "clusterforge-node-check": f'exec python3 {shlex.quote(str(RUNNER))} "$@"',
    }
    for name, body in stand_ins.items():
        (fake / name).write_text(f"#!/bin/bash\n{body}\n")
        (fake / name).chmod(0o755)
    config = tmp_path / f"{phase}-checks.json"
    config.write_text(json.dumps({"checks": checks}))
    variables = _variables(
        __slurm_node_check_program=str(fake / "clusterforge-node-check"),
        __slurm_node_check_bundle_path=str(bundle),
    )
    item = {"phase": phase, "config": str(config), "checks": checks, "program": "unused"}
    text = render((TEMPLATES / "clusterforge-slurm-jobcheck.j2").read_text(), **variables, item=item)
    # The script sets a fixed PATH (it runs as root under slurmd); the stand-ins go first in it.
    assert "\nPATH=/usr/sbin:/usr/bin:/sbin:/bin\n" in text
    script = tmp_path / phase
    script.write_text(text.replace("\nPATH=/usr/sbin:", f"\nPATH={fake}:/usr/sbin:", 1))
    script.chmod(0o755)
    return script


def _replay(tmp_path: Path, *files: Path) -> str:
    """A replay directory holding the recordings under the names the modules read."""
    names = {HEALTHY_QUERY: "nvidia-smi-q.txt", XID79_LOG: "kernel.log", DCGMI_FAIL: "dcgmi-diag.txt"}
    replay = tmp_path / "replay"
    replay.mkdir()
    for source in files:
        (replay / names[source]).write_text(source.read_text())
    return str(replay)


def _run(script: Path) -> tuple[subprocess.CompletedProcess, list[str], float]:
    start = time.monotonic()
    env = {"SLURMD_NODENAME": "node01"}  # as slurmd sets it for the prolog and epilog
    done = subprocess.run([str(script)], capture_output=True, text=True, timeout=120, check=False, env=env)
    elapsed = time.monotonic() - start
    record = script.parent / "scontrol.args"
    return done, record.read_text().splitlines() if record.exists() else [], elapsed


def test_a_healthy_node_passes_the_prolog_quickly_and_is_left_alone(tmp_path, bundle):  # noqa: F811
    replay = _replay(tmp_path, HEALTHY_QUERY)
    checks = {
        "gpu_check": {"replay_dir": replay},
        "ib_check": {"replay_dir": replay},
        "dcgm_check": {"replay_dir": replay},
    }
    done, scontrol, elapsed = _run(_script(tmp_path, "prolog", checks, bundle))
    assert done.returncode == 0, done.stdout + done.stderr
    assert scontrol == []
    assert elapsed < 10  # the budget for a prolog on a healthy node


def test_a_replayed_xid79_fails_the_prolog_and_drains_the_node_with_the_reason(tmp_path, bundle):  # noqa: F811
    replay = _replay(tmp_path, HEALTHY_QUERY, XID79_LOG)
    checks = {"gpu_check": {"replay_dir": replay}, "ib_check": {"replay_dir": replay}}
    done, scontrol, _ = _run(_script(tmp_path, "prolog", checks, bundle))
    assert done.returncode == 1, done.stdout + done.stderr
    assert scontrol[:3] == ["update", "nodename=node01", "state=drain"]
    reason = scontrol[3]
    assert reason.startswith(
        "reason=clusterforge-prolog: replayed from recorded outputs: gpu_check: 1 of 14 checks failed: gpu.xid: "
    )
    assert "Xid 79 on 0000:91:00" in reason
    # The check's message is cut at 200 characters, after the phase's prefix.
    assert len(reason.removeprefix("reason=clusterforge-prolog: ")) <= 200


def test_a_failed_dcgm_diagnostic_fails_the_prolog(tmp_path, bundle):  # noqa: F811
    replay = _replay(tmp_path, DCGMI_FAIL)
    done, scontrol, _ = _run(_script(tmp_path, "prolog", {"dcgm_check": {"replay_dir": replay}}, bundle))
    assert done.returncode == 1
    assert scontrol[3].startswith(
        "reason=clusterforge-prolog: replayed from recorded outputs: dcgm_check: 5 of 9 checks failed: "
        "dcgmi.Persistence Mode: Fail"
    )


def test_a_gpu_lost_during_the_job_drains_the_node_in_the_epilog(tmp_path, bundle):  # noqa: F811
    replay = _replay(tmp_path, HEALTHY_QUERY, XID79_LOG)
    done, scontrol, _ = _run(_script(tmp_path, "epilog", {"gpu_check": {"replay_dir": replay}}, bundle))
    assert done.returncode == 1
    assert scontrol[3].startswith("reason=clusterforge-epilog: replayed from recorded outputs: gpu_check: ")


def test_an_administrator_s_drain_keeps_its_reason(tmp_path, bundle):  # noqa: F811
    replay = _replay(tmp_path, HEALTHY_QUERY, XID79_LOG)
    script = _script(tmp_path, "epilog", {"gpu_check": {"replay_dir": replay}}, bundle, "draining|admin: memtest")
    done, scontrol, _ = _run(script)
    assert done.returncode == 1
    assert scontrol == []


def test_checks_that_cannot_run_fail_the_phase_with_the_runner_s_words(tmp_path, bundle):  # noqa: F811
    done, scontrol, _ = _run(_script(tmp_path, "prolog", {"nccl_check": {}}, bundle))
    assert done.returncode == 1
    assert scontrol[3] == (
        "reason=clusterforge-prolog: clusterforge-node-check: no module 'nccl_check' in the bundle "
        "(it has ['dcgm_check', 'gpu_check', 'ib_check'])"
    )


@pytest.mark.parametrize("phase", ["prolog", "epilog"])
def test_the_script_says_what_it_is(phase):
    variables = _variables()
    item = {"phase": phase, "config": "/etc/x.json", "checks": {"gpu_check": {}}, "program": "/x"}
    text = render((TEMPLATES / "clusterforge-slurm-jobcheck.j2").read_text(), **variables, item=item)
    assert text.startswith("#!/bin/bash\n# Ansible managed\n")
    assert f'prefix="clusterforge-{phase}:"' in text
    assert str(ROLE) not in text
