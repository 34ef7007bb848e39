from __future__ import annotations

import pytest
from ansible.module_utils import cabling_judge
from ansible.module_utils.ibnetdiscover import IbnetdiscoverParseError, parse_ibnetdiscover_ports, unique_links
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED

from .samples import load, names

KIND = "ibnetdiscover_iblinkinfo"
EDR = "ibnetdiscover-p-edr-osc-subset-infiniband-exporter.txt"
HDR = "ibnetdiscover-p-hdr-mixed-infiniband-exporter.txt"

# port lines, connected, unique links, speeds of connected ports, unconnected (name, port, speed)
TABLE = {
    EDR: (9, 7, 4, {"EDR"}, [("ib-i4l1s01", 37, "???"), ("ib-i7l2s01", 80, "SDR")]),
    HDR: (6, 3, 3, {"HDR"}, [("5FB0406-spine-IB01", 1, "SDR"), ("5FB0406-spine-IB02", 1, "SDR"),
                             ("Infiniscale-IV Mellanox Technologies", 22, "QDR")]),
}  # fmt: skip


def test_table_covers_every_fixture():
    assert set(TABLE) == names(KIND)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_parse(name: str):
    lines, connected, links, speeds, down = TABLE[name]
    ports = parse_ibnetdiscover_ports(load(KIND, name))
    assert len(ports) == lines
    assert sum(p.connected for p in ports) == connected
    assert len(unique_links(ports)) == links
    assert {p.speed for p in ports if p.connected} == speeds
    assert {p.width for p in ports} == {"4x"}
    assert [(p.local.name, p.local.port, p.speed) for p in ports if not p.connected] == down


def test_link_ends_and_padded_names():
    ports = parse_ibnetdiscover_ports(load(KIND, EDR))
    first = ports[0]
    assert (first.local.node_type, first.local.lid, first.local.port, first.local.guid) == (
        "CA",
        134,
        1,
        "0x7cfe9003003b4bde",
    )
    assert (first.remote.node_type, first.remote.lid, first.remote.port, first.remote.name) == (
        "SW",
        1719,
        10,
        "ib-i1l1s01",
    )
    hdr = parse_ibnetdiscover_ports(load(KIND, HDR))
    assert hdr[1].local.name == "worker20 mlx5_3" and hdr[1].remote.name == "5FB0405-leaf-IB01"
    assert hdr[4].local.name == "5FB0406-spine-IB03"  # ' 5FB0406-spine-IB03 ' in the output


PLAN = [
    {"a": "o0001 HCA-1", "a_port": 1, "b": "ib-i1l1s01", "b_port": 10},
    {"a": "o0002 HCA-1", "a_port": 1, "b": "ib-i1l1s01", "b_port": 11},
    {"a": "p0001 HCA-1", "a_port": 1, "b": "ib-i4l1s01", "b_port": 35},
    {"a": "ib-i1l1s01", "a_port": 1, "b": "ib-i1l2s01", "b_port": 1},
]


@pytest.mark.parametrize(
    "name,expected,verdicts",
    [
        (EDR, {"speed": "EDR", "links": PLAN}, {"cabling.speed": PASS, "cabling.links": PASS}),
        # The same fabric where NDR was planned: every link end is slow.
        (EDR, {"speed": "NDR"}, {"cabling.speed": FAIL, "cabling.links": SKIPPED}),
        # A planned cable into port 37, which has no peer (4x ???), and a swapped pair.
        (
            EDR,
            {"speed": "EDR", "links": [*PLAN, {"a": "ib-i4l1s01", "a_port": 37, "b": "p0002 HCA-1", "b_port": 1},
                                      {"a": "o0001 HCA-1", "a_port": 1, "b": "ib-i1l1s01", "b_port": 11}]},
            {"cabling.speed": PASS, "cabling.links": FAIL},
        ),
        (HDR, {"speed": "HDR"}, {"cabling.speed": PASS, "cabling.links": SKIPPED}),
    ],
)  # fmt: skip
def test_cabling_judge(name, expected, verdicts):
    results = {r.check: r for r in cabling_judge.judge_cabling(parse_ibnetdiscover_ports(load(KIND, name)), expected)}
    assert {check: r.status for check, r in results.items()} == verdicts


def test_cabling_messages_name_the_fault():
    ports = parse_ibnetdiscover_ports(load(KIND, EDR))
    plan = [
        {"a": "ib-i4l1s01", "a_port": 37, "b": "p0002 HCA-1", "b_port": 1},
        {"a": "o0001 HCA-1", "a_port": 1, "b": "ib-i1l1s01", "b_port": 11},
        {"a": "0x1111", "a_port": 1, "b": "0x2222", "b_port": 1},
    ]
    problems = cabling_judge.judge_links(ports, {"links": plan}).measured
    assert problems == {
        "ib-i4l1s01/37 - p0002 HCA-1/1": "port down (4x ???, no peer)",
        "o0001 HCA-1/1 - ib-i1l1s01/11": "miscabled: goes to ib-i1l1s01/10",
        "0x1111/1 - 0x2222/1": "neither end is in the fabric",
    }


@pytest.mark.parametrize("text", ["", "switch port 1 up\n", "CA 134 1 0x7cfe 4x EDR - SW 1719\n"])
def test_malformed(text: str):
    with pytest.raises(IbnetdiscoverParseError):
        parse_ibnetdiscover_ports(text)
