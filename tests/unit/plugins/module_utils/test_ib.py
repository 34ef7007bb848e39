from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils import ib_judge
from ansible.module_utils.ib_sysfs import IbSysfsParseError, read_ib_sysfs
from ansible.module_utils.ibstat import IbstatParseError, parse_ibstat
from ansible.module_utils.ibv_devinfo import IbvDevinfoParseError, parse_ibv_devinfo
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, PASS, SKIPPED, WARN, ToolFailed, overall

from .samples import load, names

IB_H100 = [f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11)]  # the 8 NDR HCAs of the eth-down capture
ROCE_H100 = IB_H100  # the same slots carry the 400G ConnectX-7 ports in the RoCE capture

# name -> (CA count, {ca: (state, physical state, rate, link layer)} for a few CAs, firmware set)
IBSTAT = {
    "a100-hdr200-azure-ibpanic-exit255-gpud.txt": None,
    "a100-hdr200-ib-plus-roce-all-active-gpud.txt": (
        9,
        {"mlx5_0": ("Active", "LinkUp", 200, "Ethernet"), "mlx5_8": ("Active", "LinkUp", 200, "InfiniBand")},
        {"22.35.2302", "28.37.1014"},
    ),
    "h100-ndr400-8x-active-plus-roce-bond-gpud.txt": (
        9,
        {"mlx5_0": ("Active", "LinkUp", 400, "InfiniBand"), "mlx5_bond_0": ("Active", "LinkUp", 200, "Ethernet")},
        {"28.41.1000", "32.38.3056"},
    ),
    "h100-ndr400-ib-active-eth-down-disabled-gpud.txt": (
        12,
        {
            "mlx5_0": ("Active", "LinkUp", 400, "InfiniBand"),
            "mlx5_1": ("Active", "LinkUp", 100, "Ethernet"),
            "mlx5_2": ("Down", "Disabled", 40, "Ethernet"),
        },
        {"28.39.1002", "22.38.1002"},
    ),
    "h100-roce400-two-ports-down-polling-gpud.txt": (
        12,
        {
            "mlx5_0": ("Active", "LinkUp", 400, "Ethernet"),
            "mlx5_5": ("Down", "Disabled", 40, "Ethernet"),
            "mlx5_11": ("Down", "Polling", 40, "Ethernet"),
        },
        {"28.39.1002", "22.39.1002"},
    ),
    "p100-host-connectx3-fdr56-active.txt": (
        1,
        {"mlx4_0": ("Active", "LinkUp", 56, "InfiniBand")},
        {"2.42.5000"},
    ),
}


def test_ibstat_table_covers_every_fixture():
    assert set(IBSTAT) == names("ibstat")


@pytest.mark.parametrize("name", sorted(IBSTAT))
def test_ibstat(name: str):
    want = IBSTAT[name]
    text = load("ibstat", name)
    if want is None:
        # ibstat printed 8 healthy ports, then panicked on a vanished mlx5_8 and exited 255.
        with pytest.raises(ToolFailed, match=r"ibstat reported an error: ibpanic.*mlx5_8") as info:
            parse_ibstat(text)
        assert info.value.line == 137
        return
    count, ports, firmware = want
    cas = {ca.name: ca for ca in parse_ibstat(text)}
    assert len(cas) == count
    for name_, (state, phys, rate, layer) in ports.items():
        (port,) = cas[name_].ports
        assert (port.state, port.physical_state, port.rate, port.link_layer) == (state, phys, rate, layer)
    assert {ca.firmware_version for ca in cas.values()} == firmware


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "no CA found"),
        ("Port 1:\n", "before any CA"),
        ("CA 'mlx5_0'\n\tPort 1:\n\t\tRate: 400\n", "no 'State' line"),
        (
            "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: fast\n",
            "could not convert",
        ),
        ("CA 'mlx5_0'\n\tgarbage\n", "unrecognised line"),
    ],
)
def test_ibstat_malformed(text: str, match: str):
    with pytest.raises(IbstatParseError, match=match):
        parse_ibstat(text)


def test_ibv_devinfo():
    assert names("ibv_devinfo") == {"connectx3-mlx4-2hca-port1-active-port2-down.txt"}
    devices = parse_ibv_devinfo(load("ibv_devinfo", "connectx3-mlx4-2hca-port1-active-port2-down.txt"))
    assert [d.hca_id for d in devices] == ["mlx4_1", "mlx4_0"]
    assert {d.fw_ver for d in devices} == {"2.42.5000"}
    assert {d.vendor_part_id for d in devices} == {"4099"}
    assert [(p.number, p.state, p.link_layer) for p in devices[1].ports] == [
        (1, "PORT_ACTIVE", "InfiniBand"),
        (2, "PORT_DOWN", "InfiniBand"),
    ]
    assert (devices[1].ports[0].port_lid, devices[1].ports[0].sm_lid, devices[1].ports[0].active_mtu) == (
        32,
        18,
        "4096",
    )


@pytest.mark.parametrize("text", ["", "\tfw_ver:\t1.0\n"])
def test_ibv_devinfo_errors(text: str):
    with pytest.raises(IbvDevinfoParseError):
        parse_ibv_devinfo(text)


def test_ibv_devinfo_own_error_is_a_failed_run():
    with pytest.raises(ToolFailed, match="ibv_devinfo reported an error: No IB devices found"):
        parse_ibv_devinfo("No IB devices found\n")


@pytest.mark.parametrize("rate", ["inf", "nan", "1e999"])
def test_ibstat_non_finite_rate_is_a_parse_error(rate: str):
    text = load("ibstat", "p100-host-connectx3-fdr56-active.txt").replace("Rate: 56", f"Rate: {rate}")
    with pytest.raises(IbstatParseError, match="not a finite number"):
        parse_ibstat(text)


# --- judge over ibstat ---------------------------------------------------------------------------


def _judge(name: str, expected: dict) -> dict:
    ports = ib_judge.ports_from_ibstat(parse_ibstat(load("ibstat", name)))
    return {r.check: r for r in ib_judge.judge_ib_ports(ports, expected)}


def test_h100_ndr_node_passes_when_unused_ethernet_ports_are_not_expected():
    results = _judge(
        "h100-ndr400-ib-active-eth-down-disabled-gpud.txt",
        {"devices": IB_H100, "rate": 400, "link_layer": "InfiniBand", "firmware": "28.39.1002"},
    )
    statuses = {check: r.status for check, r in results.items()}
    assert statuses == {
        "ib.present": PASS,
        "ib.state": PASS,
        "ib.phys_state": PASS,
        "ib.rate": PASS,
        "ib.link_layer": PASS,
        "ib.firmware": PASS,
        "ib.counters": SKIPPED,  # ibstat has no counters
    }
    # The same capture judged by link layer alone also leaves the Ethernet ports out.
    assert (
        _judge("h100-ndr400-ib-active-eth-down-disabled-gpud.txt", {"link_layer": "InfiniBand"})["ib.state"].status
        == PASS
    )


def test_eth_down_disabled_port_fails_when_expected():
    results = _judge("h100-ndr400-ib-active-eth-down-disabled-gpud.txt", {"devices": [*IB_H100, "mlx5_2"]})
    assert results["ib.state"].status == FAIL
    assert results["ib.state"].measured["mlx5_2/1"] == "Down"
    assert results["ib.phys_state"].message == "mlx5_2/1: physical state Disabled"
    assert results["ib.firmware"].status == FAIL  # ConnectX-6 Dx 22.38 next to ConnectX-7 28.39


def test_roce_polling_and_disabled_ports_fail():
    results = _judge(
        "h100-roce400-two-ports-down-polling-gpud.txt", {"devices": ROCE_H100, "rate": 400, "link_layer": "Ethernet"}
    )
    assert results["ib.state"].status == FAIL
    assert results["ib.phys_state"].measured["mlx5_11/1"] == "Polling"
    assert results["ib.rate"].status == FAIL
    assert set(results["ib.rate"].message.split("; ")) == {
        "mlx5_11/1: 40 Gb/s below 400",
        "mlx5_5/1: 40 Gb/s below 400",
    }
    assert results["ib.link_layer"].status == PASS


@pytest.mark.parametrize(
    "name,expected,check,status",
    [
        # Firmware: the 8 HDR HCAs agree; with the RoCE NIC (another card) mixed in they do not.
        (
            "a100-hdr200-ib-plus-roce-all-active-gpud.txt",
            {"link_layer": "InfiniBand", "rate": 200},
            "ib.firmware",
            PASS,
        ),
        ("a100-hdr200-ib-plus-roce-all-active-gpud.txt", {}, "ib.firmware", FAIL),
        ("a100-hdr200-ib-plus-roce-all-active-gpud.txt", {"link_layer": "InfiniBand", "rate": 200}, "ib.rate", PASS),
        ("h100-ndr400-8x-active-plus-roce-bond-gpud.txt", {"link_layer": "InfiniBand", "rate": 400}, "ib.rate", PASS),
        ("h100-ndr400-8x-active-plus-roce-bond-gpud.txt", {"link_layer": "InfiniBand", "rate": 200}, "ib.rate", WARN),
        # This node has no mlx5_2/mlx5_3: a missing expected HCA fails.
        ("h100-ndr400-8x-active-plus-roce-bond-gpud.txt", {"devices": IB_H100}, "ib.present", FAIL),
        ("h100-ndr400-8x-active-plus-roce-bond-gpud.txt", {"firmware": "28.39.1002"}, "ib.firmware", FAIL),
        # FDR 56 where EDR 100 is expected.
        ("p100-host-connectx3-fdr56-active.txt", {"rate": 100}, "ib.rate", FAIL),
        ("p100-host-connectx3-fdr56-active.txt", {"rate": 56, "link_layer": "InfiniBand"}, "ib.state", PASS),
    ],
)
def test_ib_judge_verdicts(name, expected, check, status):
    assert _judge(name, expected)[check].status == status


def test_no_hardware_is_skipped_never_pass():
    (only,) = ib_judge.judge_ib_ports((), {})
    assert (only.status, only.message) == (SKIPPED, NO_HARDWARE)
    (missing,) = ib_judge.judge_ib_ports((), {"devices": ["mlx5_0"]})
    assert missing.status == FAIL


def test_ibv_devinfo_ports_judged_per_port():
    devices = parse_ibv_devinfo(load("ibv_devinfo", "connectx3-mlx4-2hca-port1-active-port2-down.txt"))
    ports = ib_judge.ports_from_ibv_devinfo(devices)
    only_cabled = {r.check: r for r in ib_judge.judge_ib_ports(ports, {"devices": ["mlx4_0/1", "mlx4_1/1"]})}
    assert only_cabled["ib.state"].status == PASS
    assert only_cabled["ib.phys_state"].status == SKIPPED  # plain ibv_devinfo has no physical state
    assert only_cabled["ib.firmware"].status == PASS
    whole = {r.check: r for r in ib_judge.judge_ib_ports(ports, {"devices": ["mlx4_0", "mlx4_1"]})}
    assert whole["ib.state"].status == FAIL


def test_cluster_firmware_consistency():
    fw = {"node1/mlx5_0": "28.39.1002", "node2/mlx5_0": "28.39.1002", "node3/mlx5_0": "28.37.1014"}
    assert ib_judge.judge_firmware(fw).status == FAIL
    assert ib_judge.judge_firmware({k: "28.39.1002" for k in fw}).status == PASS


# --- sysfs ---------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _tree_from_ibstat(root: Path, name: str, counters: dict[str, dict[str, int]] | None = None) -> None:
    """A fake /sys/class/infiniband holding what the ibstat capture shows, in sysfs' own formats."""
    states = {"Active": "4: ACTIVE", "Down": "1: DOWN"}
    phys = {"LinkUp": "5: LinkUp", "Disabled": "3: Disabled", "Polling": "2: Polling"}
    for ca in parse_ibstat(load("ibstat", name)):
        base = root / ca.name
        _write(base / "fw_ver", ca.firmware_version or "")
        _write(base / "hca_type", ca.ca_type or "")
        for port in ca.ports:
            p = base / "ports" / str(port.number)
            _write(p / "state", states[port.state])
            _write(p / "phys_state", phys[port.physical_state])
            _write(p / "rate", f"{port.rate:g} Gb/sec (4X)")
            _write(p / "link_layer", port.link_layer or "")
            for counter, value in {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 0}.items():
                _write(p / "counters" / counter, str((counters or {}).get(ca.name, {}).get(counter, value)))


def test_sysfs_reader_and_judge(tmp_path: Path):
    _tree_from_ibstat(tmp_path, "h100-ndr400-ib-active-eth-down-disabled-gpud.txt", {"mlx5_3": {"symbol_error": 7}})
    devices = read_ib_sysfs(str(tmp_path))
    assert len(devices) == 12
    mlx5_2 = next(d for d in devices if d.name == "mlx5_2")
    assert (mlx5_2.ports[0].state, mlx5_2.ports[0].phys_state, mlx5_2.ports[0].rate) == ("DOWN", "Disabled", 40.0)
    ports = ib_judge.ports_from_sysfs(devices)
    results = {r.check: r for r in ib_judge.judge_ib_ports(ports, {"devices": IB_H100, "rate": 400})}
    assert results["ib.state"].status == PASS
    assert results["ib.counters"].status == WARN
    assert results["ib.counters"].measured["mlx5_3/1"] == {"symbol_error": 7}
    limited = ib_judge.judge_ib_ports(ports, {"devices": IB_H100, "counter_limits": {"symbol_error": 5}})
    assert {r.check: r.status for r in limited}["ib.counters"] == FAIL


def test_sysfs_without_hardware(tmp_path: Path):
    assert read_ib_sysfs(str(tmp_path / "absent")) == ()
    assert overall(ib_judge.judge_ib_ports(ib_judge.ports_from_sysfs(()), {})) == SKIPPED


@pytest.mark.parametrize("file,value,match", [("state", "ACTIVE", "N: STATE"), ("rate", "fast", "Gb/sec")])
def test_sysfs_malformed(tmp_path: Path, file: str, value: str, match: str):
    _write(tmp_path / "mlx5_0" / "ports" / "1" / file, value)
    with pytest.raises(IbSysfsParseError, match=match):
        read_ib_sysfs(str(tmp_path))
