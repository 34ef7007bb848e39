"""fabric_check with run_command mocked, and in replay mode: real published `nvidia-smi -q` Fabric
sections in (tests/fixtures/nvidia-smi_fabric, nvidia-smi_query), verdicts and the tray's identity out."""

from __future__ import annotations

import shutil

from tests.unit.plugins.module_utils.samples import fixture, load

# A GB200 tray attached (Completed/Success, clique 2) but Unhealthy (dra-driver issue 626).
UNHEALTHY = load("nvidia-smi_fabric", "gb200-fabric-unhealthy-dra-driver-626.txt")
# A tray whose probe failed: Insufficient Resources, clique 0, the all-zero UUID (azhpc-images PR 506).
NO_DOMAIN = "gb200-fabric-insufficient-resources-azhpc-506.txt"
# An H100 HGX (driver 535): Fabric Completed/Success but no clique or cluster UUID.
H100 = "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt"
TIMEOUT = ["/usr/bin/timeout", "--kill-after=10", "120"]


def test_no_gpu_on_the_bus_is_skipped_no_hardware_and_runs_nothing(node, run, plain_pci):
    node.programs = {"nvidia-smi"}
    done = run("fabric_check", {"pci_root": str(plain_pci)})
    assert (done.failed, done.result["status"]) == (False, "skipped")
    assert {c["message"] for c in done.result["checks"]} == {"skipped: no hardware"}
    assert done.result["identity"] is None and node.calls == []


def test_gpus_without_nvidia_smi_are_skipped_with_the_reason(node, run, gpu_pci):
    done = run("fabric_check", {"pci_root": str(gpu_pci)})
    assert (done.failed, done.result["status"]) == (False, "skipped")
    assert done.checks["gpu.fabric_state"]["message"] == "skipped: nvidia-smi not found"


def test_an_unhealthy_tray_fails_on_health_and_reports_its_domain(node, run, gpu_pci):
    node.programs = {"nvidia-smi", "timeout"}
    node.outputs = {"timeout --kill-after=10 120 /usr/bin/nvidia-smi -q": (0, UNHEALTHY, "")}
    done = run("fabric_check", {"pci_root": str(gpu_pci)})
    assert done.failed and done.result["source"] == "live"
    assert node.calls == [[*TIMEOUT, "/usr/bin/nvidia-smi", "-q"]]
    assert node.environ[0]["LC_ALL"] == "C"
    statuses = {name: check["status"] for name, check in done.checks.items()}
    assert statuses == {"gpu.fabric_state": "pass", "gpu.fabric_domain": "pass", "gpu.fabric_health": "fail"}
    said = "fabric_check: 1 of 3 checks failed: gpu.fabric_health: fabric health summary: #1 Unhealthy"
    assert done.result["msg"] == said
    assert done.result["identity"] == {"clique_id": "2", "cluster_uuid": "dc6e40c4-d722-4357-9ba6-5291dd461278"}
    assert done.result["gpus"][0]["health"] == {"Summary": "Unhealthy", "Bandwidth": "Full"}


def test_an_expected_identity_other_than_the_trays_fails_its_domain_check(node, run, gpu_pci):
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q": (0, UNHEALTHY, "")}
    args = {"pci_root": str(gpu_pci), "timeout": 0, "clique_id": 7, "fabric_health": False}
    done = run("fabric_check", args)
    assert done.failed
    assert done.checks["gpu.fabric_domain"]["message"] == "#1 CliqueId 2, expected the domain's 7"
    assert done.checks["gpu.fabric_health"]["status"] == "skipped"
    matching = run("fabric_check", {**args, "clique_id": 2, "cluster_uuid": "DC6E40C4-D722-4357-9BA6-5291DD461278"})
    assert (matching.failed, matching.result["status"]) == (False, "pass")


def test_a_failed_nvidia_smi_fails_the_state_check_quoting_it(node, run, gpu_pci):
    node.programs = {"nvidia-smi"}
    said = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    node.outputs = {"nvidia-smi -q": (9, said, "")}
    done = run("fabric_check", {"pci_root": str(gpu_pci), "timeout": 0})
    assert done.failed and done.result["rc"] == 9
    assert done.checks["gpu.fabric_state"]["message"] == f"nvidia-smi -q exited 9: {said.strip()}"


def test_replay_judges_the_recording_labels_it_and_runs_nothing(node, run, plain_pci, tmp_path):
    shutil.copy(fixture("nvidia-smi_fabric", NO_DOMAIN), tmp_path / "nvidia-smi-fabric.txt")
    done = run("fabric_check", {"replay_dir": str(tmp_path), "pci_root": str(plain_pci)})
    assert done.failed and done.result["source"] == "replay" and node.calls == []
    assert done.checks["gpu.fabric_state"]["message"] == "fabric registration: #1 Completed/Insufficient Resources"
    assert "in no NVLink domain" in done.checks["gpu.fabric_domain"]["message"]
    assert done.result["identity"] is None  # clique 0 and the all-zero UUID are no domain


def test_replay_without_the_recording_is_no_hardware(node, run, tmp_path):
    done = run("fabric_check", {"replay_dir": str(tmp_path)})
    assert (done.failed, done.result["status"]) == (False, "skipped")
    assert done.checks["gpu.fabric_domain"]["message"] == "skipped: no hardware"
    assert done.result["notes"] == ["replay: no recording of 'nvidia-smi -q'"]


def test_a_whole_h100_query_has_no_nvlink_domain(node, run, tmp_path):
    # nvidia-smi -q of an HGX H100 (535): Completed/Success, but no CliqueId or ClusterUUID.
    done = run("fabric_check", {"replay": {"nvidia-smi -q": str(fixture("nvidia-smi_query", H100))}})
    assert done.failed and done.checks["gpu.fabric_state"]["status"] == "pass"
    assert done.checks["gpu.fabric_domain"]["message"].startswith("00000000:19:00.0 in no NVLink domain")
    assert len(done.result["gpus"]) == 8 and done.result["identity"] is None


def test_check_mode_runs_the_same_check(node, run, gpu_pci):
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q": (0, UNHEALTHY, "")}
    done = run("fabric_check", {"pci_root": str(gpu_pci), "timeout": 0}, check_mode=True)
    assert done.failed and done.result["changed"] is False and len(node.calls) == 1
