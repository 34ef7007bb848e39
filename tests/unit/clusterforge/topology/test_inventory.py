"""The inventory a topology gives (build): which groups exist, what they hold, and the
plan loaded without links that the inventory uses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterforge.topology import TopologyError, groups, load
from clusterforge.topology.inventory import InventoryData, build
from tests.paths import PROJECT

from .test_fabric import cluster

EXAMPLES = PROJECT / "inventories" / "examples"
SUPERPOD = EXAMPLES / "h100-superpod.topology.yml"
LAB = EXAMPLES.parent / "lab" / "lab.topology.yml"


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
    # Role, site, node type, unit, the unit's rail leaves and the compute fabric, the node
    # type's capabilities and the compute role's orchestrator groups: nothing for the management
    # Ethernet fabrics by default, and no umbrella groups (all sites, all units).
    assert ancestors(superpod, "dgx033") == {
        "compute",
        "site_dc1",
        "type_dgx_h100",
        "su2",
        "compute_su2_leaves",
        "fabric_compute",
        "gpu",
        "nvswitch",
        "infiniband",
        "slurm_compute",
        "k8s_workers",
    }
    assert not {"sites", "node_types", "scalable_units", "fabric_inband", "fabric_oob"} & set(
        [*superpod.children, *superpod.group_hosts]
    )


def test_superpod_unit_and_leaf_groups_hold_the_units_nodes(superpod):
    assert hosts_of(superpod, "su4") == hosts_of(superpod, "compute_su4_leaves")
    # 31 DGX and, in the slot reserved for it, the UFM fabric manager.
    assert hosts_of(superpod, "su4") == {f"dgx{index:03d}" for index in range(97, 128)} | {"ufm01"}
    assert hosts_of(superpod, "fabric_compute") == hosts_of(superpod, "compute") | {"ufm01"}
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
        "infiniband",
        "slurm_compute",
        "k8s_workers",
    }


def test_three_tier_fat_tree_leaves_sit_under_their_pods(tmp_path):
    # 100 one-port nodes on 8-port leaves (4 down): 25 leaves, more than a spine's 8 ports, so
    # pods of 4 leaves; the nodes are outside scalable units, so the leaves are service leaves.
    data = build(load(cluster(tmp_path, fabric={"topology": "fat_tree"}, count=100, radix=8), links=False))
    assert data.children["fabric_compute"] == [f"compute_pod_{pod}" for pod in range(1, 8)]
    assert data.children["compute_pod_1"] == [f"compute_svc_leaf{leaf}" for leaf in range(1, 5)]
    assert data.children["compute_pod_7"] == ["compute_svc_leaf25"]
    assert data.group_hosts["compute_svc_leaf2"] == [f"n{index:05d}" for index in range(5, 9)]


# --- capability and orchestrator groups


CAPABILITIES = {
    "h100-superpod": {
        "gpu": ["type_dgx_h100"],
        "nvswitch": ["type_dgx_h100"],
        "infiniband": ["type_dgx_h100", "type_ufm_appliance"],  # the UFM's HCAs are on the compute fabric
    },
    "pcie-roce-small": {"gpu": ["type_l40s_server"], "roce": ["type_l40s_server"]},
    # Slingshot NICs (cxi) on an Ethernet compute fabric: the schema marks them RDMA over Ethernet.
    "dragonfly-1k": {"gpu": ["type_a100_node"], "roce": ["type_a100_node"]},
    # The lab's one InfiniBand port is the model's (no device in the containers): the fabric stage runs there.
    "lab": {"infiniband": ["type_lab_node"]},
}


@pytest.mark.parametrize("name", sorted(CAPABILITIES))
def test_capability_groups_hold_the_node_types_that_have_them(name):
    source = LAB if name == "lab" else EXAMPLES / f"{name}.topology.yml"
    data = build(load(source, links=False))
    assert {group: data.children[group] for group in groups.CAPABILITY_GROUPS} == {
        group: CAPABILITIES[name].get(group, []) for group in groups.CAPABILITY_GROUPS
    }


def test_capability_groups_reach_the_hosts_of_their_node_types(superpod):
    dgx = {f"dgx{index:03d}" for index in range(1, 128)}
    assert hosts_of(superpod, "gpu") == dgx
    assert hosts_of(superpod, "infiniband") == dgx | {"ufm01"}
    assert hosts_of(superpod, "roce") == set()


def test_orchestrator_groups_hold_role_groups(superpod):
    assert {group: superpod.children[group] for group in groups.ORCHESTRATOR_GROUPS} == {
        "slurm_controller": ["head"],
        "slurm_compute": ["compute"],
        "slurm_login": ["login"],
        "k8s_control_plane": ["head"],
        "k8s_workers": ["compute"],
    }
    assert hosts_of(superpod, "slurm_controller") == hosts_of(superpod, "head") == {"head01", "head02"}


def test_the_topology_replaces_an_orchestrator_groups_roles(tmp_path):
    source = with_ansible_settings(tmp_path, LAB, orchestrator_groups={"slurm_login": ["head"]})
    data = build(load(source, links=False))
    # The lab has no login role: by default slurm_login exists and is empty.
    assert build(load(LAB, links=False)).children["slurm_login"] == []
    assert data.children["slurm_login"] == ["head"]
    assert data.children["slurm_controller"] == ["head"]


def test_gpu_software_holds_the_roles_the_topology_names(tmp_path, superpod):
    # Empty by default: a host without GPUs is outside the gpu stage unless the topology says so.
    assert superpod.children[groups.GPU_SOFTWARE] == []
    assert hosts_of(superpod, groups.GPU_SOFTWARE) == set()
    # The lab's compute nodes (no GPUs) get the gpu stage's small set through it; the head does not.
    lab = build(load(LAB, links=False))
    assert lab.children[groups.GPU_SOFTWARE] == ["compute"]
    assert lab.children[groups.GPU] == []
    # A role the topology does not have makes no empty child group.
    source = with_ansible_settings(tmp_path, LAB, gpu_software=["login", "head"])
    assert build(load(source, links=False)).children[groups.GPU_SOFTWARE] == ["head"]


def test_an_unknown_gpu_software_role_is_refused(tmp_path):
    source = with_ansible_settings(tmp_path, LAB, gpu_software=["workers"])
    with pytest.raises(TopologyError) as error:
        load(source)
    assert "ansible.gpu_software" in str(error.value)


def test_an_unknown_orchestrator_group_is_refused(tmp_path):
    source = with_ansible_settings(tmp_path, LAB, orchestrator_groups={"slurm_logins": ["head"]})
    with pytest.raises(TopologyError) as error:
        load(source)
    message = str(error.value)
    assert "ansible.orchestrator_groups" in message
    assert "unknown group(s) ['slurm_logins']; expected some of ['k8s_control_plane'" in message


def test_the_static_yaml_writes_each_group_once(superpod):
    document = superpod.to_yaml_dict()
    written: list[str] = []

    def walk(entries):
        for name, entry in entries.items():
            if entry is not None:  # None: written out under another parent
                written.append(name)
                walk(entry.get("children") or {})

    walk(document["all"]["children"])
    assert sorted(written) == sorted(set(written))
    assert set(written) == {*superpod.children, *superpod.group_hosts, *superpod.group_vars}


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
