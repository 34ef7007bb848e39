"""ib_bandwidth_check: real ib_write_bw outputs, loopback and client runs (run_command and Popen mocked)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import ClassVar

import pytest

from tests.unit.plugins.module_utils.samples import load

KIND = "ib_write_bw"
CX7 = load(KIND, "roce-400g-cx7-gpudirect-dmabuf-client-gardenlinux.txt")
HDR_LOOPBACK = load(KIND, "ib-loopback-8m-mb-per-sec-server-and-client-superbench.txt")
CX5_WARNING = load(KIND, "roce-100g-cx5-rdma-cm-client-cpufreq-warning-deepops.txt")


class FakeServer:
    started: ClassVar[list[list[str]]] = []

    def __init__(self, argv, **kwargs):
        FakeServer.started.append(list(argv))
        assert kwargs["env"]["LC_ALL"] == "C"

    def wait(self, timeout=None):
        return 0

    def terminate(self):
        raise AssertionError("the server should have ended with the client")


@pytest.fixture
def ib(tmp_path, monkeypatch) -> Path:
    FakeServer.started = []
    monkeypatch.setattr(subprocess, "Popen", FakeServer)
    root = tmp_path / "infiniband"
    (root / "mlx5_0").mkdir(parents=True)
    return root


def test_no_rdma_device_is_no_hardware(node, run, tmp_path):
    node.programs = {"ib_write_bw"}
    done = run("ib_bandwidth_check", {"device": "mlx5_0", "sysfs_root": str(tmp_path / "none")})
    assert (done.failed, done.checks["ib.write_bw.mlx5_0"]["message"]) == (False, "skipped: no hardware")
    assert node.calls == []


def test_absent_device_and_missing_perftest_are_skipped(node, run, ib):
    done = run("ib_bandwidth_check", {"device": "mlx5_3", "sysfs_root": str(ib)})
    assert done.checks["ib.write_bw.mlx5_3"]["message"] == "skipped: mlx5_3 not present"
    done = run("ib_bandwidth_check", {"device": "mlx5_0", "sysfs_root": str(ib)})
    assert done.checks["ib.write_bw.mlx5_0"]["message"] == "skipped: ib_write_bw not found"


def test_loopback_hdr(node, run, ib):
    node.programs = {"ib_write_bw"}
    node.outputs = {"ib_write_bw": (0, HDR_LOOPBACK, "")}
    args = {"device": "mlx5_0", "rate_gbps": 200, "server_delay": 0, "sysfs_root": str(ib)}
    done = run("ib_bandwidth_check", args)
    assert not done.failed
    bandwidth = done.checks["ib.write_bw.mlx5_0"]
    assert (bandwidth["status"], bandwidth["expected"]) == ("pass", 180.0)
    assert done.result["bandwidth_gbps"] == pytest.approx(192.45, abs=0.1)
    (server,) = FakeServer.started
    (client,) = node.calls
    assert client == [*server, "localhost"]
    assert server[:6] == ["/usr/bin/ib_write_bw", "-d", "mlx5_0", "-i", "1", "--report_gbits"]


def test_client_against_a_server_on_roce(node, run, ib):
    node.programs = {"ib_write_bw"}
    node.outputs = {"ib_write_bw": (0, CX7, "")}
    args = {"device": "mlx5_0", "server": "gpu02", "gid_index": 3, "rate_gbps": 400, "sysfs_root": str(ib)}
    done = run("ib_bandwidth_check", args)
    assert done.status("ib.write_bw.mlx5_0") == "pass"  # 368.5 of 400, floor 360
    assert FakeServer.started == []
    (client,) = node.calls
    assert client[-3:] == ["-x", "3", "gpu02"]
    # The same run judged against a 0.95 floor fails.
    done = run("ib_bandwidth_check", {**args, "efficiency_floor": 0.95})
    assert done.failed and done.status("ib.write_bw.mlx5_0") == "fail"


def test_warnings_warn(node, run, tmp_path):
    (tmp_path / "ib_write_bw.mlx5_2.txt").write_text(CX5_WARNING)
    done = run("ib_bandwidth_check", {"device": "mlx5_2", "rate_gbps": 100, "replay_dir": str(tmp_path)})
    assert done.status("ib.write_bw_warnings.mlx5_2") == "warn"
    assert done.result["source"] == "replay"


def test_client_error_fails(node, run, ib):
    node.programs = {"ib_write_bw"}
    node.outputs = {"ib_write_bw": (1, "", " Couldn't connect to gpu02:18515\n")}
    done = run("ib_bandwidth_check", {"device": "mlx5_0", "server": "gpu02", "sysfs_root": str(ib)})
    assert done.failed and done.result["rc"] == 1
    assert "Couldn't connect" in done.checks["ib.write_bw.mlx5_0"]["message"]


def test_replay_without_recording_is_no_hardware(node, run, tmp_path):
    done = run("ib_bandwidth_check", {"device": "mlx5_0", "replay_dir": str(tmp_path)}, check_mode=True)
    assert done.checks["ib.write_bw.mlx5_0"]["message"] == "skipped: no hardware"
    assert done.result["changed"] is False


T4_GPUDIRECT = load(KIND, "roce-25g-t4-gpudirect-use-cuda-sweep-client-gpu-addon.txt")


def test_gpudirect_rail_runs_on_gpu_memory_and_judges_it(node, run, ib):
    """use_cuda adds --use_cuda=N and expects GPU memory: the T4 client passes; the same options on a
    host-memory output (the CX7 log, its CUDA lines cut) fail the memory check though 368 Gb/s is line rate."""
    node.programs = {"ib_write_bw"}
    node.outputs = {"ib_write_bw": (0, T4_GPUDIRECT, "")}
    args = {"device": "mlx5_0", "server": "gpu02", "use_cuda": 0, "use_cuda_dmabuf": True, "rate_gbps": 25}
    args["sysfs_root"] = str(ib)
    done = run("ib_bandwidth_check", args)
    (client,) = node.calls
    assert client[-3:] == ["--use_cuda=0", "--use_cuda_dmabuf", "gpu02"]
    # A check of its own, beside the rail's host-memory run (ib.write_bw.mlx5_0), naming its GPU.
    assert (done.status("ib.write_bw_gpu.mlx5_0"), done.status("ib.write_bw_gpu_memory.mlx5_0")) == ("pass", "pass")
    assert "ib.write_bw.mlx5_0" not in done.checks and done.result["use_cuda"] == 0
    node.calls.clear()
    node.outputs = {"ib_write_bw": (0, CX7, "")}
    done = run("ib_bandwidth_check", {**args, "rate_gbps": 400})
    assert (done.status("ib.write_bw_gpu.mlx5_0"), done.status("ib.write_bw_gpu_memory.mlx5_0")) == ("pass", "fail")
    assert done.failed


def test_a_gpudirect_replay_reads_its_own_recording_never_the_host_memory_one(node, run, tmp_path):
    """ib_write_bw.mlx5_0.txt is the rail's host-memory run: judged as the GPU run it would fail
    the memory check for a run that never happened. Without ib_write_bw_gpu.mlx5_0.txt: no hardware."""
    (tmp_path / "ib_write_bw.mlx5_0.txt").write_text(CX7)
    args = {"device": "mlx5_0", "use_cuda": 1, "rate_gbps": 25, "replay_dir": str(tmp_path)}
    done = run("ib_bandwidth_check", args)
    assert (done.failed, done.checks["ib.write_bw_gpu.mlx5_0"]["message"]) == (False, "skipped: no hardware")
    (tmp_path / "ib_write_bw_gpu.mlx5_0.txt").write_text(T4_GPUDIRECT)
    done = run("ib_bandwidth_check", args)
    assert (done.status("ib.write_bw_gpu.mlx5_0"), done.status("ib.write_bw_gpu_memory.mlx5_0")) == ("pass", "pass")
    assert (done.result["source"], done.result["use_cuda"]) == ("replay", 1)
    # The host-memory run still reads its own.
    done = run("ib_bandwidth_check", {"device": "mlx5_0", "rate_gbps": 400, "replay_dir": str(tmp_path)})
    assert done.status("ib.write_bw.mlx5_0") == "pass" and done.result["use_cuda"] is None


def test_dmabuf_without_a_cuda_device_is_refused(node, run, ib):
    node.programs = {"ib_write_bw"}
    done = run("ib_bandwidth_check", {"device": "mlx5_0", "use_cuda_dmabuf": True, "sysfs_root": str(ib)})
    assert done.failed and "use_cuda_dmabuf needs use_cuda" in done.result["msg"]
    assert node.calls == []
