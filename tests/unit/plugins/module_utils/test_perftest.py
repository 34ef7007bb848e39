from __future__ import annotations

import pytest
from ansible.module_utils import ib_judge
from ansible.module_utils.perftest import PerftestParseError, parse_perftest
from ansible.module_utils.verdicts import FAIL, PASS, WARN, ToolFailed

from .samples import load, names

KIND = "ib_write_bw"

# runs, device, link type, qps, unit, (bytes, iterations, peak, average, msg rate), Gb/s, warnings
TABLE = {
    "ib-loopback-8m-mb-per-sec-server-and-client-superbench.txt": (
        2, "ib0", "IB", "1", "MB/sec", (8388608, 20000, 24056.74, 24056.72, 0.003007), 192.45, 0),
    "roce-100g-4qp-rdma-cm-client-oci.txt": (
        1, "mlx5_5", "Ethernet", "4", "Gb/sec", (65536, 20000, 98.01, 98.01, 0.186932), 98.01, 0),
    "roce-100g-cx5-rdma-cm-client-cpufreq-warning-deepops.txt": (
        1, "mlx5_0", "Ethernet", "1", "Gb/sec", (65536, 5000, 92.42, 92.40, 0.176230), 92.40, 1),
    "roce-400g-cx7-gpudirect-dmabuf-client-gardenlinux.txt": (
        1, "mlx5_0", "Ethernet", "1", "Gb/sec", (65536, 5000, 368.67, 368.48, 0.702829), 368.48, 0),
    # Sweep (-a): the last row here; the best average (131072 bytes) is the one judged.
    "roce-25g-t4-gpudirect-use-cuda-sweep-client-gpu-addon.txt": (
        1, "mlx5_0", "Ethernet", "2", "Gb/sec", (8388608, 10000, 23.01, 22.99, 0.000343), 23.22, 0),
    "roce-a40-gpudirect-dmabuf-16qp-client-nvidia-tools-image.txt": (
        1, "mlx5_1", "Ethernet", "16", "Gb/sec", (65536, 10384867, 0.00, 181.46, 0.346100), 181.46, 0),
}  # fmt: skip
# Result rows of a run where not one (a sweep).
ROWS = {"roce-25g-t4-gpudirect-use-cuda-sweep-client-gpu-addon.txt": 23}
# The CUDA device whose memory a run used (perftest's CUDA set-up lines); None: host memory. The
# gardenlinux client ran with --use_cuda_dmabuf, but its author published it without those lines.
GPU = {
    "ib-loopback-8m-mb-per-sec-server-and-client-superbench.txt": None,
    "roce-100g-4qp-rdma-cm-client-oci.txt": None,
    "roce-100g-cx5-rdma-cm-client-cpufreq-warning-deepops.txt": None,
    "roce-400g-cx7-gpudirect-dmabuf-client-gardenlinux.txt": None,
    "roce-25g-t4-gpudirect-use-cuda-sweep-client-gpu-addon.txt": "Tesla T4",
    "roce-a40-gpudirect-dmabuf-16qp-client-nvidia-tools-image.txt": "NVIDIA A40",
}

# (expected link rate Gb/s, bandwidth verdict, warnings verdict)
JUDGED = {
    "ib-loopback-8m-mb-per-sec-server-and-client-superbench.txt": (200, PASS, PASS),
    "roce-100g-4qp-rdma-cm-client-oci.txt": (100, PASS, PASS),
    "roce-100g-cx5-rdma-cm-client-cpufreq-warning-deepops.txt": (100, PASS, WARN),
    "roce-400g-cx7-gpudirect-dmabuf-client-gardenlinux.txt": (400, PASS, PASS),
    "roce-25g-t4-gpudirect-use-cuda-sweep-client-gpu-addon.txt": (25, PASS, PASS),
    # The log prints no link rate; 200 Gb/s is the test's assumption (181.46 is 91% of it).
    "roce-a40-gpudirect-dmabuf-16qp-client-nvidia-tools-image.txt": (200, PASS, PASS),
}


# Runs that failed before their first result row, the line each must quote and where it is.
FAILED_RUNS = {
    "couldnt-connect-socket-client-perftest-228.txt": ("Couldn't connect to 192.168.125.211:18515", 1),
    # The server's first error names the function that failed; the lines after it follow from it.
    "ib-read-bw-server-couldnt-read-remote-address-sparkrdma-31.txt": (
        "ethernet_read_keys: Couldn't read remote address",
        20,
    ),
}
# Clients that printed rows, then perftest's own error: (line of the error, the reason in full).
ABORTED_RUNS = {
    "roce-h200-gke-sweep-completion-error-after-65536-dranet.txt": (
        41,
        "the test failed on mlx5_3 after its 65536-byte row (381.41 Gb/s average so far): "
        "Completion with error at client; Failed status 10: wr_id 0 syndrom 0x88",
    ),
}


def test_tables_cover_every_fixture():
    assert set(TABLE) | set(FAILED_RUNS) | set(ABORTED_RUNS) == names(KIND)
    assert set(TABLE) == set(JUDGED) == set(GPU)


@pytest.mark.parametrize("name", sorted(ABORTED_RUNS))
def test_a_run_that_aborted_after_its_rows_is_a_failed_run(name: str):
    """The bandwidth reached before the error (381 of 400 Gb/s here) would pass: the run did not finish."""
    line, reason = ABORTED_RUNS[name]
    with pytest.raises(ToolFailed) as info:
        parse_perftest(load(KIND, name), source="ib_write_bw")
    assert (info.value.line, info.value.reason) == (line, reason)


@pytest.mark.parametrize("name", sorted(FAILED_RUNS))
def test_a_run_that_failed_before_its_rows_is_a_failed_run(name: str):
    quoted, line = FAILED_RUNS[name]
    with pytest.raises(ToolFailed) as info:
        parse_perftest(load(KIND, name), source="ib_write_bw")
    assert (info.value.reason, info.value.line) == ("the test failed: " + quoted, line)


def test_a_run_cut_before_its_rows_is_a_failed_run():
    """A real client output cut after its banner and settings, before the table (killed by a timeout)."""
    text = load(KIND, "roce-100g-4qp-rdma-cm-client-oci.txt")
    with pytest.raises(ToolFailed, match="stopped before its result rows"):
        parse_perftest(text[: text.index("#bytes")])


@pytest.mark.parametrize("number", ["inf", "nan", "1e999"])
def test_non_finite_numbers_are_a_parse_error(number: str):
    text = load(KIND, "roce-100g-4qp-rdma-cm-client-oci.txt")
    with pytest.raises(PerftestParseError, match="not a finite number"):
        parse_perftest(text.replace("98.01", number, 1))


@pytest.mark.parametrize("name", sorted(TABLE))
def test_parse(name: str):
    runs_n, device, link, qps, unit, row, gbps, warnings = TABLE[name]
    runs = parse_perftest(load(KIND, name))
    assert len(runs) == runs_n
    run = runs[-1]
    assert run.test == "RDMA_Write BW Test"
    assert (run.settings["Device"], run.settings["Link type"], run.settings["Number of qps"]) == (device, link, qps)
    assert run.unit == unit
    assert len(run.rows) == ROWS.get(name, 1)
    got = run.rows[-1]
    assert (got.bytes, got.iterations, got.bw_peak, got.bw_average, got.msg_rate_mpps) == pytest.approx(row)
    assert run.bw_average_gbps == pytest.approx(gbps, abs=0.01)
    assert len(run.warnings) == warnings


def test_bw_min_column_and_warning_text():
    (cx7,) = parse_perftest(load(KIND, "roce-400g-cx7-gpudirect-dmabuf-client-gardenlinux.txt"))
    assert cx7.rows[0].bw_min == 0.0 and cx7.settings["ibv_wr* API"] == "ON"
    (cx5,) = parse_perftest(load(KIND, "roce-100g-cx5-rdma-cm-client-cpufreq-warning-deepops.txt"))
    assert cx5.warnings[0].startswith("Conflicting CPU frequency values detected")


@pytest.mark.parametrize("name", sorted(JUDGED))
def test_judge(name: str):
    rate, bandwidth, warnings = JUDGED[name]
    results = {
        r.check: r.status for r in ib_judge.judge_perftest(parse_perftest(load(KIND, name)), {"rate_gbps": rate})
    }
    assert results == {"ib.write_bw": bandwidth, "ib.write_bw_warnings": warnings}


def test_judge_fails_a_port_running_at_a_lower_rate():
    # 98 Gb/s measured where a 200 Gb/s HDR port was planned: the link trained at EDR/100G.
    runs = parse_perftest(load(KIND, "roce-100g-4qp-rdma-cm-client-oci.txt"))
    (bw, _) = ib_judge.judge_perftest(runs, {"rate_gbps": 200})
    assert bw.status == FAIL and bw.expected == 180.0


@pytest.mark.parametrize("name", sorted(GPU))
def test_gpu_memory_is_read_from_perftests_cuda_lines(name: str):
    assert {run.gpu for run in parse_perftest(load(KIND, name))} == {GPU[name]}


@pytest.mark.parametrize("name", sorted(GPU))
def test_gpudirect_expectation_passes_gpu_memory_only(name: str):
    """memory=gpu: a run on host memory (or whose CUDA lines were cut from the log) is a fail, even
    at line rate: it measured the NIC, not the GPU-NIC path GPUDirect RDMA takes."""
    rate = JUDGED[name][0]
    runs = parse_perftest(load(KIND, name))
    results = {r.check: r for r in ib_judge.judge_perftest(runs, {"rate_gbps": rate, "memory": "gpu"})}
    memory = results["ib.write_bw_memory"]
    assert memory.status == (PASS if GPU[name] else FAIL)
    if GPU[name]:
        assert GPU[name] in memory.message and f"on GPU memory ({GPU[name]})" in results["ib.write_bw"].message
    else:
        assert memory.message.startswith("expected GPU memory, found host memory on ")
    host = {r.check: r.status for r in ib_judge.judge_perftest(parse_perftest(load(KIND, name)), {"memory": "host"})}
    assert host["ib.write_bw_memory"] == (FAIL if GPU[name] else PASS)


def test_a_gpudirect_rail_below_line_rate_fails_naming_the_gpu():
    # The T4 rail reaches 23.2 Gb/s: a pass at 25 Gb/s, a fail if the rail were 100 Gb/s.
    runs = parse_perftest(load(KIND, "roce-25g-t4-gpudirect-use-cuda-sweep-client-gpu-addon.txt"))
    bandwidth, memory, _ = ib_judge.judge_perftest(runs, {"rate_gbps": 100, "memory": "gpu"})
    assert (bandwidth.status, memory.status) == (FAIL, PASS)
    assert bandwidth.message == "23.2 Gb/s on GPU memory (Tesla T4) = 23% of 100 Gb/s (floor 90%)"


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "no perftest banner"),
        ("bash: ib_write_bw: command not found\n", "no perftest banner"),
        (
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n",
            "before any test banner",
        ),
    ],
)
def test_malformed(text: str, match: str):
    with pytest.raises(PerftestParseError, match=match):
        parse_perftest(text)
