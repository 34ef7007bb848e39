"""roce_qos's boot script: the module's full command set rendered by Ansible's own templating from the
role's template, then run with sh against a fake sysfs tree and the STAND-IN mlnx_qos
(tests/unit/plugins/modules/standins/mlnx_qos), as the boot unit would run it."""

from __future__ import annotations

import json
import subprocess

from tests.paths import PROJECT
from tests.unit.plugins.module_utils import samples  # noqa: F401 (puts plugins/module_utils into ansible.module_utils)
from tests.unit.roles.harness import render

from ansible.module_utils.roce_qos import commands  # isort: skip

TEMPLATE = PROJECT / "roles" / "roce_qos" / "templates" / "clusterforge-roce-qos.sh.j2"
STAND_IN = PROJECT / "tests" / "unit" / "plugins" / "modules" / "standins" / "mlnx_qos"
DCB_STAND_IN = STAND_IN.with_name("dcb")


def _script(root, interfaces: list, program, dcb=None) -> str:
    applied = {
        "sysfs_root": str(root),
        "commands": {i["netdev"]: commands(i, program, str(root), dcb) for i in interfaces},
    }
    return render(TEMPLATE.read_text(), ansible_managed="Ansible managed", __roce_qos_applied=applied)


def test_the_boot_script_applies_the_full_set_and_passes_over_what_is_absent(tmp_path):
    root = tmp_path / "net"
    (root / "ens1f0np0" / "ecn" / "roce_np" / "enable").mkdir(parents=True)
    (root / "ens1f0np0" / "ecn" / "roce_np" / "enable" / "3").write_text("0\n")
    (root / "ens1f0np0" / "mtu").write_text("1500\n")
    state, log = tmp_path / "qos.json", tmp_path / "qos.log"
    state.write_text(json.dumps({"ens1f0np0": {"trust": "pcp", "pfc": [0] * 8}}))
    interfaces = [
        {"netdev": "ens1f0np0", "priority": 3, "dscp": 26, "ecn": True, "mtu": 9000},
        {"netdev": "ens9", "priority": 3, "dscp": 26, "ecn": True, "mtu": 9000},  # not on this host
    ]
    script = tmp_path / "clusterforge-roce-qos"
    script.write_text(_script(root, interfaces, str(STAND_IN)))
    assert script.read_text().startswith("#!/bin/sh\n#\n# Ansible managed\n")
    env = {"PATH": "/usr/bin:/bin", "MLNX_QOS_STATE": str(state), "MLNX_QOS_LOG": str(log)}
    done = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(state.read_text()) == {
        "ens1f0np0": {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "dscp2prio": {"26": 3}}
    }
    assert (root / "ens1f0np0" / "mtu").read_text().strip() == "9000"
    assert (root / "ens1f0np0" / "ecn" / "roce_np" / "enable" / "3").read_text().strip() == "1"
    assert not (root / "ens1f0np0" / "ecn" / "roce_rp").exists()  # absent on this driver: passed over
    assert not (root / "ens9").exists()
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        ["-i", "ens1f0np0", "--trust", "dscp", "--dscp2prio", "set,26,3", "--pfc", "0,0,0,1,0,0,0,0"]
    ]


def test_without_mlnx_qos_the_script_writes_sysfs_only(tmp_path):
    root = tmp_path / "net"
    (root / "ens1f0np0").mkdir(parents=True)
    (root / "ens1f0np0" / "mtu").write_text("1500\n")
    text = _script(root, [{"netdev": "ens1f0np0", "priority": 5, "dscp": 24, "ecn": False, "mtu": 4200}], None)
    assert "--trust" not in text and "--pfc" not in text
    done = subprocess.run(["sh", "-c", text], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and (root / "ens1f0np0" / "mtu").read_text().strip() == "4200"


def test_without_mlnx_qos_the_boot_script_runs_the_dcb_commands(tmp_path):
    root = tmp_path / "net"
    (root / "ens1f0np0").mkdir(parents=True)
    (root / "ens1f0np0" / "mtu").write_text("9000\n")
    state, log = tmp_path / "dcb.json", tmp_path / "dcb.log"
    state.write_text(json.dumps({"ens1f0np0": {"pfc": [1] * 8, "app": {}}}))
    interface = {"netdev": "ens1f0np0", "priority": 3, "dscp": 26, "ecn": True, "mtu": 9000}
    script = tmp_path / "clusterforge-roce-qos"
    script.write_text(_script(root, [interface], None, str(DCB_STAND_IN)))
    env = {"PATH": "/usr/bin:/bin", "DCB_STATE": str(state), "DCB_LOG": str(log)}
    done = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(state.read_text()) == {"ens1f0np0": {"pfc": [0, 0, 0, 1, 0, 0, 0, 0], "app": {"26": [3]}}}
