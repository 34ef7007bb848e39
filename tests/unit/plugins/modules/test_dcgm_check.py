"""dcgm_check with run_command mocked: real published `dcgmi diag -r` outputs in, verdicts out."""

from __future__ import annotations

from tests.unit.plugins.module_utils.samples import load

R1_FAIL = load("dcgmi_diag", "r1-deployment-fail-deepops.txt")
R1_PASS = load("dcgmi_diag", "r1-deployment-only-pass-deepops.txt")


def test_no_gpu_on_the_bus_is_skipped_no_hardware_and_runs_nothing(node, run, plain_pci):
    node.programs = {"dcgmi"}
    done = run("dcgm_check", {"pci_root": str(plain_pci)})
    assert (done.failed, done.result["status"]) == (False, "skipped")
    assert done.checks["dcgmi"]["message"] == "skipped: no hardware"
    assert node.calls == []


def test_gpus_without_dcgm_are_skipped_with_the_reason(node, run, gpu_pci):
    done = run("dcgm_check", {"pci_root": str(gpu_pci)})
    assert (done.failed, done.result["status"]) == (False, "skipped")
    assert done.checks["dcgmi"]["message"] == "skipped: dcgmi not found (DCGM is not installed)"


def test_a_failed_level_1_diagnostic_fails_the_node_naming_the_tests(node, run, gpu_pci):
    node.programs = {"dcgmi", "timeout"}
    node.outputs = {"timeout --kill-after=10 120 /usr/bin/dcgmi diag -r 1": (226, R1_FAIL, "")}
    done = run("dcgm_check", {"pci_root": str(gpu_pci)})
    assert done.failed
    assert done.result["msg"].startswith("dcgm_check: 5 of 9 checks failed: dcgmi.Persistence Mode: Fail")
    assert done.status("dcgmi.NVML Library") == "pass"
    assert node.calls == [["/usr/bin/timeout", "--kill-after=10", "120", "/usr/bin/dcgmi", "diag", "-r", "1"]]


def test_a_passing_diagnostic_passes_and_the_level_is_passed_on(node, run, gpu_pci):
    node.programs = {"dcgmi"}
    node.outputs = {"dcgmi diag -r 2": (0, R1_PASS, "")}
    done = run("dcgm_check", {"pci_root": str(gpu_pci), "level": 2, "timeout": 0})
    assert (done.failed, done.result["status"]) == (False, "pass")
    assert node.calls == [["/usr/bin/dcgmi", "diag", "-r", "2"]]


def test_a_required_test_that_did_not_run_fails(node, run, gpu_pci):
    node.programs = {"dcgmi"}
    node.outputs = {"dcgmi diag -r 1": (0, R1_PASS, "")}
    done = run("dcgm_check", {"pci_root": str(gpu_pci), "timeout": 0, "required_tests": ["Memory"]})
    assert done.failed
    assert done.checks["dcgmi.Memory"]["message"] == "required test did not run"


def test_dcgmi_that_cannot_reach_the_host_engine_fails_with_its_words(node, run, gpu_pci):
    node.programs = {"dcgmi"}
    error = "Error: unable to establish a connection to the specified host: localhost\n"
    node.outputs = {"dcgmi diag -r 1": (255, "", error)}
    done = run("dcgm_check", {"pci_root": str(gpu_pci), "timeout": 0})
    assert done.failed
    assert done.checks["dcgmi.run"]["message"].startswith("dcgmi diag exited 255: Error: unable to establish")


def test_replay_judges_the_recording_and_runs_nothing(node, run, tmp_path):
    (tmp_path / "dcgmi-diag.txt").write_text(R1_FAIL)
    done = run("dcgm_check", {"replay_dir": str(tmp_path)})
    assert done.failed and done.result["source"] == "replay"
    assert node.calls == []
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run("dcgm_check", {"replay_dir": str(empty)})
    assert (done.failed, done.checks["dcgmi"]["message"]) == (False, "skipped: no hardware")


# --- the burn-in's use (playbooks/acceptance.yml): level 3 or 4, long runs, hardware required ---


def test_gpus_without_dcgmi_fail_when_hardware_is_required(node, run, gpu_pci):
    required = run("dcgm_check", {"pci_root": str(gpu_pci), "require_hardware": True})
    assert required.failed and required.status("dcgmi") == "fail"
    assert required.checks["dcgmi"]["message"] == "dcgmi not found (DCGM is not installed)"


def test_a_level_4_run_passes_and_a_failed_test_at_level_3_fails(node, run, gpu_pci):
    node.programs = {"dcgmi"}
    node.outputs = {"dcgmi diag -r 4": (0, load("dcgmi_diag", "r4-8gpu-legacy-format-pass-gcm.txt"), "")}
    passed = run("dcgm_check", {"pci_root": str(gpu_pci), "level": 4, "timeout": 0})
    assert not passed.failed and passed.result["status"] == "pass" and passed.result["level"] == 4
    node.outputs = {"dcgmi diag -r 3": (226, R1_FAIL, "")}
    failed = run("dcgm_check", {"pci_root": str(gpu_pci), "level": 3, "timeout": 0})
    assert failed.failed and failed.status("dcgmi.Persistence Mode") == "fail"


def test_a_passing_table_with_a_nonzero_exit_fails_the_run(node, run, gpu_pci):
    node.programs = {"dcgmi"}
    node.outputs = {"dcgmi diag -r 3": (124, load("dcgmi_diag", "r4-8gpu-legacy-format-pass-gcm.txt"), "timed out")}
    done = run("dcgm_check", {"pci_root": str(gpu_pci), "level": 3, "timeout": 0})
    assert done.failed and done.status("dcgmi.run") == "fail"
    assert done.checks["dcgmi.run"]["message"] == "dcgmi diag -r 3 exited 124: timed out"


def test_a_recording_of_the_level_wins_over_a_recording_of_any_level(node, run, tmp_path):
    (tmp_path / "dcgmi-diag-r3.txt").write_text(R1_FAIL)
    (tmp_path / "dcgmi-diag.txt").write_text(R1_PASS)
    level_3 = run("dcgm_check", {"replay_dir": str(tmp_path), "level": 3})
    assert level_3.failed and level_3.result["source"] == "replay"
    level_1 = run("dcgm_check", {"replay_dir": str(tmp_path)})
    assert not level_1.failed and level_1.result["status"] == "pass"
    assert node.calls == []
