"""The inventory a topology gives (build): which groups exist, what they hold, and the
plan loaded without links that the inventory uses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterforge.topology import TopologyError, load
from clusterforge.topology.inventory import InventoryData, build

from .test_topology_fabric import cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "inventories" / "examples"
SUPERPOD = EXAMPLES / "h100-superpod.topology.yml"


def with_ansible_settings(tmp_path: Path, source: Path, **settings) -> Path:
    data = yaml.safe_load(source.read_text())
    data.setdefault("ansible", {}).update(settings)
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def hosts_of(data: InventoryData, group: str) -> set[str]:
    """Every host in the group or below it, as Ansible resolves `hosts: group`."""
    found = set(data.group_hosts.get(group, ()))
    for child in data.children.get(group, ()):
        found |= hosts_of(data, child)
    return found


def ancestors(data: InventoryData, host: str) -> set[str]:
    """The groups a host is in, directly or through a child group (a role has two parents)."""
    found = {group for group, hosts in data.group_hosts.items() if host in hosts}
    while True:
        above = {parent for parent, kids in data.children.items() if found & set(kids)} - found
        if not above:
            return found
        found |= above


@pytest.fixture(scope="module")
def superpod() -> InventoryData:
    return build(load(SUPERPOD, links=False))


def test_superpod_groups_a_compute_node_belongs_to(superpod):
    # Role, site, node type, unit, the unit's rail leaves and the compute fabric: nothing for
    # the management Ethernet fabrics by default, and no umbrella groups.
    assert ancestors(superpod, "dgx033") == {
        "compute",
        "site_dc1",
        "type_dgx_h100",
        "su2",
        "compute_su2_leaves",
        "fabric_compute",
    }
    assert not {"sites", "node_types", "scalable_units", "fabric_inband", "fabric_oob"} & set(
        [*superpod.children, *superpod.group_hosts]
    )


def test_superpod_unit_and_leaf_groups_hold_the_units_nodes(superpod):
    assert hosts_of(superpod, "su4") == hosts_of(superpod, "compute_su4_leaves")
    assert len(hosts_of(superpod, "su4")) == 31  # one slot reserved for the fabric manager
    assert hosts_of(superpod, "fabric_compute") == hosts_of(superpod, "compute")
    assert superpod.group_vars["su4"] == {"clusterforge_unit": 4}


def test_leaf_groups_for_the_fabrics_listed(tmp_path):
    plan = load(with_ansible_settings(tmp_path, SUPERPOD, leaf_groups=["compute", "inband"]), links=False)
    data = build(plan)
    # Each host sits in the group of the in-band leaf it is cabled to.
    for host, leaves in plan.fabrics["inband"].attachments.items():
        (leaf,) = leaves
        assert host in data.group_hosts[leaf.replace("-", "_")]
    assert hosts_of(data, "fabric_inband") == {host.name for host in plan.hosts}
    assert "fabric_oob" not in data.children


def test_no_leaf_groups_at_all(tmp_path):
    data = build(load(with_ansible_settings(tmp_path, SUPERPOD, leaf_groups=[]), links=False))
    assert not [group for group in [*data.children, *data.group_hosts] if "fabric" in group or "leaf" in group]
    assert len(data.group_hosts["compute"]) == 127


def test_an_unknown_leaf_group_fabric_is_refused(tmp_path):
    source = with_ansible_settings(tmp_path, SUPERPOD, leaf_groups=["compute", "stroage"])
    with pytest.raises(TopologyError) as error:
        load(source)
    message = str(error.value)
    assert "ansible.leaf_groups.1" in message
    assert "unknown fabric 'stroage'" in message


def test_three_tier_leaves_sit_under_their_pods(tmp_path):
    # 16 units x 8 rails = 128 leaves on 64-port switches: 4 pods of 4 units each.
    spec = {"topology": "rail_optimized_fat_tree", "rails": 8}
    data = build(load(cluster(tmp_path, fabric=spec, hcas=8, units=(16, 32)), links=False))
    assert data.children["fabric_compute"] == [f"compute_pod_{pod}" for pod in range(1, 5)]
    assert data.children["compute_pod_1"] == [f"compute_su{unit}_leaves" for unit in range(1, 5)]
    assert ancestors(data, "n00033") == {
        "compute",
        "site_dc1",
        "type_node",
        "su2",
        "compute_su2_leaves",
        "compute_pod_1",
        "fabric_compute",
    }


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.topology.yml")), ids=lambda p: p.name)
def test_a_plan_without_links_has_the_same_switches_and_attachments(example):
    full, light = load(example), load(example, links=False)
    for name, fabric in full.fabrics.items():
        assert light.fabrics[name].switches == fabric.switches
        assert light.fabrics[name].attachments == fabric.attachments
        assert light.fabrics[name].leaf_pods == fabric.leaf_pods
        assert fabric.links and fabric.complete and not light.fabrics[name].complete
        if fabric.spec.topology != "dragonfly":
            assert not light.fabrics[name].links
    assert build(light).host_vars == build(full).host_vars
