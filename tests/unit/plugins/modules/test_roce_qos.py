"""roce_qos: the parser on a real mlnx_qos listing, and the module against a fake sysfs tree and a
STAND-IN mlnx_qos (standins/mlnx_qos: the real tool is NVIDIA's, not in Debian) run for real as a
subprocess: what changes, a second run that changes nothing, check mode, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.module_utils import basic

from tests.unit.plugins.module_utils.samples import load
from tests.unit.plugins.modules.conftest import ModuleExit, ModuleFail

from ansible.module_utils.roce_qos import MlnxQosParseError, commands, parse_mlnx_qos  # isort: skip

STAND_IN = Path(__file__).parent / "standins" / "mlnx_qos"
DCB_STAND_IN = Path(__file__).parent / "standins" / "dcb"
REAL = load("mlnx_qos", "mlnx-ofed-4.2-trust-dscp-pfc-0-2-6-7-community-doc-2792.txt")
WANT = {"netdev": "ens1f0np0", "priority": 3, "dscp": 26, "ecn": True, "mtu": 9000}


def test_the_parser_reads_a_real_listing():
    parsed = parse_mlnx_qos(REAL)
    assert (parsed["trust"], parsed["pfc"]) == ("dscp", [1, 0, 1, 0, 0, 0, 1, 1])
    # The listing's dscp2prio rows: the firmware's default map, all 64 DSCPs, d on priority d // 8.
    assert len(parsed["dscp2prio"]) == 64 and (parsed["dscp2prio"][26], parsed["dscp2prio"][46]) == (3, 5)
    assert parse_mlnx_qos(REAL.split("dscp2prio mapping:")[0] + "PFC" + REAL.split("PFC", 1)[1])["dscp2prio"] == {}
    with pytest.raises(MlnxQosParseError, match="no PFC 'enabled' row"):
        parse_mlnx_qos(REAL.replace("enabled 1 0 1 0 0 0 1 1", ""))


def test_the_full_command_set_is_what_a_boot_script_runs():
    assert commands(WANT, "/usr/sbin/mlnx_qos", "/sys/class/net") == [
        [
            "/usr/sbin/mlnx_qos",
            "-i",
            "ens1f0np0",
            "--trust",
            "dscp",
            "--dscp2prio",
            "set,26,3",
            "--pfc",
            "0,0,0,1,0,0,0,0",
        ],
        ["write", "/sys/class/net/ens1f0np0/mtu", "9000"],
        ["write", "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3", "1"],
        ["write", "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/3", "1"],
    ]
    assert [c[1] for c in commands({**WANT, "priority": 5}, None, "/s")] == [
        "/s/ens1f0np0/mtu", "/s/ens1f0np0/ecn/roce_np/enable/5", "/s/ens1f0np0/ecn/roce_rp/enable/5",
    ]  # fmt: skip


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A netdev at factory settings: PCP trust, PFC off, ECN off on priority 3, MTU 1500. The module's
    commands run for real (the stand-in); only its exit is caught."""

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs)

    def fail_json(self, msg, **kwargs):
        raise ModuleFail({"msg": msg, **kwargs})

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    root = tmp_path / "net"
    for point in ("roce_np", "roce_rp"):
        (root / "ens1f0np0" / "ecn" / point / "enable").mkdir(parents=True)
        (root / "ens1f0np0" / "ecn" / point / "enable" / "3").write_text("0\n")
    (root / "ens1f0np0" / "mtu").write_text("1500\n")
    state, log = tmp_path / "qos.json", tmp_path / "qos.log"
    state.write_text(json.dumps({"ens1f0np0": {"trust": "pcp", "pfc": [0] * 8}}))
    monkeypatch.setenv("MLNX_QOS_STATE", str(state))
    monkeypatch.setenv("MLNX_QOS_LOG", str(log))
    return {"root": root, "state": state, "log": log}


def _args(host, **extra):
    return {"interfaces": [WANT], "mlnx_qos": str(STAND_IN), "sysfs_root": str(host["root"]), **extra}


def test_factory_settings_are_changed_once_and_a_second_run_changes_nothing(run, host):
    first = run("roce_qos", _args(host))
    assert not first.failed and first.result["changed"]
    assert first.result["interfaces"]["ens1f0np0"]["changes"][:2] == [
        "trust pcp -> dscp", "pfc [0, 0, 0, 0, 0, 0, 0, 0] -> [0, 0, 0, 1, 0, 0, 0, 0]",
    ]  # fmt: skip
    assert json.loads(host["state"].read_text()) == {
        "ens1f0np0": {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "dscp2prio": {"26": 3}}
    }
    assert (host["root"] / "ens1f0np0" / "mtu").read_text() == "9000"
    assert (host["root"] / "ens1f0np0" / "ecn" / "roce_rp" / "enable" / "3").read_text() == "1"
    second = run("roce_qos", _args(host))
    assert not second.result["changed"] and second.result["interfaces"]["ens1f0np0"]["status"] == "unchanged"
    # The second run only read the listing: one -i call, no set.
    calls = [json.loads(line) for line in host["log"].read_text().splitlines()]
    assert calls[-1] == ["-i", "ens1f0np0"] and len(calls) == 3


def test_a_dscp_off_the_default_map_gets_its_entry_once(run, host):
    # DSCP 26 on priority 4: the default map puts 26 on 3, so trust and PFC alone would leave the
    # RoCE traffic on a priority without PFC.
    state = {"ens1f0np0": {"trust": "dscp", "pfc": [0, 0, 0, 0, 1, 0, 0, 0]}}
    host["state"].write_text(json.dumps(state))
    want = {**WANT, "priority": 4}
    (host["root"] / "ens1f0np0" / "ecn" / "roce_np" / "enable" / "4").write_text("1\n")
    (host["root"] / "ens1f0np0" / "ecn" / "roce_rp" / "enable" / "4").write_text("1\n")
    (host["root"] / "ens1f0np0" / "mtu").write_text("9000\n")
    first = run("roce_qos", _args(host, interfaces=[want]))
    assert first.result["interfaces"]["ens1f0np0"]["changes"] == ["dscp2prio 26: 3 -> 4"]
    assert json.loads(host["state"].read_text())["ens1f0np0"]["dscp2prio"] == {"26": 4}
    second = run("roce_qos", _args(host, interfaces=[want]))
    assert second.result["interfaces"]["ens1f0np0"]["status"] == "unchanged"


def test_check_mode_reports_and_changes_nothing(run, host):
    done = run("roce_qos", _args(host), check_mode=True)
    assert done.result["changed"] and len(done.result["interfaces"]["ens1f0np0"]["changes"]) == 5
    assert json.loads(host["state"].read_text())["ens1f0np0"]["trust"] == "pcp"
    assert (host["root"] / "ens1f0np0" / "mtu").read_text() == "1500\n"


def test_without_mlnx_qos_or_dcb_sysfs_is_applied_and_trust_and_pfc_said_unset(run, host, tmp_path):
    done = run("roce_qos", _args(host, mlnx_qos=str(tmp_path / "absent"), dcb=str(tmp_path / "absent")))
    result = done.result["interfaces"]["ens1f0np0"]
    assert done.result["via"] == "sysfs" and done.result["changed"]
    assert result["unset"] == ["trust and PFC: neither mlnx_qos nor dcb (iproute2) found"]
    assert (host["root"] / "ens1f0np0" / "mtu").read_text() == "9000"
    assert not host["log"].exists()


def test_a_missing_netdev_is_no_hardware_and_absent_ecn_files_are_said(run, host):
    (host["root"] / "ens1f1np1").mkdir()
    (host["root"] / "ens1f1np1" / "mtu").write_text("9000\n")
    state = json.loads(host["state"].read_text())
    host["state"].write_text(json.dumps({**state, "ens1f1np1": {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0]}}))
    interfaces = [WANT, {**WANT, "netdev": "ens1f1np1"}, {**WANT, "netdev": "ens9"}]
    done = run("roce_qos", _args(host, interfaces=interfaces))
    results = done.result["interfaces"]
    assert results["ens9"] == {"status": "skipped", "changes": [], "unset": [], "msg": "skipped: no hardware"}
    assert results["ens1f1np1"]["status"] == "unchanged"
    assert [u.split(":")[0] for u in results["ens1f1np1"]["unset"]] == [
        f"{host['root']}/ens1f1np1/ecn/roce_np/enable/3", f"{host['root']}/ens1f1np1/ecn/roce_rp/enable/3",
    ]  # fmt: skip
    required = run("roce_qos", _args(host, interfaces=[{**WANT, "netdev": "ens9"}], require_hardware=True))
    assert required.failed and "ens9: no such netdev" in required.result["msg"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"priority": 8}, "interfaces[0].priority: expected 0 to 7, got 8"),
        ({"dscp": "26"}, "interfaces[0].dscp: expected int, got '26'"),
        ({"ecn": 1}, "interfaces[0].ecn: expected bool, got 1"),
        ({"mtu": 100}, "interfaces[0].mtu: expected 1500 to 9216, got 100"),
        ({"netdev": "../eth0"}, "interfaces[0].netdev: expected a network interface name, got '../eth0'"),
    ],
)
def test_bad_input_names_the_entry_and_the_field(run, host, change, message):
    done = run("roce_qos", _args(host, interfaces=[{**WANT, **change}]))
    assert done.failed and done.result["msg"] == message


@pytest.fixture
def dcb_host(host, tmp_path, monkeypatch):
    """The same netdev with no mlnx_qos: trust and PFC through the STAND-IN dcb at factory settings
    (PFC off, an empty APP table); ens1f1np1 is a netdev whose driver has no DCB (a veth's answer)."""
    (host["root"] / "ens1f1np1").mkdir()
    (host["root"] / "ens1f1np1" / "mtu").write_text("9000\n")
    state, log = tmp_path / "dcb.json", tmp_path / "dcb.log"
    state.write_text(json.dumps({"ens1f0np0": {"pfc": [0] * 8, "app": {}}, "ens1f1np1": None}))
    monkeypatch.setenv("DCB_STATE", str(state))
    monkeypatch.setenv("DCB_LOG", str(log))
    return {**host, "dcb_state": state, "dcb_log": log}


def _dcb_args(host, tmp_path, **extra):
    return _args(host, mlnx_qos=str(tmp_path / "absent"), dcb=str(DCB_STAND_IN), **extra)


def _dcb_calls(host) -> list:
    """Each call's object and command: ["pfc", "show"] (reads pass -N, numbers for DSCP names)."""
    calls = [json.loads(line) for line in host["dcb_log"].read_text().splitlines()]
    return [[word for word in call if word != "-N"][:2] for call in calls]


def test_without_mlnx_qos_dcb_sets_trust_and_pfc_once_then_only_reads(run, dcb_host, tmp_path):
    first = run("roce_qos", _dcb_args(dcb_host, tmp_path))
    result = first.result["interfaces"]["ens1f0np0"]
    assert first.result["via"] == str(DCB_STAND_IN) and result["via"] == str(DCB_STAND_IN)
    assert result["status"] == "changed" and result["changes"][:2] == [
        "dscp-prio 26:[] -> 26:[3] (DSCP trust)",
        "pfc [0, 0, 0, 0, 0, 0, 0, 0] -> [0, 0, 0, 1, 0, 0, 0, 0]",
    ]
    assert json.loads(dcb_host["dcb_state"].read_text())["ens1f0np0"] == {
        "pfc": [0, 0, 0, 1, 0, 0, 0, 0],
        "app": {"26": [3]},
    }
    assert first.result["commands"]["ens1f0np0"][:2] == [
        [str(DCB_STAND_IN), "app", "replace", "dev", "ens1f0np0", "dscp-prio", "26:3"],
        [
            str(DCB_STAND_IN),
            "pfc",
            "set",
            "dev",
            "ens1f0np0",
            "prio-pfc",
            *[f"{p}:{'on' if p == 3 else 'off'}" for p in range(8)],
        ],
    ]
    writes = len(_dcb_calls(dcb_host))
    second = run("roce_qos", _dcb_args(dcb_host, tmp_path))
    assert not second.result["changed"] and second.result["interfaces"]["ens1f0np0"]["status"] == "unchanged"
    # The second run only read: the PFC row and the APP table, no set.
    assert _dcb_calls(dcb_host)[writes:] == [["pfc", "show"], ["app", "show"]]


def test_dcb_changes_only_what_differs_and_check_mode_changes_nothing(run, dcb_host, tmp_path):
    dcb_host["dcb_state"].write_text(json.dumps({"ens1f0np0": {"pfc": [0, 0, 0, 1, 0, 0, 0, 0], "app": {"26": [5]}}}))
    checked = run("roce_qos", _dcb_args(dcb_host, tmp_path), check_mode=True)
    assert checked.result["changed"]
    assert checked.result["interfaces"]["ens1f0np0"]["changes"][0] == "dscp-prio 26:[5] -> 26:[3] (DSCP trust)"
    assert _dcb_calls(dcb_host) == [["pfc", "show"], ["app", "show"]]
    done = run("roce_qos", _dcb_args(dcb_host, tmp_path))
    assert done.result["interfaces"]["ens1f0np0"]["changes"][0].startswith("dscp-prio")
    # PFC was right already: only the APP entry is replaced.
    assert [call for call in _dcb_calls(dcb_host) if call[1] != "show"] == [["app", "replace"]]


def test_a_netdev_without_dcb_support_is_skipped_no_hardware_not_passed(run, dcb_host, tmp_path):
    done = run("roce_qos", _dcb_args(dcb_host, tmp_path, interfaces=[{**WANT, "netdev": "ens1f1np1"}]))
    result = done.result["interfaces"]["ens1f1np1"]
    assert not done.failed and not done.result["changed"]
    assert result["status"] == "skipped"
    assert result["unset"][0] == (
        f"trust and PFC: skipped: no hardware: ens1f1np1 has no DCB support ({DCB_STAND_IN} -N pfc show dev "
        "ens1f1np1 prio-pfc: Attribute read: Operation not supported)"
    )


def test_a_dcb_failure_other_than_no_support_fails_with_its_message(run, dcb_host, tmp_path):
    dcb_host["dcb_state"].write_text(json.dumps({}))  # the stand-in answers "No such device"
    done = run("roce_qos", _dcb_args(dcb_host, tmp_path))
    assert done.failed and done.result["msg"].endswith("pfc show dev ens1f0np0 prio-pfc exited 1")
    assert done.result["stderr"].strip() == "Attribute read: No such device"
