"""What the renderers derive from a topology: checked against the SuperPOD example's known
counts and against small clusters built here whose every link can be worked out by hand."""

from __future__ import annotations

import copy
import csv
import io
import re
import sys
import types
from pathlib import Path

import hostlist
import pytest
import yaml

from clusterforge import cli
from clusterforge.cli import topology as topology_cli
from clusterforge.errors import UsageError
from clusterforge.topology import TopologyError, load
from clusterforge.topology.inventory import build
from clusterforge.topology.render import bom, cabling, files, k8s_labels, nccl, slurm, static_inventory, write_all
from tests.paths import PROJECT

SUPERPOD = PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml"
DGX_RAIL_ORDER = "mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"

# A small RoCE cluster without scalable units: 6 nodes with 2 compute ports each on 8-port
# switches (4 down, 4 up) make 3 leaves of 2 nodes and 2 spines; eno1 is on the in-band fabric.
MINI = {
    "cluster": {"name": "mini", "domain": "mini.example.com"},
    "sites": [{"name": "dc1"}],
    "node_types": {
        "gpu_node": {
            "gpu": {"model": "NVIDIA L40S", "count": 4, "power_w": 350, "price_usd": 9000},
            "hcas": [
                {"device": "mlx5_0", "netdev": "ens1f0np0", "pci": "0000:18:00.0", "rate_gbps": 200},
                {"device": "mlx5_1", "netdev": "ens1f1np1", "pci": "0000:18:00.1", "rate_gbps": 200},
                {"device": "mlx5_2", "netdev": "eno1", "pci": "0000:40:00.0", "rate_gbps": 25, "fabric": "inband"},
            ],
        },
        "server": {},
    },
    "roles": {
        "head": {"node_type": "server", "count": 1, "hostname": "head{index}", "fabrics": ["inband"]},
        "compute": {"node_type": "gpu_node", "count": 6, "hostname": "gpu{index:02d}", "fabrics": ["inband"]},
    },
    "fabrics": {
        "compute": {
            "purpose": "compute",
            "link_layer": "ethernet",
            "topology": "fat_tree",
            "switch": {"model": "SN5600", "radix": 8, "port_speed_gbps": 200},
        },
        "inband": {
            "purpose": "inband",
            "link_layer": "ethernet",
            "topology": "fat_tree",
            "switch": {"model": "SN2410", "radix": 48, "port_speed_gbps": 25},
        },
    },
    "addressing": {"inband": "10.0.0.0/24"},
}

# Kubernetes' label syntax, written out again here so the test does not trust the module's.
K8S_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
K8S_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@pytest.fixture(scope="module")
def plan():
    return load(SUPERPOD)


def write_topology(tmp_path: Path, data: dict, name: str = "mini") -> Path:
    path = tmp_path / f"{name}.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def mini(tmp_path: Path, change=None):
    data = copy.deepcopy(MINI)
    if change:
        change(data)
    return load(write_topology(tmp_path, data))


def one_port_nodes(data: dict, hosts: int) -> None:
    data["node_types"]["gpu_node"]["hcas"] = data["node_types"]["gpu_node"]["hcas"][:1]
    data["roles"]["compute"]["count"] = hosts


def three_tier(data: dict) -> None:
    """9 one-port nodes on 4-port switches: 5 leaves, more than a spine's 4 ports, so 3 pods."""
    one_port_nodes(data, 9)
    data["fabrics"]["compute"]["switch"]["radix"] = 4


def dragonfly(data: dict, speed: int = 200) -> None:
    """6 one-port nodes, 2 per router, 2 routers per group, 2 groups."""
    one_port_nodes(data, 6)
    data["fabrics"]["compute"]["topology"] = "dragonfly"
    data["fabrics"]["compute"]["switch"].update(radix=4, port_speed_gbps=speed)
    data["fabrics"]["compute"]["dragonfly"] = {
        "terminals_per_router": 2,
        "routers_per_group": 2,
        "global_links_per_router": 1,
        "groups": 2,
    }


def nccl_conf(text: str) -> dict[str, str]:
    """What NCCL's setEnvFile reads: every line holding '=' is NAME=value, comments included."""
    found = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep:
            found[name] = value
    return found


# --- Slurm


def test_slurm_superpod_has_one_switch_per_unit_under_a_top_switch(plan):
    text = slurm.topology_conf(plan)
    lines = text.splitlines()
    assert lines[0].startswith("# ") and "clusterforge" in lines[0] and SUPERPOD.name in lines[0]
    assert [line for line in lines if not line.startswith("#")] == [
        "SwitchName=su1 Nodes=dgx[001-032]",
        "SwitchName=su2 Nodes=dgx[033-064]",
        "SwitchName=su3 Nodes=dgx[065-096]",
        "SwitchName=su4 Nodes=dgx[097-127]",  # unit 4 gave slot 32 to UFM: 31 nodes
        "SwitchName=top Switches=su[1-4]",
    ]


def test_slurm_lists_every_compute_node_once_and_nothing_else(plan):
    groups = slurm.switch_groups(plan)
    listed = [name for nodes in groups.values() for name in nodes]
    assert sorted(listed) == sorted(h.name for h in plan.hosts if h.role == "compute")
    assert len(listed) == len(set(listed)) == 127
    text = slurm.topology_conf(plan)
    assert "head" not in text and "login" not in text
    expanded = [hostlist.expand_hostlist(line.split("Nodes=")[1]) for line in text.splitlines() if "Nodes=" in line]
    assert [len(nodes) for nodes in expanded] == [32, 32, 32, 31]


def test_slurm_without_units_has_one_switch_per_compute_leaf(tmp_path):
    lines = [line for line in slurm.topology_conf(mini(tmp_path)).splitlines() if not line.startswith("#")]
    assert lines == [
        "SwitchName=compute-svc-leaf1 Nodes=gpu[01-02]",
        "SwitchName=compute-svc-leaf2 Nodes=gpu[03-04]",
        "SwitchName=compute-svc-leaf3 Nodes=gpu[05-06]",
        "SwitchName=top Switches=compute-svc-leaf[1-3]",
    ]


def test_slurm_three_tier_puts_leaves_under_their_pods(tmp_path):
    lines = [line for line in slurm.topology_conf(mini(tmp_path, three_tier)).splitlines() if line[0] != "#"]
    assert lines == [
        "SwitchName=compute-svc-leaf1 Nodes=gpu[01-02]",
        "SwitchName=compute-svc-leaf2 Nodes=gpu[03-04]",
        "SwitchName=compute-svc-leaf3 Nodes=gpu[05-06]",
        "SwitchName=compute-svc-leaf4 Nodes=gpu[07-08]",
        "SwitchName=compute-svc-leaf5 Nodes=gpu09",
        "SwitchName=compute-pod1 Switches=compute-svc-leaf[1-2]",
        "SwitchName=compute-pod2 Switches=compute-svc-leaf[3-4]",
        "SwitchName=compute-pod3 Switches=compute-svc-leaf5",
        "SwitchName=top Switches=compute-pod[1-3]",
    ]


def test_slurm_dragonfly_puts_routers_under_their_groups(tmp_path):
    lines = [line for line in slurm.topology_conf(mini(tmp_path, dragonfly)).splitlines() if line[0] != "#"]
    assert lines == [
        "SwitchName=compute-g01-r01 Nodes=gpu[01-02]",
        "SwitchName=compute-g01-r02 Nodes=gpu[03-04]",
        "SwitchName=compute-g02-r01 Nodes=gpu[05-06]",
        "SwitchName=compute-g01 Switches=compute-g01-r[01-02]",
        "SwitchName=compute-g02 Switches=compute-g02-r01",
        "SwitchName=top Switches=compute-g[01-02]",
    ]


def test_slurm_without_a_compute_fabric_follows_the_fabric_carrying_gpu_traffic(tmp_path):
    def no_compute_fabric(data):
        del data["fabrics"]["compute"]
        data["node_types"]["gpu_node"]["hcas"] = data["node_types"]["gpu_node"]["hcas"][2:]  # eno1 only

    plan = mini(tmp_path, no_compute_fabric)
    assert plan.gpu_fabric == "inband"
    lines = [line for line in slurm.topology_conf(plan).splitlines() if line[0] != "#"]
    assert lines == ["SwitchName=inband-svc-leaf1 Nodes=gpu[01-06]", "SwitchName=top Switches=inband-svc-leaf1"]


def test_slurm_compute_nodes_off_every_fabric_go_to_one_switch(tmp_path):
    def uncabled_compute_nodes(data):
        del data["fabrics"]["compute"]
        data["node_types"]["gpu_node"]["hcas"] = []
        data["roles"]["compute"]["fabrics"] = []

    plan = mini(tmp_path, uncabled_compute_nodes)
    assert plan.gpu_fabric is None
    lines = [line for line in slurm.topology_conf(plan).splitlines() if line[0] != "#"]
    assert lines == ["SwitchName=other Nodes=gpu[01-06]", "SwitchName=top Switches=other"]


# --- NCCL


def test_nccl_superpod_settings(plan):
    rendered = nccl.files(plan)
    # mgmt servers have no compute HCA; the UFM appliance has, but no GPU to run NCCL.
    assert set(rendered) == {"nccl/dgx_h100.env", "nccl/hosts.yml"}
    assert nccl_conf(rendered["nccl/dgx_h100.env"]) == {
        "NCCL_IB_HCA": "=" + DGX_RAIL_ORDER,
        "NCCL_SOCKET_IFNAME": "^lo,docker",
        "NCCL_CROSS_NIC": "0",
    }
    hosts = yaml.safe_load(rendered["nccl/hosts.yml"])
    assert len(hosts) == 127 and set(hosts.values()) == {"nccl/dgx_h100.env"}
    assert "head01" not in hosts


def test_nccl_roce_fat_tree_settings(tmp_path):
    text = nccl.files(mini(tmp_path))["nccl/gpu_node.env"]
    assert nccl_conf(text) == {
        "NCCL_IB_HCA": "=mlx5_0,mlx5_1",
        "NCCL_SOCKET_IFNAME": "=eno1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "104",  # DSCP 26 (the default) << 2
    }
    assert all(line.startswith("#") or line.startswith("NCCL_") for line in text.splitlines())


def test_nccl_roce_settings_come_from_the_fabric_roce_block(tmp_path):
    data = copy.deepcopy(MINI)
    data["fabrics"]["compute"]["roce"] = {"priority": 5, "dscp": 24, "gid_index": 1}
    text = nccl.files(load(write_topology(tmp_path, data)))["nccl/gpu_node.env"]
    assert (nccl_conf(text)["NCCL_IB_TC"], nccl_conf(text)["NCCL_IB_GID_INDEX"]) == ("96", "1")


def test_roce_settings_are_refused_on_infiniband_and_out_of_range(tmp_path):
    data = copy.deepcopy(MINI)
    data["fabrics"]["compute"]["link_layer"] = "infiniband"
    data["fabrics"]["compute"]["roce"] = {"priority": 3}
    path = write_topology(tmp_path, data)
    with pytest.raises(TopologyError) as caught:
        load(path)
    assert f"{path}:" in str(caught.value) and "fabrics.compute: " in str(caught.value)
    assert "roce settings apply to link_layer ethernet only; this fabric is infiniband" in str(caught.value)
    for field, value, expected in (
        ("priority", 8, "less than or equal to 7"),
        ("dscp", 64, "less than or equal to 63"),
    ):
        data = copy.deepcopy(MINI)
        data["fabrics"]["compute"]["roce"] = {field: value}
        path = write_topology(tmp_path, data)
        with pytest.raises(TopologyError) as caught:
            load(path)
        line = next(row for row in str(caught.value).splitlines() if f"fabrics.compute.roce.{field}: " in row)
        assert line.startswith(f"{path}:") and expected in line


def test_nccl_comments_never_hold_an_equals_sign(tmp_path):
    path = write_topology(tmp_path, copy.deepcopy(MINI), name="a=b")
    text = nccl.files(load(path))["nccl/gpu_node.env"]
    assert set(nccl_conf(text)) == {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "NCCL_IB_TC"}


# --- Kubernetes labels


def test_labels_superpod(plan):
    labels = k8s_labels.labels(plan)
    assert list(labels) == [h.name for h in plan.hosts]
    assert labels["dgx001"] == {
        "clusterforge.io/cluster": "superpod",
        "clusterforge.io/site": "dc1",
        "clusterforge.io/role": "compute",
        "clusterforge.io/node-type": "dgx_h100",
        "clusterforge.io/unit": "su1",
        "clusterforge.io/fabric": "compute",
        "clusterforge.io/rails": "8",
    }
    assert labels["dgx127"]["clusterforge.io/unit"] == "su4"
    assert labels["head01"] == {
        "clusterforge.io/cluster": "superpod",
        "clusterforge.io/site": "dc1",
        "clusterforge.io/role": "head",
        "clusterforge.io/node-type": "mgmt_server",
    }


def test_every_label_follows_kubernetes_syntax(plan):
    document = yaml.safe_load(k8s_labels.labels_yaml(plan))
    assert len(document) == 132
    for host_labels in document.values():
        for key, value in host_labels.items():
            prefix, name = key.split("/")
            assert len(prefix) <= 253 and K8S_PREFIX.match(prefix), key
            assert K8S_NAME.match(name), key
            assert isinstance(value, str) and (value == "" or K8S_NAME.match(value)), value


def test_labels_leaf_on_a_plain_fat_tree(tmp_path):
    labels = k8s_labels.labels(mini(tmp_path))
    assert labels["gpu01"]["clusterforge.io/leaf"] == "compute-svc-leaf1"
    assert labels["gpu06"]["clusterforge.io/leaf"] == "compute-svc-leaf3"
    assert "clusterforge.io/rails" not in labels["gpu01"]
    assert "clusterforge.io/leaf" not in labels["head1"]  # not on the compute fabric


def test_labels_spine_pod_on_a_three_tier_fat_tree(tmp_path):
    plan = mini(tmp_path, three_tier)
    assert any(s.tier == "core" for s in plan.fabrics["compute"].switches)
    labels = k8s_labels.labels(plan)
    assert labels["gpu01"]["clusterforge.io/spine-pod"] == "pod1"
    assert labels["gpu09"]["clusterforge.io/spine-pod"] == "pod3"


def test_labels_dragonfly_group(tmp_path):
    labels = k8s_labels.labels(mini(tmp_path, dragonfly))
    assert labels["gpu01"]["clusterforge.io/dragonfly-group"] == "g01"
    assert labels["gpu06"]["clusterforge.io/dragonfly-group"] == "g02"


def test_a_label_prefix_kubernetes_refuses(tmp_path):
    # The schema refuses it; the renderer's own check stays as a second line.
    with pytest.raises(TopologyError, match=r"label_prefix: String should match pattern .* \(got 'example..io'\)"):
        mini(tmp_path, lambda data: data.update(label_prefix="example..io"))
    with pytest.raises(k8s_labels.LabelError, match="must be a DNS subdomain"):
        k8s_labels.check_label("example..io/unit", "su1")


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("clusterforge.io/leaf", "compute-su1-leaf1", True),
        ("clusterforge.io/leaf", "", True),
        ("rails", "8", True),
        ("clusterforge.io/" + "n" * 63, "x", True),
        ("clusterforge.io/" + "n" * 64, "x", False),
        ("clusterforge.io/leaf", "v" * 64, False),
        ("clusterforge.io/leaf", "-leaf", False),
        ("clusterforge.io/leaf", "a/b", False),
        ("Clusterforge.io/leaf", "x", False),
        ("clusterforge.io/-leaf", "x", False),
        ("x" * 254 + "/leaf", "x", False),
    ],
)
def test_check_label(key, value, valid):
    if valid:
        k8s_labels.check_label(key, value)
    else:
        with pytest.raises(k8s_labels.LabelError):
            k8s_labels.check_label(key, value)


# --- cabling


def test_cabling_csv_has_one_row_per_link(plan):
    rows = list(csv.reader(io.StringIO(cabling.cabling_csv(plan))))
    assert rows[0] == list(cabling.CSV_HEADER)
    body = rows[1:]
    # 127 DGX x 8 + 4 UFM ports (NVIDIA's 1,020 compute-and-UFM cables), 132 hosts in-band and out-of-band.
    assert len(body) == 1020 + 1024 + (132 + 80) + (132 + 40)
    per_fabric_tier = {}
    for row in body:
        per_fabric_tier[row[0], row[1]] = per_fabric_tier.get((row[0], row[1]), 0) + 1
    assert per_fabric_tier[("compute", "node-leaf")] == 1020
    assert [row[2:6] for row in body if row[:3] == ["compute", "node-leaf", "ufm01"]] == [
        ["ufm01", f"mlx5_{r - 1}", f"compute-su4-r{r}-leaf1", "32"] for r in range(1, 5)
    ]
    assert per_fabric_tier[("compute", "leaf-spine")] == 1024
    assert all(row[6] == "400" for row in body if row[0] == "compute")


def test_cabling_uses_each_port_once(plan):
    body = list(csv.reader(io.StringIO(cabling.cabling_csv(plan))))[1:]
    ends = [(r[0], r[2], r[3]) for r in body] + [(r[0], r[4], r[5]) for r in body]
    assert len(ends) == len(set(ends))
    dgx001 = [r for r in body if r[0] == "compute" and r[2] == "dgx001"]
    assert [r[3] for r in dgx001] == DGX_RAIL_ORDER.split(",")
    assert [r[4] for r in dgx001] == [f"compute-su1-r{rail}-leaf1" for rail in range(1, 9)]


def test_node_name_map_lists_every_switch_as_a_commented_placeholder(plan):
    rendered = cabling.files(plan)
    assert set(rendered) == {"cabling/cabling.csv", "cabling/compute.node-name-map"}  # Ethernet has no map
    lines = rendered["cabling/compute.node-name-map"].splitlines()
    assert all(line.startswith("#") for line in lines)
    entries = [m.group(1) for line in lines if (m := re.fullmatch(r'# 0x0{16} "([^"]+)"', line))]
    assert entries == [s.name for tier in ("leaf", "spine") for s in plan.fabrics["compute"].switches if s.tier == tier]
    assert len(entries) == 48


# --- bill of materials


def test_bom_totals_from_the_counts(plan):
    d = bom.DEFAULTS
    # (quantity, unit power W, unit price USD) from the known counts, independently of bill().
    items = [
        (127, 4600, 160_000),  # DGX H100 without GPUs
        (1, 1100, 60_000),  # UFM appliance
        (4, 800, 15_000),  # head and login
        (1016, 700, 30_000),  # H100
        (48, 1720, 32_000),  # QM9700
        (7, 600, 20_000),  # SN4600C
        (6, 100, 5_000),  # SN2201
        (1020, d["aoc_400g"].power_w, d["aoc_400g"].price_usd),  # rail leaves are outside the rack; DGX and UFM
        (2 * 1024, d["transceiver_400g"].power_w, d["transceiver_400g"].price_usd),
        (1024 + 80, d["fibre"].power_w, d["fibre"].price_usd),
        (132, d["dac_100g"].power_w, d["dac_100g"].price_usd),  # in-band top-of-rack
        (2 * 80, d["transceiver_100g"].power_w, d["transceiver_100g"].price_usd),
        (132 + 40, d["cat6_1g"].power_w, d["cat6_1g"].price_usd),  # 1G out-of-band
    ]
    lines = bom.bill(plan)
    assert bom.totals(lines) == {
        "power_kw": round(sum(n * w for n, w, _ in items) / 1000, 3),
        "price_usd": round(sum(n * p for n, _, p in items), 2),
    }
    assert sum(line.quantity for line in lines) == sum(n for n, _, _ in items)


def test_bom_csv_rows_and_total(plan):
    rows = list(csv.DictReader(io.StringIO(bom.bom_csv(plan))))
    total = rows[-1]
    assert total["category"] == "total"
    assert float(total["price_usd"]) == bom.totals(bom.bill(plan))["price_usd"]
    switches = {(r["fabric"], r["tier"]): int(r["quantity"]) for r in rows if r["category"] == "switch"}
    assert switches == {
        ("compute", "leaf"): 32,
        ("compute", "spine"): 16,
        ("inband", "leaf"): 5,
        ("inband", "spine"): 2,
        ("oob", "leaf"): 5,
        ("oob", "spine"): 1,
    }
    assert len(rows) == len(bom.bill(plan)) + 1


def test_bom_price_overrides(plan):
    base = bom.totals(bom.bill(plan))["price_usd"]
    cheaper = bom.totals(bom.bill(plan, {"transceiver_400g": {"price_usd": 700}}))["price_usd"]
    assert base - cheaper == pytest.approx(2048 * 200)
    with pytest.raises(bom.BomError, match="unknown item 'transceiver_401g'"):
        bom.bill(plan, {"transceiver_401g": {"price_usd": 1}})


def test_fabric_cable_price_sets_the_cable_not_the_transceivers(tmp_path):
    plan = mini(tmp_path, lambda data: data["fabrics"]["compute"].update(cable_price_usd={"leaf-spine": 55}))
    lines = {(line.category, line.fabric, line.tier): line for line in bom.bill(plan)}
    assert lines["cable", "compute", "leaf-spine"].unit_price_usd == 55
    assert lines["cable", "compute", "leaf-spine"].quantity == 12
    assert lines["transceiver", "compute", "leaf-spine"].unit_price_usd == bom.DEFAULTS["transceiver_200g"].price_usd
    assert lines["cable", "compute", "node-leaf"].item == "dac_200g"  # 200G to a top-of-rack leaf
    assert lines["gpu", "", ""].quantity == 24
    with pytest.raises(TopologyError, match="cable_price_usd"):
        mini(tmp_path, lambda data: data["fabrics"]["compute"].update(cable_price_usd={"leaf-spin": 55}))


def test_dragonfly_media(tmp_path):
    plan = mini(tmp_path, lambda data: dragonfly(data, speed=400))
    lines = {(line.category, line.tier): line for line in bom.bill(plan) if line.fabric}
    assert (lines["cable", "terminal"].item, lines["cable", "terminal"].quantity) == ("aoc_400g", 6)
    assert (lines["cable", "local"].item, lines["cable", "local"].quantity) == ("dac_400g", 2)
    assert (lines["cable", "global"].item, lines["cable", "global"].quantity) == ("fibre", 2)
    assert lines["transceiver", "global"].quantity == 4


# --- static inventory


def test_static_inventory_keeps_every_host_variable_once(plan):
    document = yaml.safe_load(static_inventory.inventory_yaml(plan))
    merged: dict[str, dict] = {}
    listed_with_vars: dict[str, int] = {}

    def walk(group):
        for host, host_vars in (group.get("hosts") or {}).items():
            merged.setdefault(host, {}).update(host_vars or {})
            listed_with_vars[host] = listed_with_vars.get(host, 0) + bool(host_vars)
        for child in (group.get("children") or {}).values():
            if child is not None:  # None: a group written out under another parent
                walk(child)

    walk(document["all"])
    expected = build(plan).host_vars
    assert len(merged) == 132
    assert all(merged[host] == expected[host] for host in merged)
    assert all(count == 1 for host, count in listed_with_vars.items() if expected[host])
    assert "&id" not in static_inventory.inventory_yaml(plan)


# --- write_all and the CLI


def test_write_all_writes_every_file_and_keeps_others(plan, tmp_path):
    keep = tmp_path / "slurm" / "slurm.conf"
    keep.parent.mkdir()
    keep.write_text("ClusterName=superpod\n")
    written = write_all(plan, tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == sorted(files(plan))
    assert {
        "slurm/topology.conf",
        "nccl/dgx_h100.env",
        "nccl/hosts.yml",
        "kubernetes/node-labels.yml",
        "cabling/cabling.csv",
        "cabling/compute.node-name-map",
        "bom.csv",
        "inventory/hosts.yml",
        "summary.json",
    } <= set(files(plan))
    assert keep.read_text() == "ClusterName=superpod\n"
    assert (tmp_path / "slurm" / "topology.conf").read_text() == slurm.topology_conf(plan)
    assert not list(tmp_path.rglob("*.partial"))


def test_write_all_writes_nothing_when_a_renderer_fails(tmp_path, monkeypatch):
    plan = mini(tmp_path, lambda data: data)

    def refuse(_plan):
        raise k8s_labels.LabelError("refused")

    monkeypatch.setattr(k8s_labels, "labels", refuse)
    out = tmp_path / "out"
    with pytest.raises(k8s_labels.LabelError):
        write_all(plan, out)
    assert not out.exists()


def parse(*argv: str):
    parser = cli._Parser(prog="clusterforge")
    topology_cli.add_parser(parser.add_subparsers(dest="command", required=True, parser_class=cli._Parser))
    return parser.parse_args(list(argv))


def test_cli_render(tmp_path, capsys):
    assert topology_cli.run(parse("topology", "render", str(SUPERPOD), "-o", str(tmp_path / "out"))) == 0
    assert (tmp_path / "out" / "slurm" / "topology.conf").exists()
    assert "files written" in capsys.readouterr().out


def test_cli_render_label_error_is_a_usage_error(tmp_path):
    data = copy.deepcopy(MINI)
    data["label_prefix"] = "example..io"
    path = write_topology(tmp_path, data)
    with pytest.raises(UsageError, match=re.escape("example..io")):
        topology_cli.run(parse("topology", "render", str(path), "-o", str(tmp_path / "out")))


def test_cli_draw_imports_the_drawing_lazily(tmp_path, monkeypatch):
    from clusterforge.topology.draw import pick_fabric

    calls = []
    fake = types.ModuleType("clusterforge.topology.draw")
    fake.render_svg = lambda plan, **kwargs: calls.append((plan.topology.cluster.name, kwargs)) or "<svg/>"
    fake.pick_fabric = pick_fabric
    monkeypatch.setitem(sys.modules, "clusterforge.topology.draw", fake)
    out = tmp_path / "fabric.svg"
    assert topology_cli.run(parse("topology", "draw", str(SUPERPOD), "-o", str(out))) == 0
    assert out.read_text() == "<svg/>" and calls == [("superpod", {"fabric": "compute"})]
    topology_cli.run(parse("topology", "draw", str(SUPERPOD), "-o", str(out), "--fabric", "inband"))
    assert calls[-1] == ("superpod", {"fabric": "inband"})
    with pytest.raises(UsageError, match="no fabric 'storage'"):
        topology_cli.run(parse("topology", "draw", str(SUPERPOD), "--fabric", "storage"))


def test_cli_draw_says_which_fabric_it_drew_and_its_switches_of_all(tmp_path, capsys):
    """validate reports every fabric's switches (61): the drawing's 48 are the compute fabric's."""
    out = tmp_path / "fabric.svg"
    assert topology_cli.run(parse("topology", "draw", str(SUPERPOD), "-o", str(out))) == 0
    assert capsys.readouterr().out.splitlines() == [
        "compute fabric: 48 of the topology's 61 switches (other fabrics: inband, oob; draw one with --fabric)",
        f"drawing written to {out}",
    ]
    assert topology_cli.run(parse("topology", "validate", str(SUPERPOD))) == 0
    assert capsys.readouterr().out.strip().endswith(", 61 switches")
