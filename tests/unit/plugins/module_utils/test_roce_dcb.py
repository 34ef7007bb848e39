"""roce_dcb: the parsers of iproute2's dcb on real outputs (tests/fixtures/dcb_pfc, dcb_app), and the
changes and commands the roce_qos module derives from them."""

from __future__ import annotations

import pytest

from .samples import load

from ansible.module_utils.roce_dcb import (  # isort: skip
    DcbParseError,
    dcb_argvs,
    dcb_changes,
    parse_app_dscp,
    parse_pfc,
)

PFC_ON_3 = load("dcb_pfc", "connectx3-mlx4-prio-pfc-3-on-lab-baremetal-gpu-cluster.txt")
PFC_OFF = load("dcb_pfc", "connectx3-mlx4-all-off-lab-baremetal-gpu-cluster.txt")
APP_AF31 = load("dcb_app", "connectx3-mlx4-dscp-prio-af31-3-lab-baremetal-gpu-cluster.txt")
WANT = {"netdev": "ens6", "priority": 3, "dscp": 26, "ecn": True, "mtu": 9000}


def test_pfc_is_read_from_real_outputs():
    assert parse_pfc(PFC_ON_3) == [0, 0, 0, 1, 0, 0, 0, 0]
    assert parse_pfc(PFC_OFF) == [0] * 8
    # `dcb pfc show dev X prio-pfc` prints the row alone.
    assert parse_pfc(PFC_ON_3.splitlines()[1]) == [0, 0, 0, 1, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pfc-cap 8 macsec-bypass off delay 0\n", "no 'prio-pfc' row"),
        ("prio-pfc 0:off 1:off 2:off 3:on\n", "expected priorities 0 to 7"),
        ("prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off 3:off\n", "once per priority"),
        ("prio-pfc 0:off 1:off 2:off 3:yes 4:off 5:off 6:off 7:off\n", "once per priority"),
    ],
)
def test_a_pfc_row_that_is_not_eight_priorities_is_refused(text, message):
    with pytest.raises(DcbParseError, match=message):
        parse_pfc(text)


def test_the_dscp_entry_is_read_by_name_or_number():
    # Without -N dcb prints iproute2's name for DSCP 26: AF31.
    assert parse_app_dscp(APP_AF31) == {26: [3]}
    assert parse_app_dscp("dscp-prio 26:3 46:5 CS6:6\n") == {26: [3], 46: [5], 48: [6]}
    assert parse_app_dscp("dscp-prio 26:3 26:4\n") == {26: [3, 4]}
    assert parse_app_dscp("") == {}
    with pytest.raises(DcbParseError, match="no 'dscp-prio' row"):
        parse_app_dscp(PFC_OFF)
    with pytest.raises(DcbParseError, match="expected DSCP:PRIO"):
        parse_app_dscp("dscp-prio 64:3\n")


def test_changes_name_only_what_differs_and_the_command_that_does_it():
    assert dcb_changes(parse_pfc(PFC_ON_3), parse_app_dscp(APP_AF31), WANT) == []
    assert dcb_changes(parse_pfc(PFC_OFF), {}, WANT) == [
        ("dscp-prio 26:[] -> 26:[3] (DSCP trust)", 0),
        ("pfc [0, 0, 0, 0, 0, 0, 0, 0] -> [0, 0, 0, 1, 0, 0, 0, 0]", 1),
    ]
    # A DSCP entry on two priorities is replaced by the one.
    assert dcb_changes(parse_pfc(PFC_ON_3), {26: [3, 4]}, WANT) == [("dscp-prio 26:[3, 4] -> 26:[3] (DSCP trust)", 0)]
    assert dcb_argvs("/usr/sbin/dcb", WANT) == [
        ["/usr/sbin/dcb", "app", "replace", "dev", "ens6", "dscp-prio", "26:3"],
        [
            "/usr/sbin/dcb",
            "pfc",
            "set",
            "dev",
            "ens6",
            "prio-pfc",
            *["0:off", "1:off", "2:off", "3:on", "4:off", "5:off", "6:off", "7:off"],
        ],
    ]
