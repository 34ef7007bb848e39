"""Prometheus targets generated from the topology inventory (clusterforge.monitoring.scrape and
the clusterforge_monitoring_targets filter): address and labels per host, from its groups and
variables as the topology inventory gives them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from clusterforge.monitoring import scrape
from clusterforge.topology import inventory, load
from tests.paths import PROJECT, filters

EXAMPLES = PROJECT / "inventories" / "examples"
targets_filter = filters("plugins/filter/monitoring.py")["clusterforge_monitoring_targets"]


def _hostvars(topology_file):
    """What Ansible's hostvars would hold for each host of the topology's inventory: group
    variables, then host variables, and group_names."""
    data = inventory.build(load(topology_file, links=False))
    parents: dict[str, list[str]] = {}
    for parent, kids in data.children.items():
        for kid in kids:
            parents.setdefault(kid, []).append(parent)

    def ancestors(group):
        found = [group]
        for parent in parents.get(group, []):
            found.extend(ancestors(parent))
        return found

    hostvars = {}
    for host, own in data.host_vars.items():
        groups = [g for g, hosts in data.group_hosts.items() if host in hosts]
        every = list(dict.fromkeys(a for g in groups for a in ancestors(g)))
        variables = dict(data.all_vars)
        for group in every:
            variables.update(data.group_vars.get(group, {}))
        variables.update(own)
        variables["group_names"] = sorted(every)
        hostvars[host] = variables
    return hostvars


def test_superpod_targets_carry_unit_leaf_role_and_node_type():
    topology = EXAMPLES / "h100-superpod.topology.yml"
    hostvars = _hostvars(topology)
    found = targets_filter(["dgx001", "dgx127", "head01"], hostvars, 9100, topology_file=str(topology))
    assert found[0] == {
        "targets": ["10.130.0.15:9100"],
        "labels": {
            "node": "dgx001",
            "role": "compute",
            "node_type": "dgx_h100",
            "unit": "1",
            "leaf": "compute_su1_leaves",
        },
    }
    assert found[1]["labels"] == {
        "node": "dgx127",
        "role": "compute",
        "node_type": "dgx_h100",
        "unit": "4",
        "leaf": "compute_su4_leaves",
    }
    # The head node has no unit and no compute leaf: those labels are left out, not empty.
    assert found[2]["labels"] == {"node": "head01", "role": "head", "node_type": "mgmt_server"}


def test_a_fat_tree_leaf_is_the_switch_the_host_is_cabled_to():
    topology = EXAMPLES / "pcie-roce-small.topology.yml"
    hostvars = _hostvars(topology)
    gpu_hosts = [host for host in hostvars if host.startswith("gpu")]
    found = targets_filter(gpu_hosts, hostvars, 9400, topology_file=str(topology))
    assert {group["labels"]["leaf"] for group in found} == {"compute_svc_leaf1"}
    assert all(group["targets"][0].endswith(":9400") for group in found)
    assert [group["labels"]["node"] for group in found] == gpu_hosts


def test_every_superpod_host_gets_one_target_group_with_its_management_address():
    topology = EXAMPLES / "h100-superpod.topology.yml"
    hostvars = _hostvars(topology)
    found = targets_filter(list(hostvars), hostvars, 9100, topology_file=str(topology))
    assert len(found) == len(hostvars) == 132
    assert [group["targets"] for group in found] == [[f"{hostvars[h]['ansible_host']}:9100"] for h in hostvars]
    units = {group["labels"].get("unit") for group in found if group["labels"]["role"] == "compute"}
    assert units == {"1", "2", "3", "4"}


def test_the_lab_targets_are_its_container_names():
    topology = PROJECT / "inventories" / "lab" / "lab.topology.yml"
    hostvars = _hostvars(topology)
    found = targets_filter(["head01", "node01"], hostvars, 9100, topology_file=str(topology))
    assert found == [
        {
            "targets": ["clusterforge-lab-head01:9100"],
            "labels": {"node": "head01", "role": "head", "node_type": "lab_node", "leaf": "ib_svc_leaf1"},
        },
        {
            "targets": ["clusterforge-lab-node01:9100"],
            "labels": {"node": "node01", "role": "compute", "node_type": "lab_node", "leaf": "ib_svc_leaf1"},
        },
    ]


def test_monitoring_address_wins_and_ipv6_is_bracketed():
    hostvars = {
        "a": {"ansible_host": "10.0.0.1", "clusterforge_monitoring_address": "mon-a", "group_names": []},
        "b": {"ansible_host": "fd00::2", "group_names": []},
        "c": {"group_names": []},
    }
    found = scrape.target_groups(["a", "b", "c", "a"], hostvars, 9100, extra_labels={"cluster": "x"})
    assert [group["targets"] for group in found] == [["mon-a:9100"], ["[fd00::2]:9100"], ["c:9100"]]
    assert found[0]["labels"] == {"cluster": "x", "node": "a"}


def test_without_a_topology_file_there_is_no_role_or_leaf_label():
    hostvars = {
        "n1": {"clusterforge_node_type": "t", "clusterforge_unit": 2, "group_names": ["compute", "su2", "leaf1"]}
    }
    assert targets_filter(["n1"], hostvars, 9100) == [
        {"targets": ["n1:9100"], "labels": {"node": "n1", "node_type": "t", "unit": "2"}}
    ]


@pytest.mark.parametrize(
    ("hosts", "port", "extra", "message"),
    [
        (["ghost"], 9100, None, "ghost is not in the inventory"),
        (["n1"], 0, None, "port must be an integer from 1 to 65535, got 0"),
        (["n1"], 9100, {"instance": "x"}, "extra label 'instance'"),
        (["n1"], 9100, {"bad-name": "x"}, "extra label 'bad-name'"),
    ],
)
def test_refusals_name_the_problem(hosts, port, extra, message):
    hostvars = {"n1": {"group_names": []}}
    with pytest.raises(AnsibleFilterError, match=message):
        targets_filter(hosts, hostvars, port, extra_labels=extra)
