"""The burn-in's port error counter judge (ib_counter_judge) on real perfquery captures.

No published before/after pair of one port was found, so the "grew" case pairs two real captures
from the same site (tests/fixtures/perfquery/*.source): port 1 of a clean two-port HCA as the
reading before, port 1 of an HCA with a downed link and transmit discards as the reading after.
"""

from __future__ import annotations

import pytest
from ansible.module_utils.ib_counter_judge import WATCHED, PerfqueryParseError, from_sysfs, judge, parse_perfquery
from ansible.module_utils.ib_sysfs import read_ib_sysfs

from .samples import load

CLEAN = load("perfquery", "hca-2port-extended-clean-osc.txt")
ERRORS = load("perfquery", "hca-1port-extended-link-downed-xmit-discards-osc.txt")


def test_perfquery_blocks_become_ports_with_sysfs_counter_names():
    ports = parse_perfquery(CLEAN, "mlx5_0")
    assert sorted(ports) == ["mlx5_0/1", "mlx5_0/2"]
    assert set(ports["mlx5_0/1"]) == set(WATCHED)  # traffic and PortXmitWait left out
    assert all(value == 0 for value in ports["mlx5_0/1"].values())
    errors = parse_perfquery(ERRORS)
    assert errors["hca/1"]["link_downed"] == 1
    assert errors["hca/1"]["port_rcv_switch_relay_errors"] == 7
    assert errors["hca/1"]["port_xmit_discards"] == 20046


def test_the_same_reading_twice_passes_every_port():
    before = parse_perfquery(CLEAN, "mlx5_0")
    results = judge(before, parse_perfquery(CLEAN, "mlx5_0"))
    assert [(r.check, r.status) for r in results] == [
        ("ib_counters.mlx5_0/1", "pass"),
        ("ib_counters.mlx5_0/2", "pass"),
    ]


def test_counters_that_grew_fail_the_port_naming_each_counter_and_growth():
    before = {"hca/1": parse_perfquery(CLEAN)["hca/1"]}
    [verdict] = judge(before, parse_perfquery(ERRORS))
    assert verdict.status == "fail"
    assert verdict.check == "ib_counters.hca/1"
    assert "link_downed 0 -> 1 (+1)" in verdict.message
    assert "port_xmit_discards 0 -> 20046 (+20046)" in verdict.message
    assert "symbol_error" not in verdict.message  # unchanged counters are not blamed
    assert verdict.measured["link_downed"] == [0, 1]


def test_nonzero_counters_that_did_not_grow_pass():
    # Errors from before the burn-in (a cable replaced since) do not fail it: only growth does.
    [verdict] = judge(parse_perfquery(ERRORS), parse_perfquery(ERRORS))
    assert verdict.status == "pass"


def test_a_counter_that_went_down_fails_because_growth_cannot_be_judged():
    [verdict] = judge(parse_perfquery(ERRORS), {"hca/1": parse_perfquery(CLEAN)["hca/1"]})
    assert verdict.status == "fail"
    assert "went down" in verdict.message and "link_downed 1 -> 0" in verdict.message


def test_a_port_missing_from_one_reading_fails():
    results = {r.check: r for r in judge(parse_perfquery(CLEAN), parse_perfquery(ERRORS))}
    assert results["ib_counters.hca/2"].status == "fail"
    assert "not read after" in results["ib_counters.hca/2"].message


def test_only_the_watched_counters_count():
    before = {"hca/1": parse_perfquery(CLEAN)["hca/1"]}
    [verdict] = judge(before, parse_perfquery(ERRORS), watched=["symbol_error", "link_error_recovery"])
    assert verdict.status == "pass"


def test_no_port_at_all_is_skipped_no_hardware():
    [verdict] = judge({}, {})
    assert (verdict.status, verdict.message) == ("skipped", "skipped: no hardware")


@pytest.mark.parametrize(
    "text",
    ["", "ibstat: command not found\n", "PortSelect:......................1\n", "# Port counters: Lid 1 port 1\n"],
    ids=["empty", "other command", "no header", "header only"],
)
def test_output_that_is_not_perfquery_is_a_parse_error(text):
    with pytest.raises(PerfqueryParseError):
        parse_perfquery(text)


def test_sysfs_readings_use_the_same_names(tmp_path):
    port = tmp_path / "mlx5_0" / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    (port / "link_layer").write_text("InfiniBand\n")
    (port / "counters" / "symbol_error").write_text("3\n")
    (port / "counters" / "port_xmit_wait").write_text("99\n")  # congestion, not an error: not watched
    roce = tmp_path / "mlx5_1" / "ports" / "1"
    (roce / "counters").mkdir(parents=True)
    (roce / "link_layer").write_text("Ethernet\n")
    assert from_sysfs(read_ib_sysfs(str(tmp_path))) == {"mlx5_0/1": {"symbol_error": 3}}
