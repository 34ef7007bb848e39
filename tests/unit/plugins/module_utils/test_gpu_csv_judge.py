"""gpu_csv_judge on nvidia-smi --query-gpu CSV: the real looped and one-shot captures, and constructed samples."""

from __future__ import annotations

import pytest
from ansible.module_utils.expectation_keys import ExpectationError
from ansible.module_utils.gpu_csv_judge import judge_query_gpu_csv
from ansible.module_utils.nvidia_smi import parse_query_gpu_csv

from .samples import load

# Real: one 24 GB GPU sampled five times (-lms), no index column; temperatures 25, 24, 23, 26, 25,
# memory.used 21, 7, 7, 7, 21 MiB of 23028.
LOOPED = parse_query_gpu_csv(load("nvidia-smi_query", "24gb-gpu-query-gpu-timestamp-pstate-mem-csv-lms.txt"))
# Real: one run on a node with a GTX 1080 Ti and a GTX 1060 6GB, no index column (bpytop #26).
ONE_SHOT = load("nvidia-smi_query", "2gpu-gtx1080ti-gtx1060-query-gpu-csv-one-shot-no-index-bpytop-26.txt")

# Constructed (no real capture of these fields in tests/fixtures): nvidia-smi's --format=csv layout
# with units, GPU 1 hot, busy, drawing 702.1 W and holding 80000 MiB; the nounits form of the same.
HEADER = (
    "index, name, driver_version, temperature.gpu, power.draw [W], utilization.gpu [%], "
    "memory.used [MiB], memory.total [MiB]\n"
)
UNITS = (
    HEADER + "0, NVIDIA H100 80GB HBM3, 535.161.08, 31, 71.52 W, 0 %, 1 MiB, 81559 MiB\n"
    "1, NVIDIA H100 80GB HBM3, 535.161.08, 88, 702.10 W, 100 %, 80000 MiB, 81559 MiB\n"
)
NOUNITS = (
    HEADER + "0, NVIDIA H100 80GB HBM3, 535.161.08, 31, 71.52, 0, 1, 81559\n"
    "1, NVIDIA H100 80GB HBM3, 535.161.08, 88, 702.10, 100, 80000, 81559\n"
)


def judged(rows, expected: dict) -> dict:
    return {r.check: r for r in judge_query_gpu_csv(rows, expected)}


@pytest.mark.parametrize("text", [UNITS, NOUNITS], ids=["units", "nounits"])
def test_every_expectation_against_its_column(text: str):
    checks = judged(
        parse_query_gpu_csv(text),
        {
            "gpu_count": 2,
            "product_name": "nvidia h100 80gb hbm3",
            "driver_version": "535.161.08",
            "power_draw_max_w": 700,
            "utilization_max_pct": 10,
            "memory_used_max_mib": 100,
            "memory_total_min_mib": 81559,
        },
    )
    assert {name: r.status for name, r in checks.items()} == {
        "gpu.count": "pass",
        "gpu.model": "pass",
        "gpu.driver_version": "pass",
        "gpu.temperature": "warn",  # 88 C above the default 85
        "gpu.power_draw": "fail",
        "gpu.utilization": "fail",
        "gpu.memory_used": "fail",
        "gpu.memory_total": "pass",
    }
    assert checks["gpu.power_draw"].measured == {"0": 71.52, "1": 702.1}
    assert checks["gpu.power_draw"].message == "1: 702.1 W above 700"
    assert checks["gpu.memory_used"].measured == {"0": 1, "1": 80000}
    assert checks["gpu.temperature"].expected == "<= 85"


def test_wrong_count_model_driver_and_memory_fail():
    checks = judged(
        parse_query_gpu_csv(UNITS),
        {"gpu_count": 8, "product_name": "NVIDIA A100", "driver_version": "535.161", "memory_total_min_mib": 81920},
    )
    assert [checks[c].status for c in ("gpu.count", "gpu.model", "gpu.driver_version", "gpu.memory_total")] == [
        "fail"
    ] * 4
    assert checks["gpu.count"].measured == 2


def test_a_looped_capture_is_judged_on_each_gpus_worst_sample():
    looped = parse_query_gpu_csv(UNITS + UNITS.split("\n", 1)[1].replace("88,", "90,"))
    checks = judged(looped, {"gpu_count": 2, "temperature_warn_c": 89})
    assert checks["gpu.count"].measured == 2
    assert checks["gpu.temperature"].measured == {"0": 31, "1": 90}
    assert checks["gpu.temperature"].status == "warn"


def test_the_real_looped_capture():
    checks = judged(LOOPED, {"temperature_warn_c": 25, "memory_used_max_mib": 21, "memory_total_min_mib": 23028})
    assert checks["gpu.temperature"].status == "warn"  # 26 C in row 4
    assert checks["gpu.temperature"].message == "row 4: 26 C above 25"
    assert checks["gpu.memory_used"].status == "pass"
    assert checks["gpu.memory_total"].status == "pass"
    assert checks["gpu.count"].status == "skipped"  # nothing tells its rows' GPUs apart
    assert checks["gpu.count"].message.startswith("not counted: a timestamp column and one header")


@pytest.mark.parametrize("want,status", [(2, "pass"), (8, "fail")])
def test_a_one_shot_capture_without_index_counts_its_rows(want: int, status: str):
    checks = judged(parse_query_gpu_csv(ONE_SHOT), {"gpu_count": want, "power_draw_max_w": 100})
    count = checks["gpu.count"]
    assert (count.status, count.measured) == (status, 2)
    assert count.message == f"2 of {want} expected GPUs visible to the driver"
    assert checks["gpu.power_draw"].message == "row 1: 106.56 W above 100"  # the GTX 1080 Ti, printed first
    assert checks["gpu.temperature"].measured == {"row 1": 60, "row 2": 49}


def test_a_capture_that_repeats_its_header_counts_each_sample():
    """Constructed from the real one-shot capture: the same query run three times, the second time
    with its GTX 1060 row gone (a GPU lost between runs)."""
    header, first, _second = ONE_SHOT.splitlines(keepends=True)
    rows = parse_query_gpu_csv(ONE_SHOT + header + first + ONE_SHOT)
    checks = judged(rows, {"gpu_count": 2, "power_draw_max_w": 100})
    assert (checks["gpu.count"].status, checks["gpu.count"].measured) == ("fail", 1)
    assert checks["gpu.count"].message == (
        "1 of 2 expected GPUs visible to the driver (fewest rows of 3 samples, each with 1 to 2 rows)"
    )
    assert checks["gpu.power_draw"].measured == {"row 1": 106.56, "row 2": 5.68}
    assert judged(parse_query_gpu_csv(ONE_SHOT * 2), {"gpu_count": 2})["gpu.count"].status == "pass"


@pytest.mark.parametrize(
    "expected,match",
    [
        ({"gpu_count": 1}, "gpu_count cannot be read from this CSV: a timestamp column and one header"),
        ({"power_draw_max_w": 300}, "power_draw_max_w reads the power.draw column, which this CSV lacks"),
        ({"product_name": "NVIDIA A10"}, "product_name reads the name column"),
    ],
)
def test_an_expectation_the_csv_cannot_answer_is_refused(expected: dict, match: str):
    with pytest.raises(ExpectationError, match=match):
        judge_query_gpu_csv(LOOPED, expected)


def test_values_not_reported_skip_and_values_in_another_unit_fail():
    text = HEADER + "0, A, 1, 30, [N/A], 0 %, 1 MiB, 10 MiB\n1, A, 1, 30, 5 kW, 0 %, 1 MiB, 10 MiB\n"
    check = judged(parse_query_gpu_csv(text), {"power_draw_max_w": 100})["gpu.power_draw"]
    assert check.status == "fail"
    assert check.message == "1: power.draw is not a number of W"
    alone = judged(parse_query_gpu_csv(HEADER + "0, A, 1, 30, [N/A], 0 %, 1 MiB, 10 MiB\n"), {"power_draw_max_w": 100})
    assert alone["gpu.power_draw"].status == "skipped"
