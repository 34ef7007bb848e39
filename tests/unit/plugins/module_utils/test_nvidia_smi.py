from __future__ import annotations

import pytest
from ansible.module_utils import gpu_judge, nvidia_smi, nvidia_topo, xid
from ansible.module_utils.nvidia_smi import NvidiaSmiParseError, PcieLink
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, WARN, ToolFailed, overall

from .samples import load, names

# Expected facts per captured output; None means the file is not -q/-q -x output and must raise.
QUERY = {
    "24gb-gpu-query-gpu-timestamp-pstate-mem-csv-lms.txt": None,
    "2gpu-gtx1080ti-gtx1060-query-gpu-csv-one-shot-no-index-bpytop-26.txt": None,
    "a100-sxm4-40gb-8gpu-nvidia-smi-a-535.129.03.txt": {
        "driver": "535.129.03",
        "cuda": "12.2",
        "count": 8,
        "product": "NVIDIA A100-SXM4-40GB",
        "first_bus": "00000000:2F:00.0",
        "temps": [22, 22, 21, 22, 23, 22, 22, 22],
        "pcie": PcieLink(gen_max=4, gen_current=4, width_max=16, width_current=16),
        "persistence": "Disabled",
        "fabric": None,
        "active_reasons": {("gpu_idle",)},
    },
    "azure-8gpu-nvidia-smi-q-d-page-retirement-535.86.10.txt": {
        "driver": "535.86.10",
        "cuda": "12.2",
        "count": 8,
        "product": None,
        "first_bus": "00000001:00:00.0",
        "temps": [None] * 8,
        "pcie": PcieLink(),
        "persistence": None,
        "fabric": None,
        "active_reasons": {()},
    },
    "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt": {
        "driver": "535.161.08",
        "cuda": "12.2",
        "count": 8,
        "product": "NVIDIA H100 80GB HBM3",
        "first_bus": "00000000:19:00.0",
        "temps": [29, 29, 30, 30, 31, 32, 32, 31],
        "pcie": PcieLink(gen_max=5, gen_current=5, width_max=16, width_current=16),
        "persistence": "Enabled",
        "fabric": "Completed",
        "active_reasons": {("hw_power_brake_slowdown", "hw_slowdown")},
    },
    "h100-8gpu-nvidia-smi-q-535.183.01-gpud.txt": {
        "driver": "535.183.01",
        "cuda": "12.2",
        "count": 8,
        "product": "NVIDIA H100 80GB HBM3",
        "first_bus": "00000000:53:00.0",
        "temps": [36, 37, 39, 39, 38, 36, 37, 35],
        "pcie": PcieLink(gen_max=5, gen_current=5, width_max=16, width_current=16),
        "persistence": "Enabled",
        "fabric": "Completed",
        "active_reasons": {("gpu_idle",), ("hw_power_brake_slowdown", "sw_power_cap", "sw_thermal_slowdown")},
    },
}

XML = {
    "a100-sxm4-80gb-mig-535.54.03-telegraf.xml": {
        "driver": "535.54.03",
        "cuda": "12.2",
        "count": 4,  # attached_gpus; the capture prints one of them
        "sections": 1,
        "product": "NVIDIA A100-SXM4-80GB",
        "pcie": PcieLink(gen_max=4, gen_current=4, width_max=16, width_current=16),
        "mig": "Enabled",
        "remapped_rows": None,  # <remapped_rows>N/A</remapped_rows> with MIG on
        "ecc_unc": (0, 0),
        "retired": (None, None, None),
        "reasons": 9,
    },
    "tesla-t4-pcie-x8-515.105.01-telegraf.xml": {
        "driver": "515.105.01",
        "cuda": "11.7",
        "count": 1,
        "sections": 1,
        "product": "Tesla T4",
        "pcie": PcieLink(gen_max=3, gen_current=3, width_max=16, width_current=8),
        "mig": None,
        "remapped_rows": None,
        "ecc_unc": (0, 0),
        "retired": (0, 0, False),
        "reasons": 9,  # from <clocks_throttle_reasons>
    },
    "grid-p4-vgpu-double-bit-513.46-telegraf.xml": {
        "driver": "513.46",
        "cuda": "11.6",
        "count": 1,
        "sections": 1,
        "product": "GRID P4-1Q",
        "pcie": PcieLink(),
        "mig": None,
        "remapped_rows": None,
        "ecc_unc": (None, None),  # <double_bit><total>N/A
        "retired": (None, None, None),
        "reasons": 0,  # <clocks_throttle_reasons>N/A</clocks_throttle_reasons>
    },
}


# nvidia-smi's own failure instead of a report: a failed run, with the line it must quote.
FAILED_RUNS = {
    "driver-not-loaded-nvidia-smi-has-failed.txt": "NVIDIA-SMI has failed because it couldn't communicate",
}


def test_tables_cover_every_fixture():
    assert set(QUERY) | set(FAILED_RUNS) == names("nvidia-smi_query")
    assert set(XML) == names("nvidia-smi_xml")


@pytest.mark.parametrize("name", sorted(FAILED_RUNS))
def test_nvidia_smi_that_cannot_reach_the_driver_is_a_failed_run(name: str):
    text = load("nvidia-smi_query", name)
    # Every subcommand prints the same line: the query and the topology parsers say the same.
    for parse in (nvidia_smi.parse_query, nvidia_topo.parse_topo_matrix):
        with pytest.raises(ToolFailed, match="nvidia-smi failed: " + FAILED_RUNS[name]) as info:
            parse(text, source="nvidia-smi -q -x")
        assert info.value.line == 1


@pytest.mark.parametrize("name", sorted(QUERY))
def test_query_text(name: str):
    want = QUERY[name]
    text = load("nvidia-smi_query", name)
    if want is None:
        with pytest.raises(NvidiaSmiParseError, match="not nvidia-smi -q output"):
            nvidia_smi.parse_query_text(text)
        return
    report = nvidia_smi.parse_query_text(text)
    assert (report.driver_version, report.cuda_version, report.gpu_count) == (
        want["driver"],
        want["cuda"],
        want["count"],
    )
    assert len(report.gpus) == want["count"]
    assert report.gpus[0].bus_id == want["first_bus"]
    assert {g.product_name for g in report.gpus} == {want["product"]}
    assert [g.temperature_c for g in report.gpus] == want["temps"]
    assert {g.pcie for g in report.gpus} == {want["pcie"]}
    assert {g.persistence_mode for g in report.gpus} == {want["persistence"]}
    assert {g.fabric_state for g in report.gpus} == {want["fabric"]}
    active = {tuple(sorted(r for r, on in g.clock_event_reasons.items() if on)) for g in report.gpus}
    assert active == want["active_reasons"]


@pytest.mark.parametrize("name", sorted(XML))
def test_query_xml(name: str):
    want = XML[name]
    report = nvidia_smi.parse_query_xml(load("nvidia-smi_xml", name))
    assert (report.driver_version, report.cuda_version, report.gpu_count) == (
        want["driver"],
        want["cuda"],
        want["count"],
    )
    assert len(report.gpus) == want["sections"]
    gpu = report.gpus[0]
    assert gpu.product_name == want["product"]
    assert gpu.pcie == want["pcie"]
    assert gpu.mig_mode == want["mig"]
    assert gpu.remapped_rows == want["remapped_rows"]
    assert (gpu.ecc.volatile_uncorrectable, gpu.ecc.aggregate_uncorrectable) == want["ecc_unc"]
    pages = gpu.retired_pages
    assert (pages.single_bit, pages.double_bit, pages.pending) == want["retired"]
    assert len(gpu.clock_event_reasons) == want["reasons"]
    assert not any(gpu.clock_event_reasons.values())


def test_text_and_xml_fill_the_same_fields():
    """Both parsers build the same dataclass; on like hardware (A100, 535) they fill the same fields."""
    text = nvidia_smi.parse_query_text(load("nvidia-smi_query", "a100-sxm4-40gb-8gpu-nvidia-smi-a-535.129.03.txt"))
    xml = nvidia_smi.parse_query_xml(load("nvidia-smi_xml", "a100-sxm4-80gb-mig-535.54.03-telegraf.xml"))
    a, b = text.gpus[0], xml.gpus[0]
    assert type(a) is type(b)
    for field in ("product_name", "uuid", "serial", "minor_number", "persistence_mode", "ecc_mode", "temperature_c"):
        assert (getattr(a, field) is None) == (getattr(b, field) is None), field
    assert set(a.clock_event_reasons) == set(b.clock_event_reasons)
    assert a.ecc == b.ecc  # all zero on both


def test_parse_query_picks_the_format():
    xml = load("nvidia-smi_xml", "tesla-t4-pcie-x8-515.105.01-telegraf.xml")
    assert nvidia_smi.parse_query(xml).gpus[0].product_name == "Tesla T4"


def test_h100_processes_section_does_not_disturb_the_tree():
    report = nvidia_smi.parse_query_text(load("nvidia-smi_query", "h100-8gpu-nvidia-smi-q-535.183.01-gpud.txt"))
    gpu = next(g for g in report.gpus if g.bus_id == "00000000:75:00.0")
    assert gpu.fabric_state == "Completed" and gpu.remapped_rows is not None
    assert gpu.clock_event_reasons["sw_thermal_slowdown"] is True


def test_query_gpu_csv():
    rows = nvidia_smi.parse_query_gpu_csv(
        load("nvidia-smi_query", "24gb-gpu-query-gpu-timestamp-pstate-mem-csv-lms.txt")
    )
    assert len(rows) == 5
    assert rows[0]["pstate"] == "P8"
    assert [r["temperature.gpu"] for r in rows] == ["25", "24", "23", "26", "25"]
    assert rows[0]["memory.total"] == "23028 MiB"
    assert rows.samples == (5,)  # -lms printed its header once


def test_query_gpu_csv_one_shot_and_repeated_header():
    text = load("nvidia-smi_query", "2gpu-gtx1080ti-gtx1060-query-gpu-csv-one-shot-no-index-bpytop-26.txt")
    rows = nvidia_smi.parse_query_gpu_csv(text)
    assert [r["name"] for r in rows] == ["GeForce GTX 1080 Ti", "GeForce GTX 1060 6GB"]
    assert rows[1]["power.draw"] == "5.68 W" and rows.samples == (2,)
    # The same query run three times into one file: each run prints its header again.
    assert nvidia_smi.parse_query_gpu_csv(text * 3).samples == (2, 2, 2)


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "no NVSMI LOG"),
        ("<nvidia_smi_log><gpu id='0'>", "not well-formed"),
        ("<other/>", "expected <nvidia_smi_log>"),
        (
            "<nvidia_smi_log><gpu id='0'><temperature><gpu_temp>hot</gpu_temp></temperature></gpu></nvidia_smi_log>",
            "number",
        ),
        ("<nvidia_smi_log><gpu><product_name>x</product_name></gpu></nvidia_smi_log>", "without id"),
    ],
)
def test_malformed_outputs_raise(text: str, match: str):
    with pytest.raises(NvidiaSmiParseError, match=match):
        nvidia_smi.parse_query(text)


def test_csv_rejects_non_csv():
    with pytest.raises(NvidiaSmiParseError, match="CSV header"):
        nvidia_smi.parse_query_gpu_csv(
            load("nvidia-smi_query", "azure-8gpu-nvidia-smi-q-d-page-retirement-535.86.10.txt")
        )


# --- judge ----------------------------------------------------------------------------------------

H100 = {"gpu_count": 8, "product_name": "NVIDIA H100 80GB HBM3", "nvswitch": True, "nvlinks_per_gpu": 18}


def _by_check(results):
    return {r.check: r for r in results}


@pytest.mark.parametrize(
    "name,expected,verdicts",
    [
        # HW power brake slowdown on all 8 GPUs: the node fails on throttle and nothing else.
        (
            "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt",
            {**H100, "driver_version": "535.161.08", "cuda_version": "12.2"},
            {
                "gpu.count": PASS,
                "gpu.model": PASS,
                "gpu.driver_version": PASS,
                "gpu.cuda_version": PASS,
                "gpu.throttle": FAIL,
                "gpu.ecc": PASS,
                "gpu.row_remap": PASS,
                "gpu.fabric": PASS,
                "gpu.pcie": PASS,
                "gpu.persistence": PASS,
                "gpu.temperature": PASS,
                "gpu.retired_pages": SKIPPED,
            },
        ),
        # One GPU (0000:75) in SW thermal slowdown + power brake while running a job; the pinned driver differs.
        (
            "h100-8gpu-nvidia-smi-q-535.183.01-gpud.txt",
            {**H100, "driver_version": "535.161.08"},
            {"gpu.throttle": FAIL, "gpu.driver_version": FAIL, "gpu.fabric": PASS, "gpu.count": PASS},
        ),
        # A100 with persistence mode off: DCGM fails that too (dcgmi r1-deployment-fail fixture).
        (
            "a100-sxm4-40gb-8gpu-nvidia-smi-a-535.129.03.txt",
            {"gpu_count": 8, "product_name": "NVIDIA A100-SXM4-40GB", "nvswitch": True},
            {"gpu.persistence": FAIL, "gpu.throttle": PASS, "gpu.fabric": SKIPPED, "gpu.model": PASS},
        ),
        # -d PAGE_RETIREMENT only: retired pages judged, the rest not reported.
        (
            "azure-8gpu-nvidia-smi-q-d-page-retirement-535.86.10.txt",
            {"gpu_count": 8},
            {"gpu.count": PASS, "gpu.retired_pages": PASS, "gpu.ecc": SKIPPED, "gpu.throttle": SKIPPED},
        ),
    ],
)
def test_gpu_judge_on_text_fixtures(name, expected, verdicts):
    report = nvidia_smi.parse_query_text(load("nvidia-smi_query", name))
    results = _by_check(gpu_judge.judge_gpus(report, expected))
    assert {check: results[check].status for check in verdicts} == verdicts


def test_throttle_failure_names_the_gpu_and_reasons():
    report = nvidia_smi.parse_query_text(load("nvidia-smi_query", "h100-8gpu-nvidia-smi-q-535.183.01-gpud.txt"))
    throttle = _by_check(gpu_judge.judge_gpus(report, H100))["gpu.throttle"]
    assert "00000000:75:00.0" in throttle.message and "sw_thermal_slowdown" in throttle.message
    assert throttle.measured["00000000:53:00.0"] == ["gpu_idle"]


def test_pcie_x8_is_warn_at_idle_and_fail_under_load():
    report = nvidia_smi.parse_query_xml(load("nvidia-smi_xml", "tesla-t4-pcie-x8-515.105.01-telegraf.xml"))
    idle = _by_check(gpu_judge.judge_gpus(report, {"gpu_count": 1}))["gpu.pcie"]
    loaded = _by_check(gpu_judge.judge_gpus(report, {"gpu_count": 1, "under_load": True}))["gpu.pcie"]
    assert (idle.status, loaded.status) == (WARN, FAIL)
    assert "x8 of Gen3 x16" in loaded.message


def test_pcie_platform_maximum_below_expectation_fails_even_idle():
    report = nvidia_smi.parse_query_xml(load("nvidia-smi_xml", "a100-sxm4-80gb-mig-535.54.03-telegraf.xml"))
    pcie = _by_check(gpu_judge.judge_gpus(report, {"pcie_gen": 5}))["gpu.pcie"]
    assert pcie.status == FAIL


def test_xml_fixtures_judge():
    t4 = nvidia_smi.parse_query_xml(load("nvidia-smi_xml", "tesla-t4-pcie-x8-515.105.01-telegraf.xml"))
    results = _by_check(gpu_judge.judge_gpus(t4, {"gpu_count": 1, "product_name": "Tesla T4", "ecc_mode": True}))
    assert results["gpu.retired_pages"].status == PASS  # counted 0, pending No
    assert results["gpu.ecc_mode"].status == PASS
    assert results["gpu.persistence"].status == FAIL
    p4 = nvidia_smi.parse_query_xml(load("nvidia-smi_xml", "grid-p4-vgpu-double-bit-513.46-telegraf.xml"))
    results = _by_check(gpu_judge.judge_gpus(p4, {"gpu_count": 1}))
    # vGPU: nothing about ECC, PCIe or throttling is visible, so nothing may pass on it.
    for check in ("gpu.ecc", "gpu.pcie", "gpu.throttle", "gpu.persistence", "gpu.row_remap"):
        assert results[check].status == SKIPPED, check


def test_gpu_count_mismatch_and_no_gpus():
    a100 = nvidia_smi.parse_query_xml(load("nvidia-smi_xml", "a100-sxm4-80gb-mig-535.54.03-telegraf.xml"))
    assert _by_check(gpu_judge.judge_gpus(a100, {"gpu_count": 8}))["gpu.count"].status == FAIL
    assert gpu_judge.judge_gpus(None, {"gpu_count": 8})[0].status == FAIL
    nothing = gpu_judge.judge_gpus(None, {})
    assert overall(nothing) == SKIPPED and nothing[0].message == "skipped: no hardware"


def test_nvlink_and_xid_from_their_own_outputs():
    report = nvidia_smi.parse_query_text(load("nvidia-smi_query", "a100-sxm4-40gb-8gpu-nvidia-smi-a-535.129.03.txt"))
    topo = nvidia_topo.parse_topo_matrix(load("nvidia-smi_topo", "a100-8gpu-17nic-pxb-pix-bond.txt"))
    events = xid.parse_kernel_log(load("kernel_log_xid", "h100-xid79-fallen-off-bus-sxid20034-gpud.txt"))
    results = _by_check(
        gpu_judge.judge_gpus(report, {"nvswitch": True, "nvlinks_per_gpu": 12}, topology=topo, xid_events=events)
    )
    assert results["gpu.nvlink"].status == PASS
    assert results["gpu.xid"].status == FAIL
    assert "Xid 79 on 0000:91:00" in results["gpu.xid"].measured
    assert (
        _by_check(gpu_judge.judge_gpus(report, {"nvlinks_per_gpu": 18, "nvswitch": True}, topology=topo))[
            "gpu.nvlink"
        ].status
        == FAIL
    )
