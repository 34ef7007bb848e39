"""opensm and ipoib on the lab node, which plays node01 of files/rdma.topology.yml: the expected
values are read from that topology with clusterforge's own loader, not from the roles. The lab's
kernel has no InfiniBand: opensm is configured and enabled but not started, and the IPoIB files
match no link. Inputs: molecule/rdma/molecule.yml."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from clusterforge.topology import load

SCENARIO = Path(__file__).resolve().parents[1]
PROJECT = SCENARIO.parents[1]
NETWORK_DIR = "/etc/systemd/network"


@pytest.fixture(scope="module")
def plan():
    return load(SCENARIO / "files" / "rdma.topology.yml", links=False)


@pytest.fixture
def duty(plan, inputs):
    [found] = plan.subnet_managers(plan.host(inputs["rdma_lab_topology_host"]))
    return found


@pytest.fixture
def ipoib(plan, inputs):
    host = plan.host(inputs["rdma_lab_topology_host"])
    addresses = plan.addresses(host)["ipoib"]
    fabric = plan.topology.fabrics[plan.ipoib_fabric]
    hcas = [hca for hca in plan.topology.node_types[host.node_type].hcas if hca.fabric == plan.ipoib_fabric]
    prefixes = [plan.subnets[f"ipoib_rail{rail}"].network.prefixlen for rail in range(1, len(hcas) + 1)]
    rows = zip(hcas, addresses, prefixes, strict=True)
    return [(hca.netdev, address, prefix, fabric) for hca, address, prefix in rows]


def _opensm_check(text: str) -> str:
    """The role's own check of opensm.conf (its template task's validate), as a shell command line."""
    tasks = yaml.safe_load((PROJECT / "roles" / "opensm" / "tasks" / "main.yml").read_text())
    block = next(task for task in tasks if task["name"] == "Install, configure and enable OpenSM")["block"]
    template = next(task for task in block if task["name"].startswith("Write opensm.conf"))
    validate = template["ansible.builtin.template"]["validate"]
    # Its one template is the binary's path (a role constant): Debian's, which the package installs.
    binary = re.sub(r"\{\{ \w+ \}\}", "/usr/sbin/opensm", validate)
    assert "{{" not in binary, validate
    return binary.replace("%s", shlex.quote(text))


def test_opensm_is_installed_at_its_pinned_version_and_held(host, inputs):
    package = host.package("opensm")
    assert package.is_installed
    assert package.version == inputs["opensm_version"]
    assert "opensm" in host.check_output("apt-mark showhold").split()


def test_opensm_takes_the_topologys_guid_priority_and_routing_engine(host, duty):
    """opensm's own reading of the file: -F loads it, -c dumps every option it then holds."""
    run = host.run("/usr/sbin/opensm --config /etc/opensm/opensm.conf --create-config /tmp/test-dump.conf")
    assert run.rc == 0, run.stderr
    output = run.stdout + run.stderr
    assert "Unrecognized token" not in output and "Parsing error" not in output, output
    dump = host.file("/tmp/test-dump.conf").content_string.splitlines()
    [guid] = duty["guids"]
    assert f"guid {guid}" in dump
    assert f"sm_priority {duty['priority']}" in dump
    assert f"routing_engine {duty['routing_engine']}" in dump
    assert duty["routing_engine"] == "ftree"  # the default for a (rail-optimised) fat tree


def test_the_ports_file_names_the_hosts_guid(host, duty):
    assert f'PORTS="{" ".join(duty["guids"])}"' in host.file("/etc/default/opensm").content_string.splitlines()


def test_the_roles_config_check_refuses_a_bad_line(host):
    """The check the role runs before writing opensm.conf fails on an unknown key and on a bad
    value, and passes the file the role wrote: it is not a check that cannot fail."""
    assert host.run(_opensm_check("/etc/opensm/opensm.conf")).rc == 0
    for bad in ("no_such_option 1", "sm_priority high"):
        host.check_output(f"printf '%s\\n' {shlex.quote(bad)} > /tmp/test-bad-opensm.conf")
        run = host.run(_opensm_check("/tmp/test-bad-opensm.conf"))
        assert run.rc == 1, (bad, run.stdout, run.stderr)


def test_opensm_is_enabled_and_not_started_without_a_port(host):
    """skipped: no hardware: the kernel has no InfiniBand MAD interface, the units' own condition."""
    assert not host.file("/sys/class/infiniband_mad/abi_version").exists
    assert host.service("opensm").is_enabled
    assert not host.service("opensm").is_running
    assert host.run("systemctl list-units --all --plain --no-legend 'opensm@*'").stdout.strip() == ""


def test_one_network_file_per_rail_with_the_topologys_address_mtu_and_mode(host, ipoib):
    assert len(ipoib) == 2
    # The interfaces' own files (the partition children's, with a second dot: test_ipoib_pkeys_gds.py).
    written = sorted(name for name in host.check_output(f"ls {NETWORK_DIR}").split() if name.count(".") == 1)
    assert written == sorted(f"60-clusterforge-ipoib-{netdev}.network" for netdev, *_ in ipoib)
    for netdev, address, prefix, fabric in ipoib:
        lines = host.file(f"{NETWORK_DIR}/60-clusterforge-ipoib-{netdev}.network").content_string.splitlines()
        assert f"Name={netdev}" in lines
        assert f"Address={address}/{prefix}" in lines
        assert f"MTUBytes={fabric.ipoib_mtu}" in lines
    rules = host.file("/etc/udev/rules.d/60-clusterforge-ipoib.rules").content_string.splitlines()
    assert [line for line in rules if not line.startswith("#")] == [
        f'ACTION=="add", SUBSYSTEM=="net", KERNEL=="{netdev}", ATTR{{mode}}="{fabric.ipoib_mode}"'
        for netdev, _, _, fabric in ipoib
    ]
    assert ipoib[0][3].ipoib_mode == "connected"  # the kernel's default is datagram: the rule is needed
    assert host.run("udevadm verify --resolve-names=never /etc/udev/rules.d/60-clusterforge-ipoib.rules").rc == 0


def test_networkd_runs_and_its_parser_takes_the_files_without_complaint(host):
    """networkd re-reads the files on a reload and logs `<file>:<line>: ...` for what it refuses
    (verify.yml shows it does, on a bad address)."""
    assert host.service("systemd-networkd").is_running
    assert host.service("systemd-networkd").is_enabled
    since = host.check_output("date +%s")
    host.check_output("sleep 1 && networkctl reload && journalctl --sync")
    journal = host.check_output(f"journalctl --unit systemd-networkd --since @{since} --output cat --no-pager")
    assert "60-clusterforge-ipoib-" not in journal and "clusterforge-ipoib.conf" not in journal, journal


def test_the_ipoib_links_are_absent_and_the_containers_interface_is_left_alone(host, ipoib):
    """skipped: no hardware: no IPoIB link exists. eth0 (docker's, the default route's) keeps its
    address and is not managed by networkd."""
    for netdev, *_ in ipoib:
        assert not host.file(f"/sys/class/net/{netdev}").exists
    default = host.check_output("ip -o route show default").split()
    interface = default[default.index("dev") + 1]
    assert host.check_output(f"ip -o -4 addr show dev {interface}")
    status = host.check_output(f"networkctl status {interface} --no-pager")
    assert "unmanaged" in status, status
