from __future__ import annotations

import pytest
from ansible.module_utils.verdicts import (
    FAIL,
    PASS,
    SKIPPED,
    WARN,
    CheckResult,
    ParseError,
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


def test_parse_error_says_where_and_what():
    error = ParseError("unrecognised line", source="ibstat", line=3, text="garbage\n")
    assert str(error) == "ibstat line 3: unrecognised line (got 'garbage')"
    assert (error.reason, error.line) == ("unrecognised line", 3)
    assert isinstance(error, ValueError)
