"""imex_channels makes real character device nodes (os.mknod, as root) in a temporary directory, with the
major read from a real /proc/devices output; imex_busy asks squeue and nvidia-smi (run_command mocked
with real outputs: this project's Slurm's squeue, a published nvidia-smi) and holds a restart while
either says a job runs or cannot tell."""

from __future__ import annotations

import os
import stat

import pytest

from tests.unit.plugins.module_utils.samples import fixture, load

GUIDE = fixture("proc_devices", "cuda-guide-grep-nvidia-imex-234-nvswitch-509.txt")
NO_DRIVER = fixture("proc_devices", "lab-host-no-nvidia-driver.txt")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")


@pytest.fixture
def run(node, run):
    """The module runner with exit_json/fail_json caught (the node fixture patches them)."""
    return run


def channels(run, tmp_path, **args):
    return run("imex_channels", {"count": 2, "driver_loaded": True, "proc_devices": str(GUIDE),
                                 "directory": str(tmp_path / "imex"), **args})  # fmt: skip


@needs_root
def test_channels_are_made_with_the_major_of_proc_devices_then_left_alone(run, tmp_path):
    first = channels(run, tmp_path)
    assert not first.failed and first.result["changed"] and first.result["major"] == 234
    for minor in (0, 1):
        info = os.lstat(tmp_path / "imex" / f"channel{minor}")
        assert stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) == 234 and os.minor(info.st_rdev) == minor
        assert stat.S_IMODE(info.st_mode) == 0o666
    again = channels(run, tmp_path)
    assert not again.result["changed"] and again.result["made"] == []


@needs_root
def test_a_node_of_another_major_or_mode_is_replaced(run, tmp_path):
    (tmp_path / "imex").mkdir()
    os.mknod(tmp_path / "imex" / "channel0", stat.S_IFCHR | 0o600, os.makedev(511, 0))  # nvidia-caps' major
    outcome = channels(run, tmp_path, count=1)
    assert outcome.result["made"] == [str(tmp_path / "imex" / "channel0")]
    info = os.lstat(tmp_path / "imex" / "channel0")
    assert os.major(info.st_rdev) == 234 and stat.S_IMODE(info.st_mode) == 0o666


def test_check_mode_reports_and_makes_nothing(run, tmp_path):
    outcome = run("imex_channels", {"count": 1, "driver_loaded": True, "proc_devices": str(GUIDE),
                                    "directory": str(tmp_path / "imex")}, check_mode=True)  # fmt: skip
    assert outcome.result["changed"] and outcome.result["made"] == [str(tmp_path / "imex" / "channel0")]
    assert not (tmp_path / "imex").exists()


@pytest.mark.parametrize(
    "args,skip",
    [
        ({"driver_loaded": False}, "the NVIDIA driver is not loaded"),
        ({"proc_devices": str(NO_DRIVER)}, "registers no nvidia-caps-imex-channels"),
    ],
)
def test_no_hardware_is_a_skip_that_makes_nothing(run, tmp_path, args, skip):
    outcome = channels(run, tmp_path, **args)
    assert not outcome.failed and not outcome.result["changed"]
    assert outcome.result["msg"].startswith("skipped: no hardware") and skip in outcome.result["msg"]
    assert not (tmp_path / "imex").exists()


@pytest.mark.parametrize(
    "args,message",
    [({"count": 2049}, "count: expected 0 to 2048"), ({"count": -1}, "count: expected"), ({"mode": "rw"}, "mode:")],
)
def test_bad_input_is_refused_naming_the_field(run, tmp_path, args, message):
    outcome = channels(run, tmp_path, **args)
    assert outcome.failed and message in outcome.result["msg"]


RUNNING = load("squeue", "bob-sleep-job-running.txt")
EMPTY = load("squeue", "empty-queue.txt")
APPS = load("nvidia-smi_compute_apps", "vgpu-host-3-apps-gpu-uuid-name-dcgm-exporter-94.txt")
FAILED = load("nvidia-smi_query", "driver-not-loaded-nvidia-smi-has-failed.txt")
SQUEUE = "squeue --all --nodelist nvt03 --states=RUNNING,COMPLETING --format=%i|%u|%a|%q|%T"
SMI = "nvidia-smi --query-compute-apps=gpu_uuid,name --format=csv"


def busy(node, run, driver_loaded=True):
    return run("imex_busy", {"node": "nvt03", "driver_loaded": driver_loaded}).result


def test_a_running_slurm_job_holds_the_restart(node, run):
    node.programs = {"squeue", "nvidia-smi"}
    node.outputs = {SQUEUE: (0, RUNNING, ""), SMI: (0, APPS.splitlines()[0] + "\n", "")}
    result = busy(node, run)
    assert result["busy"] and result["reasons"] == ["Slurm job 10 (bob) is RUNNING"]
    assert result["asked"] == ["squeue", "nvidia-smi"] and not result["changed"]
    assert all(env["LC_ALL"] == "C" for env in node.environ)


def test_compute_processes_hold_the_restart_without_slurm(node, run):
    node.programs = {"nvidia-smi"}
    node.outputs = {SMI: (0, APPS, "")}
    result = busy(node, run)
    assert result["busy"] and len(result["reasons"]) == 3 and result["asked"] == ["nvidia-smi"]


def test_an_idle_tray_is_not_busy_and_nvidia_smi_is_not_asked_without_a_driver(node, run):
    node.programs = {"squeue", "nvidia-smi"}
    node.outputs = {SQUEUE: (0, EMPTY, "")}
    result = busy(node, run, driver_loaded=False)
    assert not result["busy"] and result["reasons"] == [] and result["asked"] == ["squeue"]


def test_a_tool_that_cannot_tell_holds_the_restart(node, run):
    node.programs = {"squeue", "nvidia-smi"}
    node.outputs = {
        SQUEUE: (1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"),
        SMI: (9, FAILED, ""),
    }
    result = busy(node, run)
    assert result["busy"]
    assert result["reasons"][0] == (
        "cannot tell whether a job runs: squeue exited 1: slurm_load_jobs error: Unable to contact slurm controller "
        "(connect failure)"
    )
    assert "nvidia-smi exited 9: NVIDIA-SMI has failed" in result["reasons"][1]


def test_with_neither_tool_nothing_can_see_a_job(node, run):
    result = busy(node, run)
    assert not result["busy"] and result["asked"] == [] and node.calls == []


def test_a_node_name_that_is_no_host_name_is_refused(node, run):
    outcome = run("imex_busy", {"node": "nvt03 --all", "driver_loaded": True})
    assert outcome.failed and "node: expected a Slurm node name" in outcome.result["msg"]


def test_a_node_slurm_does_not_know_has_no_slurm_job(node, run):
    # What the real squeue 24.11 prints for it (tests/integration/test_imex_busy_lab.py asserts the same there).
    node.programs = {"squeue"}
    node.outputs = {SQUEUE: (1, "", "squeue: error: Invalid node name nvt03\n")}
    result = busy(node, run)
    assert not result["busy"] and result["asked"] == ["squeue"]
