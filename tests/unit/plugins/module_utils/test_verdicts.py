from __future__ import annotations

import pytest
from ansible.module_utils.verdicts import (
    FAIL,
    PASS,
    SKIPPED,
    WARN,
    CheckResult,
    ParseError,
    absent,
    overall,
    result,
    skipped,
    worst,
)


def test_check_result_validates_status_and_serialises():
    r = result("gpu.count", PASS, 8, 8, "8 of 8")
    assert r.as_dict() == {"check": "gpu.count", "status": "pass", "measured": 8, "expected": 8, "message": "8 of 8"}
    with pytest.raises(ValueError, match="status"):
        CheckResult("x", "ok", None, None, "")


@pytest.mark.parametrize(
    "statuses,verdict",
    [([], SKIPPED), ([SKIPPED], SKIPPED), ([SKIPPED, PASS], PASS), ([PASS, WARN], WARN), ([WARN, FAIL, PASS], FAIL)],
)
def test_worst(statuses, verdict):
    assert worst(statuses) == verdict


def test_all_skipped_never_passes():
    assert overall([skipped("ib.present", "skipped: no hardware")]) == SKIPPED


def test_absent_hardware_is_skipped_unless_required_and_expected():
    assert absent("gpu.count", "skipped: no hardware", 8).status == SKIPPED
    assert absent("gpu.count", "skipped: no hardware", None, required=True).status == SKIPPED
    failed = absent("ib.present", "skipped: no hardware", ["mlx5_0"], required=True)
    assert (failed.status, failed.expected) == (FAIL, ["mlx5_0"])
    assert failed.message == "required but absent (skipped: no hardware); expected ['mlx5_0']"


def test_parse_error_says_where_and_what():
    error = ParseError("unrecognised line", source="ibstat", line=3, text="garbage\n")
    assert str(error) == "ibstat line 3: unrecognised line (got 'garbage')"
    assert (error.reason, error.line) == ("unrecognised line", 3)
    assert isinstance(error, ValueError)
