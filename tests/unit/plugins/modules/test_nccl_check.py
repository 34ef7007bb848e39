"""nccl_check with run_command mocked: real nccl-tests outputs, single node and across nodes."""

from __future__ import annotations

import pytest

from tests.unit.plugins.module_utils.samples import load

KIND = "nccl_all_reduce_perf"
H100_NODE = load(KIND, "h100-8gpu-single-node-bitdeer.txt")
H100_PAIR = load(KIND, "h100-2node-16gpu-ib-bitdeer.txt")
ROCE_CX5 = load(KIND, "dgx-2node-roce-cx5-k8s-deepops-old-format.txt")
MPIRUN = ["mpirun", "--allow-run-as-root", "-np", "{np}", "-H", "{host_slots}", "-x", "NCCL_DEBUG"]


def test_no_gpu_is_skipped_no_hardware(node, run, plain_pci):
    node.programs = {"all_reduce_perf"}
    done = run("nccl_check", {"pci_root": str(plain_pci)})
    assert not done.failed
    assert done.checks["nccl.all_reduce.run"]["message"] == "skipped: no hardware"
    assert node.calls == []


def test_missing_benchmark_is_skipped_with_its_name(node, run, gpu_pci):
    done = run("nccl_check", {"test": "all_gather", "pci_root": str(gpu_pci)})
    assert not done.failed
    assert done.result["status"] == "skipped"
    assert done.checks["nccl.all_gather.run"]["message"] == "skipped: all_gather_perf not found"


def test_single_node_h100_passes_against_nvlink4(node, run, gpu_pci):
    node.programs = {"all_reduce_perf", "timeout"}
    node.outputs = {"timeout": (0, H100_NODE, "")}
    done = run("nccl_check", {"nvlink_generation": 4, "pci_root": str(gpu_pci), "environment": {"NCCL_DEBUG": "WARN"}})
    assert not done.failed
    assert done.result["status"] == "pass"
    assert done.status("nccl.all_reduce.correctness") == "pass"
    busbw = done.checks["nccl.all_reduce.busbw"]
    assert (busbw["status"], busbw["measured"], busbw["expected"]) == ("pass", 470.73, 360.0)
    assert done.result["busbw"]["reference"] == 450.0
    assert done.result["busbw"]["floor"] == 360.0
    # One process drives the node's 8 GPUs (counted on the PCI bus), under timeout.
    (argv,) = node.calls
    assert argv[:3] == ["/usr/bin/timeout", "--kill-after=30", "900"]
    assert argv[3] == "/usr/bin/all_reduce_perf"
    assert argv[argv.index("-g") + 1] == "8"
    assert argv[argv.index("-c") + 1] == "1"
    assert node.environ[0]["NCCL_DEBUG"] == "WARN" and node.environ[0]["LC_ALL"] == "C"


def test_pair_through_mpirun(node, run, gpu_pci):
    node.programs = {"all_reduce_perf", "mpirun"}
    node.outputs = {"mpirun": (0, H100_PAIR, "")}
    args = {
        "hosts": ["dgx001", "dgx033"],
        "gpus_per_node": 8,
        "launcher": MPIRUN,
        "nvlink_generation": 4,
        "nic_rate_gbps": 400,
        "rails": 8,
        "timeout": 0,
        "pci_root": str(gpu_pci),
    }
    done = run("nccl_check", args)
    assert not done.failed
    assert done.result["label"] == "all_reduce:dgx001+dgx033"
    busbw = done.checks["nccl.all_reduce:dgx001+dgx033.busbw"]
    assert (busbw["status"], busbw["measured"], busbw["expected"]) == ("pass", 468.34, 320.0)
    assert done.result["busbw"]["how"] == "8 rails x 400 Gb/s"
    (argv,) = node.calls
    assert argv[:6] == ["/usr/bin/mpirun", "--allow-run-as-root", "-np", "16", "-H", "dgx001:8,dgx033:8"]
    assert argv[argv.index("-g") + 1] == "1"  # one rank per GPU


def test_slow_pair_fails_the_host(node, run, gpu_pci):
    node.programs = {"all_reduce_perf", "mpirun"}
    node.outputs = {"mpirun": (0, ROCE_CX5, "")}
    args = {"hosts": ["a", "b"], "launcher": MPIRUN, "nic_rate_gbps": 100, "rails": 8, "timeout": 0}
    done = run("nccl_check", {**args, "gpus_per_node": 8, "pci_root": str(gpu_pci)})
    assert done.failed
    assert done.status("nccl.all_reduce:a+b.busbw") == "fail"
    assert "nccl.all_reduce:a+b.busbw" in done.result["msg"]


def test_missing_launcher_is_skipped(node, run, gpu_pci):
    node.programs = {"all_reduce_perf"}
    done = run("nccl_check", {"hosts": ["a", "b"], "launcher": ["srun", "-N", "{nodes}"], "pci_root": str(gpu_pci)})
    assert done.checks["nccl.all_reduce:a+b.run"]["message"] == "skipped: srun not found"


def test_benchmark_error_fails_with_rc(node, run, gpu_pci):
    node.programs = {"all_reduce_perf"}
    failure = "# nThread 1 nGpus 8\ngpu01: Test NCCL failure common.cu:1005 'unhandled system error'\n"
    node.outputs = {"all_reduce_perf": (3, failure, "")}
    done = run("nccl_check", {"timeout": 0, "pci_root": str(gpu_pci)})
    assert done.failed
    assert done.result["rc"] == 3
    assert done.status("nccl.all_reduce.run") == "fail"
    assert "exited 3" in done.checks["nccl.all_reduce.run"]["message"]


def test_a_rank_that_died_fails_quoting_the_reason_from_stdout_and_stderr(node, run, gpu_pci):
    """A real two-node abort (nccl-tests issue 219): nccl-tests' failure line, and mpirun's words on
    stderr; the check quotes the failure with the exit status, never 'not nccl-tests output'."""
    lines = load(KIND, "rtx-a6000-2node-mpirun-nccl-internal-error-nccl-tests-219.txt").splitlines(keepends=True)
    node.programs = {"all_reduce_perf", "mpirun"}
    node.outputs = {"mpirun": (1, "".join(lines[:9]), "".join(lines[9:]))}
    args = {"hosts": ["a", "b"], "launcher": MPIRUN, "gpus_per_node": 2, "timeout": 0, "pci_root": str(gpu_pci)}
    done = run("nccl_check", args)
    check = done.checks["nccl.all_reduce:a+b.run"]
    assert done.failed and (check["status"], check["measured"]) == ("fail", 1)
    assert check["message"].startswith("exited 1: all_reduce_perf: the run failed: fengyun: Test NCCL failure")
    assert "(and 2 more failure lines)" in check["message"]  # the rank's "Test failure" and mpirun's abort
    assert set(done.checks) == {"nccl.all_reduce:a+b.run"}


def test_timeout_is_named(node, run, gpu_pci):
    node.programs = {"all_reduce_perf", "timeout"}
    node.outputs = {"timeout": (124, "", "")}
    done = run("nccl_check", {"timeout": 60, "pci_root": str(gpu_pci)})
    assert "timed out" in done.checks["nccl.all_reduce.run"]["message"]


def test_replay_single_and_pair_recordings(node, run, tmp_path):
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "all_reduce_perf.txt").write_text(H100_NODE)
    (replay / "all_reduce_perf.2node.txt").write_text(H100_PAIR)
    (replay / "all_reduce_perf.gpu01+gpu03.txt").write_text(ROCE_CX5)
    common = {"replay_dir": str(replay), "nvlink_generation": 4, "nic_rate_gbps": 400, "rails": 8}
    single = run("nccl_check", common)
    assert (single.result["source"], single.result["status"]) == ("replay", "pass")
    pair = run("nccl_check", {**common, "hosts": ["gpu01", "gpu02"], "launcher": MPIRUN})
    assert pair.result["status"] == "pass"
    # A recording for these very nodes wins over the generic one.
    bad = run("nccl_check", {**common, "hosts": ["gpu01", "gpu03"], "launcher": MPIRUN})
    assert bad.failed and bad.status("nccl.all_reduce:gpu01+gpu03.busbw") == "fail"
    # No recording for this test: the node has no hardware.
    gather = run("nccl_check", {**common, "test": "all_gather"})
    assert gather.checks["nccl.all_gather.run"]["message"] == "skipped: no hardware"
    assert node.calls == []


@pytest.mark.parametrize("check_mode", [True, False])
def test_check_mode_changes_nothing(node, run, tmp_path, check_mode):
    (tmp_path / "all_reduce_perf.txt").write_text(H100_NODE)
    done = run("nccl_check", {"replay_dir": str(tmp_path), "label": "intra"}, check_mode=check_mode)
    assert done.result["changed"] is False
    assert "nccl.intra.busbw" in done.checks


def test_a_run_across_one_nvlink_domain_s_trays_is_held_to_nvlink_5(node, run, tmp_path):
    """The real full-rack GB200 NVL72 output, replayed as the run of two trays of one domain."""
    (tmp_path / "all_reduce_perf.2node.txt").write_text(load(KIND, "gb200-nvl72-72gpu-one-rack-coreweave-pr43.txt"))
    common = {"replay_dir": str(tmp_path), "hosts": ["gb001", "gb002"], "launcher": MPIRUN, "nvlink_generation": 5}
    domain = run("nccl_check", {**common, "nvlink_domain": True})
    assert domain.result["busbw"]["how"] == "NVLink 5 across one NVLink domain's 2 nodes"
    assert domain.result["busbw"]["floor"] == 720.0 and domain.result["status"] == "pass"
    rails = run("nccl_check", {**common, "nic_rate_gbps": 400, "rails": 4})
    assert rails.result["busbw"]["reference"] == 200.0
