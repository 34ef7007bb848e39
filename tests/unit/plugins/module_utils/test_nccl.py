from __future__ import annotations

import dataclasses

import pytest
from ansible.module_utils import nccl_judge
from ansible.module_utils.nccl_tests import NcclTestsParseError, parse_nccl_tests
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, WARN, ToolFailed

from .samples import load, names

KIND = "nccl_all_reduce_perf"

# layout, ranks, hosts, rows, (first size, last size), max busbw, printed avg busbw
TABLE = {
    "a100-2node-dgx-hdr-k8s-deepops-old-format.txt": ("error", None, 0, 30, (8, 4 << 30), 188.70, 53.7098),
    "a100-40gb-2node-oci-roce-k8s.txt": ("wrong", 16, 2, 31, (8, 8 << 30), 237.94, 66.4834),
    "a100-40gb-8gpu-single-node-superbench-old-format.txt": ("error", 8, 1, 34, (0, 8 << 30), 235.26, 68.4048),
    "a100-4node-dgx-ib-deepops-old-format.txt": ("error", None, 0, 13, (1 << 20, 4 << 30), 191.56, 113.289),
    "dgx-2node-roce-cx5-k8s-deepops-old-format.txt": ("error", None, 0, 29, (8, 2 << 30), 22.92, 7.76739),
    "h100-2node-16gpu-ib-bitdeer.txt": ("wrong", 16, 2, 6, (256 << 20, 8 << 30), 468.34, 443.007),
    "h100-2node-gcp-a3mega-tcpxo-header-damaged.txt": ("wrong", 16, 2, 31, (8, 8 << 30), 338.82, 70.742),
    "h100-8gpu-single-node-bitdeer.txt": ("wrong", 8, 1, 4, (256 << 20, 2 << 30), 470.73, 448.212),
    # Only the last rank's line was published with the table: 1 rank line, 72 ranks in the run.
    "gb200-nvl72-72gpu-one-rack-coreweave-pr43.txt": ("wrong", 1, 1, 5, (512 << 20, 8 << 30), 846.82, 745.53),
}

# What each run is judged against, from its source file's hardware line, and the verdicts.
A100_HDR = {"nvlink_generation": 3, "nic_rate_gbps": 200, "rails": 8}
JUDGED = {
    # 8x HDR 200 = 200 GB/s per node: 188.7 = 94%.
    "a100-2node-dgx-hdr-k8s-deepops-old-format.txt": ({**A100_HDR, "nodes": 2}, PASS, PASS),
    # BM.GPU4.8: 16x 100 GbE RoCE = 200 GB/s; tree all_reduce across 2 nodes reaches 119%.
    "a100-40gb-2node-oci-roce-k8s.txt": ({"nvlink_generation": 3, "nic_rate_gbps": 100, "rails": 16}, PASS, PASS),
    # Single node, validation off: busbw 235.3 = 100% of the NVLink 3 reference; correctness unchecked.
    "a100-40gb-8gpu-single-node-superbench-old-format.txt": ({"nvlink_generation": 3}, WARN, PASS),
    "a100-4node-dgx-ib-deepops-old-format.txt": ({**A100_HDR, "nodes": 4}, PASS, PASS),
    # Judged as one 100 GbE rail per node: 22.9 GB/s is the two-node bound of 1.875 x 12.5.
    "dgx-2node-roce-cx5-k8s-deepops-old-format.txt": ({"nic_rate_gbps": 100, "rails": 1, "nodes": 2}, PASS, PASS),
    # 8x NDR 400 = 400 GB/s, below NVLink 4's 450: 468.3 = 117% (NVLS tree).
    "h100-2node-16gpu-ib-bitdeer.txt": ({"nvlink_generation": 4, "nic_rate_gbps": 400, "rails": 8}, PASS, PASS),
    # A3 Mega: 8x 200 Gb/s GPUDirect-TCPXO = 200 GB/s: 338.8 = 169%.
    "h100-2node-gcp-a3mega-tcpxo-header-damaged.txt": (
        {"nvlink_generation": 4, "nic_rate_gbps": 200, "rails": 8},
        PASS,
        PASS,
    ),
    # NVLS: 470.7 GB/s = 105% of the NVLink 4 per-direction 450.
    "h100-8gpu-single-node-bitdeer.txt": ({"nvlink_generation": 4}, PASS, PASS),
    # One GB200 NVL72 rack, 18 trays x 4 GPUs in one NVLink domain: 846.8 GB/s = 94% of NVLink 5's 900.
    "gb200-nvl72-72gpu-one-rack-coreweave-pr43.txt": (
        {"nvlink_generation": 5, "nvlink_domain": True, "nodes": 18, "ranks": 72},
        PASS,
        PASS,
    ),
}


# Runs that died before (or without) their result table: the reason each must quote, read off the
# fixture (the quoted error of the first failing rank).
FAILED_RUNS = {
    "h100-8gpu-cuda-failure-system-not-yet-initialized-nccl-tests-264.txt": (
        "Test CUDA failure common.cu:941 'system not yet initialized'"
    ),
    "mpirun-256rank-unhandled-cuda-error-tail-nccl-tests-322.txt": (
        "HCA-14: Test NCCL failure common.cu:1204 'unhandled cuda error"
    ),
    "p100-8gpu-nccl1-unhandled-cuda-error-old-format-nccl-tests-5.txt": (
        "NCCL failure all_reduce.cu:95 'unhandled cuda error'"
    ),
    "rtx-a6000-2node-mpirun-nccl-internal-error-nccl-tests-219.txt": (
        "fengyun: Test NCCL failure common.cu:959 'internal error"
    ),
    "v100-1gpu-cuda-failure-unknown-error-deepops-nccl-tests-66.txt": "Test CUDA failure common.cu:730 'unknown error'",
}


def test_tables_cover_every_fixture():
    assert set(TABLE) | set(FAILED_RUNS) == names(KIND)
    assert set(TABLE) == set(JUDGED) and not set(TABLE) & set(FAILED_RUNS)


@pytest.mark.parametrize("name", sorted(FAILED_RUNS))
def test_a_run_that_died_is_a_failed_run_quoting_its_reason(name: str):
    with pytest.raises(ToolFailed) as info:
        parse_nccl_tests(load(KIND, name), source=name)
    assert FAILED_RUNS[name] in info.value.reason
    assert str(info.value).startswith(f"{name}: the run failed: ")


def test_launcher_lines_alone_are_a_failed_run():
    """The mpirun block of a real abort (nccl-tests-219's last three lines) with nothing of nccl-tests."""
    lines = load(KIND, "rtx-a6000-2node-mpirun-nccl-internal-error-nccl-tests-219.txt").splitlines()
    with pytest.raises(ToolFailed, match="Primary job  terminated normally"):
        parse_nccl_tests("\n".join(lines[-3:]))


def test_a_table_cut_short_is_a_failed_run():
    """A real run cut after its second result row (the launcher killed it): no Avg bus bandwidth line."""
    lines = load(KIND, "h100-8gpu-single-node-bitdeer.txt").splitlines()
    second_row = [i for i, line in enumerate(lines) if line.lstrip()[:1].isdigit()][1]
    with pytest.raises(ToolFailed, match="stopped after 2 result rows"):
        parse_nccl_tests("\n".join(lines[: second_row + 1]))


@pytest.mark.parametrize("number", ["inf", "nan", "1e999", "-inf"])
def test_non_finite_numbers_are_a_parse_error(number: str):
    lines = load(KIND, "h100-8gpu-single-node-bitdeer.txt").splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("268435456"))
    tokens = lines[at].split()
    tokens[7] = number  # out-of-place busbw
    lines[at] = "  ".join(tokens)
    with pytest.raises(NcclTestsParseError, match="not a finite number"):
        parse_nccl_tests("\n".join(lines))


@pytest.mark.parametrize("name", sorted(TABLE))
def test_parse(name: str):
    layout, ranks, hosts, rows, sizes, max_busbw, avg = TABLE[name]
    report = parse_nccl_tests(load(KIND, name))
    assert report.layout == layout
    assert report.n_ranks == ranks
    assert len(report.hosts) == hosts
    assert len(report.rows) == rows
    assert (report.rows[0].size, report.rows[-1].size) == sizes
    assert report.max_busbw == pytest.approx(max_busbw)
    assert report.avg_busbw == pytest.approx(avg)
    assert (report.out_of_bounds, report.out_of_bounds_ok) == (0, True)
    assert report.failures == ()
    assert {r.dtype for r in report.rows} == {"float"} and {r.redop for r in report.rows} == {"sum"}


@pytest.mark.parametrize("name", sorted(JUDGED))
def test_judge(name: str):
    expected, correctness, busbw = JUDGED[name]
    results = {r.check: r for r in nccl_judge.judge_nccl(parse_nccl_tests(load(KIND, name)), expected)}
    assert (results["nccl.correctness"].status, results["nccl.busbw"].status) == (correctness, busbw)


def test_new_layout_row_fields():
    report = parse_nccl_tests(load(KIND, "h100-2node-16gpu-ib-bitdeer.txt"))
    last = report.rows[-1]
    assert (last.size, last.count, last.root) == (8589934592, 2147483648, -1)
    assert dataclasses.astuple(last.out_of_place) == (34417.0, 249.59, 467.97, 0, None)
    assert dataclasses.astuple(last.in_place) == (34390.0, 249.78, 468.34, 0, None)
    assert report.ranks[8].host == "host2" and report.ranks[8].bus_id == "0x1b"
    assert report.header["nGpus"] == "1" and report.header["validation"] == "1"


def test_old_layout_error_column_and_crlf():
    report = parse_nccl_tests(load(KIND, "a100-2node-dgx-hdr-k8s-deepops-old-format.txt"))
    assert report.rows[0].root is None
    assert report.rows[0].out_of_place.error == pytest.approx(2e-07)
    assert report.rows[0].in_place.wrong is None


def test_damaged_header_still_yields_every_rank():
    report = parse_nccl_tests(load(KIND, "h100-2node-gcp-a3mega-tcpxo-header-damaged.txt"))
    assert report.header["maxBytes"] == "8589934592"  # header line lost its "#"
    assert report.ranks[0].host == "ztan-mig-235z" and report.ranks[0].bus_id == "0000:04:00"


def test_launcher_prefixes_and_interleaved_nccl_lines():
    """mpirun --tag-output prefixes and NCCL INFO lines between rows change nothing."""
    text = load(KIND, "h100-2node-16gpu-ib-bitdeer.txt")
    lines = text.splitlines()
    noisy = []
    for i, line in enumerate(lines):
        noisy.append(f"[1,{i % 16}]<stdout>:{line}")
        if line.startswith("1073741824"):
            noisy.append("[1,3]<stdout>:host1:550400:550400 [3] NCCL INFO comm 0x55 rank 3 nRanks 16 - Init COMPLETE")
    assert parse_nccl_tests("\n".join(noisy)) == parse_nccl_tests(text)
    labelled = "\n".join(f"{i % 2}: {line}" for i, line in enumerate(lines))  # srun --label
    assert parse_nccl_tests(labelled).rows == parse_nccl_tests(text).rows


def test_judged_rows_are_the_large_messages():
    report = parse_nccl_tests(load(KIND, "a100-40gb-2node-oci-roce-k8s.txt"))
    assert [r.size for r in nccl_judge.judged_rows(report)] == [1 << 30, 2 << 30, 4 << 30, 8 << 30]
    small = dataclasses.replace(report, rows=report.rows[:20])  # up to 4 MiB: the top three sizes
    assert [r.size for r in nccl_judge.judged_rows(small)] == [1 << 20, 2 << 20, 4 << 20]


def test_busbw_below_floor_fails():
    report = parse_nccl_tests(load(KIND, "dgx-2node-roce-cx5-k8s-deepops-old-format.txt"))
    # Had the node 8 such rails (100 GB/s), 22.9 GB/s would be 23%.
    results = {r.check: r for r in nccl_judge.judge_nccl(report, {"nic_rate_gbps": 100, "rails": 8, "nodes": 2})}
    assert results["nccl.busbw"].status == FAIL
    assert results["nccl.busbw"].measured == 22.92 and results["nccl.busbw"].expected == 80.0


def test_a100_against_naive_nvlink_figure_would_fail():
    """Why the NVLink 3 reference is 235, not 300: a healthy A100 ring reaches 78% of 300."""
    report = parse_nccl_tests(load(KIND, "a100-40gb-8gpu-single-node-superbench-old-format.txt"))
    naive = nccl_judge.NVLINK_GB_PER_DIRECTION[3]
    results = {r.check: r for r in nccl_judge.judge_nccl(report, {"expected_busbw": naive})}
    assert results["nccl.busbw"].status == FAIL


def test_single_rank_is_never_judged_by_bandwidth():
    report = parse_nccl_tests(load(KIND, "h100-8gpu-single-node-bitdeer.txt"))
    one = dataclasses.replace(report, ranks=report.ranks[:1])
    results = {r.check: r for r in nccl_judge.judge_nccl(one, {"nvlink_generation": 4})}
    assert results["nccl.busbw"].status == SKIPPED
    assert "single-rank" in results["nccl.busbw"].message
    headerless = parse_nccl_tests(load(KIND, "a100-4node-dgx-ib-deepops-old-format.txt"))
    assert {r.check: r for r in nccl_judge.judge_nccl(headerless, {"ranks": 1})}["nccl.busbw"].status == SKIPPED


def test_wrong_values_errors_and_out_of_bounds_fail():
    report = parse_nccl_tests(load(KIND, "h100-8gpu-single-node-bitdeer.txt"))
    row = report.rows[1]
    bad_row = dataclasses.replace(row, in_place=dataclasses.replace(row.in_place, wrong=3))
    wrong = dataclasses.replace(report, rows=(report.rows[0], bad_row, *report.rows[2:]))
    assert nccl_judge.judge_nccl(wrong, {"nvlink_generation": 4})[0].status == FAIL
    oob = dataclasses.replace(report, out_of_bounds=2, out_of_bounds_ok=False)
    assert nccl_judge.judge_nccl(oob, {})[0].status == FAIL
    old = parse_nccl_tests(load(KIND, "a100-4node-dgx-ib-deepops-old-format.txt"))
    assert nccl_judge.judge_nccl(old, {})[0].status == PASS  # errors 7e-07..1e-06 are below float's 1e-05
    assert nccl_judge.judge_nccl(old, {"error_tolerance": 5e-07})[0].status == FAIL


def test_test_failure_lines_fail_the_run():
    text = (
        load(KIND, "h100-8gpu-single-node-bitdeer.txt")
        + "host: Test NCCL failure common.cu:1011 'unhandled cuda error'\n"
    )
    report = parse_nccl_tests(text)
    assert report.failures and nccl_judge.judge_nccl(report, {})[0].status == FAIL


def test_no_expectation_skips_bandwidth_with_the_measurement():
    report = parse_nccl_tests(load(KIND, "h100-2node-16gpu-ib-bitdeer.txt"))
    busbw = {r.check: r for r in nccl_judge.judge_nccl(report, {})}["nccl.busbw"]
    assert (busbw.status, busbw.measured) == (SKIPPED, 468.34)


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "no nccl-tests header"),
        ("bash: all_reduce_perf: command not found\n", "no nccl-tests header"),
        ("#       size         count      type   redop    time\n", "unexpected column header"),
        ("         8             2     float     sum    38.63    0.00\n", "without a column header"),
    ],
)
def test_malformed(text: str, match: str):
    with pytest.raises(NcclTestsParseError, match=match):
        parse_nccl_tests(text)


def test_header_without_rows_is_a_failed_run():
    with pytest.raises(ToolFailed, match="stopped before the result table"):
        parse_nccl_tests("# nThread 1 nGpus 8\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x1b] NVIDIA H100\n")


def test_a_run_inside_one_nvlink_domain_is_held_to_nvlink_not_to_the_rails():
    """Across a GB200 NVL72 rack the trays talk over NVLink 5: the scale-out rails (4 x 400 Gb/s =
    200 GB/s) would pass a rack that lost most of its NVLink bandwidth."""
    rack = parse_nccl_tests(load(KIND, "gb200-nvl72-72gpu-one-rack-coreweave-pr43.txt"))
    in_domain = {"nvlink_generation": 5, "nvlink_domain": True, "nodes": 18}
    figures = nccl_judge.busbw_figures(rack, in_domain)
    assert (figures["reference"], figures["floor"]) == (900.0, 720.0)
    assert figures["how"] == "NVLink 5 across one NVLink domain's 18 nodes"
    rails = nccl_judge.busbw_figures(rack, {"nvlink_generation": 5, "nic_rate_gbps": 400, "rails": 4, "nodes": 18})
    assert rails["reference"] == 200.0
    # A real 2-node run over 8x NDR InfiniBand (468 GB/s) is far below a domain's NVLink 5 floor.
    over_ib = parse_nccl_tests(load(KIND, "h100-2node-16gpu-ib-bitdeer.txt"))
    busbw = next(r for r in nccl_judge.judge_nccl(over_ib, {**in_domain, "nodes": 2}) if r.check == "nccl.busbw")
    assert busbw.status == FAIL and busbw.measured == 468.34


def test_nvlink_domain_needs_the_nvlink_generation():
    rack = parse_nccl_tests(load(KIND, "gb200-nvl72-72gpu-one-rack-coreweave-pr43.txt"))
    reference, why = nccl_judge.expected_busbw(rack, {"nvlink_domain": True, "nodes": 18})
    assert reference is None and why == "nvlink_domain without nvlink_generation"
