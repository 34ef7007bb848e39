"""roce_qos's fallback on the lab node: no mlnx_qos (NVIDIA's, not in Debian), so trust and PFC go to
Debian's own iproute2 dcb, on a veth (roce0, made by converge.yml) whose driver has no DCB support.
The real dcb answers "Operation not supported", so the role skips trust and PFC (verify.yml checks its
"skipped: no hardware" result); here, the node's state: the precondition, and the boot script and
unit that would apply the dcb commands at boot on a NIC that has DCB. Inputs: molecule/rdma/molecule.yml."""

from __future__ import annotations

import shlex

import pytest

SCRIPT = "/usr/local/sbin/clusterforge-roce-qos"


@pytest.fixture
def wanted(inputs) -> dict:
    [interface] = inputs["roce_qos_interfaces"]
    return interface


def test_the_node_has_dcb_and_no_mlnx_qos(host):
    assert host.exists("dcb") and host.find_command("dcb") == "/usr/sbin/dcb"
    assert not host.exists("mlnx_qos")


def test_the_real_dcb_finds_no_dcb_support_on_the_netdev(host, wanted):
    """The precondition of the skip: the netdev exists, and the kernel answers dcb's read with
    EOPNOTSUPP (a veth has no DCB operations), as for any netdev that is not a DCB-capable NIC."""
    netdev = wanted["netdev"]
    assert host.file(f"/sys/class/net/{netdev}").exists
    run = host.run(f"dcb -N pfc show dev {netdev} prio-pfc")
    assert run.rc == 1 and run.stdout == ""
    assert run.stderr.strip().splitlines()[0] == "Attribute read: Operation not supported"


def test_nothing_was_set_on_the_netdev(host, wanted):
    netdev = wanted["netdev"]
    # No MLNX_OFED ECN tree on a veth, and the MTU converge gave it.
    assert not host.file(f"/sys/class/net/{netdev}/ecn").exists
    assert host.file(f"/sys/class/net/{netdev}/mtu").content_string.strip() == str(wanted["mtu"])


def test_the_boot_script_holds_the_dcb_commands(host, wanted):
    netdev, dscp, priority = wanted["netdev"], wanted["dscp"], wanted["priority"]
    script = host.file(SCRIPT)
    assert script.mode == 0o755 and script.user == "root"
    lines = [shlex.split(line) for line in script.content_string.splitlines() if "/usr/sbin/dcb" in line]
    pfc = [f"{prio}:{'on' if prio == priority else 'off'}" for prio in range(8)]
    assert lines == [
        ["/usr/sbin/dcb", "app", "replace", "dev", netdev, "dscp-prio", f"{dscp}:{priority}"],
        ["/usr/sbin/dcb", "pfc", "set", "dev", netdev, "prio-pfc", *pfc],
    ]
    assert host.service("clusterforge-roce-qos").is_enabled


def test_the_boot_script_runs_and_the_real_dcb_refuses_the_netdev(host, wanted):
    """Run as the unit would at boot: it exits 0 (a netdev without DCB must not fail the boot), and
    dcb's complaint is the kernel's refusal, not a usage error of the commands the module built
    (dcb says "What is ...", "Invalid ..." or prints its usage for those)."""
    run = host.run(SCRIPT)
    assert run.rc == 0, run.stderr
    assert "Operation not supported" in run.stderr, run.stderr
    for usage_error in ("What is", "Invalid", "Usage:"):
        assert usage_error not in run.stderr, run.stderr
