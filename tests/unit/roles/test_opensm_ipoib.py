"""opensm's and ipoib's decisions and files for hosts the lab node does not play: each role's own
expressions and templates, templated by Ansible, over what clusterforge_topology_host gives for the
rdma scenario's topologies. Molecule rdma runs node01 (one GUID) for real; a host with several
ports, and the ipoib refusals on their inputs, are tested here."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.paths import filters as filters_of
from tests.unit.roles.harness import render

FILES = PROJECT / "molecule" / "rdma" / "files"
OPENSM = PROJECT / "roles" / "opensm"
IPOIB = PROJECT / "roles" / "ipoib"
OPENSM_TASKS = {t["name"]: t for t in yaml.safe_load((OPENSM / "tasks" / "main.yml").read_text())}
IPOIB_TASKS = {t["name"]: t for t in yaml.safe_load((IPOIB / "tasks" / "main.yml").read_text())}
OPENSM_VARS = yaml.safe_load((OPENSM / "vars" / "main.yml").read_text())
IPOIB_VARS = yaml.safe_load((IPOIB / "vars" / "main.yml").read_text())


@pytest.fixture(scope="module")
def topology_host():
    return filters_of("plugins/filter/topology.py")["clusterforge_topology_host"]


def _skip_reason(duties: list[dict]) -> str:
    task = OPENSM_TASKS["Decide whether the host runs OpenSM"]
    variables = OPENSM_VARS | {"opensm_subnet_managers": duties}
    variables["__opensm_duties"] = render(OPENSM_VARS["__opensm_duties"], **variables)
    for name, expression in task["vars"].items():
        variables[name] = render(expression, **variables)
    return render(task["ansible.builtin.set_fact"]["opensm_skip_reason"], **variables).strip()


@pytest.mark.parametrize(
    ("topology", "host", "expected"),
    [
        ("rdma.topology.yml", "node01", ""),
        ("rdma.topology.yml", "node02", ""),
        ("rdma.topology.yml", "node03", "not a subnet manager host of any InfiniBand fabric in the topology"),
        (
            "rdma-ufm.topology.yml",
            "node01",
            "UFM manages fabric compute (subnet_manager kind ufm): it runs its own subnet manager",
        ),
    ],
)
def test_who_runs_opensm(topology_host, topology, host, expected):
    assert _skip_reason(topology_host(host, str(FILES / topology))["subnet_managers"]) == expected


def test_no_topology_means_no_opensm():
    assert _skip_reason([]) == "not a subnet manager host of any InfiniBand fabric in the topology"


def _opensm_files(duty: dict) -> tuple[list[str], list[str]]:
    conf = render((OPENSM / "templates" / "opensm.conf.j2").read_text(), __opensm_duty=duty)
    ports = render((OPENSM / "templates" / "opensm.default.j2").read_text(), __opensm_duty=duty)
    strip = lambda text: [line for line in text.splitlines() if line and not line.startswith("#")]  # noqa: E731 two uses
    return strip(conf), strip(ports)


def test_a_host_with_one_port_guid_binds_it_in_opensm_conf(topology_host):
    [duty] = topology_host("node01", str(FILES / "rdma.topology.yml"))["subnet_managers"]
    assert _opensm_files(duty) == (
        ["guid 0x0002c9030002fce9", "sm_priority 15", "routing_engine ftree"],
        ['PORTS="0x0002c9030002fce9"'],
    )


def test_a_host_with_several_ports_starts_one_sm_per_guid_and_names_none_in_the_conf():
    duty = {"fabric": "compute", "priority": 3, "guids": ["0x0002c9030002fce9", "0x0002c9030002fb06"]}
    duty["routing_engine"] = "updn"
    assert _opensm_files(duty) == (
        ["sm_priority 3", "routing_engine updn"],
        ['PORTS="0x0002c9030002fce9 0x0002c9030002fb06"'],
    )


def test_a_host_named_on_two_fabrics_is_refused():
    duties = [{"fabric": name, "runs_opensm": True} for name in ("ib_a", "ib_b")]
    task = OPENSM_TASKS["Refuse a host that manages more than one fabric"]["ansible.builtin.assert"]
    variables = OPENSM_VARS | {"opensm_subnet_managers": duties, "inventory_hostname": "node01"}
    variables["__opensm_duties"] = render(OPENSM_VARS["__opensm_duties"], **variables)
    assert render("{{ " + task["that"] + " }}", **variables) is False
    assert "fabrics ib_a, ib_b" in render(task["fail_msg"], **variables)


def _protected(probe_lines: list[str], netdevs: list[str], extra=()) -> tuple[bool, str]:
    task = IPOIB_TASKS["Refuse to configure the management interface or the one Ansible uses"]
    variables = IPOIB_VARS | {
        "ipoib_interfaces": [{"netdev": n} for n in netdevs],
        "ipoib_protected_interfaces": list(extra),
        "__ipoib_probe": {"stdout_lines": probe_lines},
    }
    variables["__ipoib_netdevs"] = render(IPOIB_VARS["__ipoib_netdevs"], **variables)
    variables["__ipoib_protected"] = render(task["vars"]["__ipoib_protected"], **variables)
    check = task["ansible.builtin.assert"]
    return render("{{ " + check["that"] + " }}", **variables), render(check["fail_msg"], **variables)


def test_the_default_route_and_ansible_interfaces_are_never_configured():
    probe = ["protected=eno1", "protected=ens3f0"]
    assert _protected(probe, ["ibp12s0", "ibp13s0"])[0] is True
    allowed, message = _protected(probe, ["ibp12s0", "ens3f0"])
    assert allowed is False
    assert message.startswith("ipoib: refuses to configure ens3f0:")
    assert _protected(probe, ["ibp12s0"], extra=["ibp12s0"])[0] is False
