"""cabling_check: real ibnetdiscover -p captures against cabling plans in the render's CSV form."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from ansible.module_utils.cabling_plan import CablingPlanError, plan_links, speed_name

from tests.paths import PROJECT
from tests.unit.plugins.module_utils.samples import load

EDR = load("ibnetdiscover_iblinkinfo", "ibnetdiscover-p-edr-osc-subset-infiniband-exporter.txt")
SUPERPOD = PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml"
HEADER = "fabric,tier,source_device,source_port,destination_device,destination_port,speed_gbps\n"
# The links of the EDR capture as the plan writes them: host "o0001", HCA "HCA-1" (its node
# description is "o0001 HCA-1"), switch ports by number.
PLAN = HEADER + (
    "ib,node-leaf,o0001,HCA-1,ib-i1l1s01,10,100\n"
    "ib,node-leaf,o0002,HCA-1,ib-i1l1s01,11,100\n"
    "ib,node-leaf,p0001,HCA-1,ib-i4l1s01,35,100\n"
    "ib,leaf-spine,ib-i1l1s01,1,ib-i1l2s01,1,100\n"
    "eth,node-leaf,o0001,eth0,eth-leaf1,1,25\n"
)


@pytest.fixture
def hca(tmp_path) -> Path:
    root = tmp_path / "infiniband"
    (root / "mlx5_0").mkdir(parents=True)
    return root


def test_plan_links_name_host_ports_as_ibnetdiscover_does():
    links, speeds = plan_links(PLAN, "ib")
    assert links[0] == {"a": "o0001 HCA-1", "a_port": 1, "b": "ib-i1l1s01", "b_port": 10}
    assert links[3] == {"a": "ib-i1l1s01", "a_port": 1, "b": "ib-i1l2s01", "b_port": 1}
    assert (len(links), speeds, speed_name(speeds)) == (4, {100}, "EDR")
    with pytest.raises(CablingPlanError, match="fabrics eth, ib"):
        plan_links(PLAN)
    with pytest.raises(CablingPlanError, match="no fabric 'nope'"):
        plan_links(PLAN, "nope")
    with pytest.raises(CablingPlanError, match="no column"):
        plan_links("a,b\n1,2\n")
    assert plan_links("") == ([], set())


def test_plan_from_the_rendered_superpod_cabling():
    from clusterforge.topology import load as load_topology
    from clusterforge.topology.render.cabling import cabling_csv

    text = cabling_csv(load_topology(SUPERPOD))
    links, speeds = plan_links(text, "compute")
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["fabric"] == "compute"]
    assert len(links) == len(rows)
    assert links[0] == {"a": "dgx001 mlx5_0", "a_port": 1, "b": "compute-su1-r1-leaf1", "b_port": 1}
    assert speed_name(speeds) == "NDR"


def test_no_hca_is_skipped_no_hardware(node, run, tmp_path):
    node.programs = {"ibnetdiscover"}
    done = run("cabling_check", {"plan": PLAN, "fabric": "ib", "sysfs_root": str(tmp_path / "none")})
    assert (done.failed, done.result["status"]) == (False, "skipped")
    assert done.checks["cabling.links"]["message"] == "skipped: no hardware"
    assert node.calls == []


def test_missing_ibnetdiscover_is_skipped(node, run, hca):
    done = run("cabling_check", {"plan": PLAN, "fabric": "ib", "sysfs_root": str(hca)})
    assert done.checks["cabling.links"]["message"] == "skipped: ibnetdiscover not found"


def test_fabric_matches_the_plan(node, run, hca):
    node.programs = {"ibnetdiscover"}
    node.outputs = {"ibnetdiscover -p": (0, EDR, "")}
    done = run("cabling_check", {"plan": PLAN, "fabric": "ib", "sysfs_root": str(hca), "node_name_map": "/etc/m"})
    assert not done.failed
    # The capture's unconnected ports (4x ???, 4x SDR) carry no link, so they do not count as slow.
    assert {c: done.status(c) for c in done.checks} == {"cabling.speed": "pass", "cabling.links": "pass"}
    assert done.checks["cabling.speed"]["expected"] == "4x EDR"  # 100 Gb/s in the plan
    assert (done.result["planned_links"], done.result["fabric_ports"]) == (4, 9)
    assert node.calls == [["/usr/bin/ibnetdiscover", "-p", "--node-name-map", "/etc/m"]]


def test_miscabled_down_and_slow_links_fail(node, run, hca):
    node.programs = {"ibnetdiscover"}
    node.outputs = {"ibnetdiscover -p": (0, EDR, "")}
    wrong = HEADER + (
        "ib,node-leaf,o0001,HCA-1,ib-i1l1s01,11,400\n"  # o0001 is cabled into port 10, not 11
        "ib,node-leaf,p0002,HCA-1,ib-i4l1s01,37,400\n"  # port 37 has no peer
    )
    done = run("cabling_check", {"plan": wrong, "sysfs_root": str(hca)})
    assert done.failed
    assert done.status("cabling.speed") == "fail"  # NDR planned, EDR trained
    links = done.checks["cabling.links"]
    assert links["status"] == "fail"
    assert links["measured"]["o0001 HCA-1/1 - ib-i1l1s01/11"] == "miscabled: goes to ib-i1l1s01/10"
    assert links["measured"]["p0002 HCA-1/1 - ib-i4l1s01/37"].startswith("port down")


def test_plan_with_several_fabrics_needs_one_named(node, run, hca):
    node.programs = {"ibnetdiscover"}
    done = run("cabling_check", {"plan": PLAN, "sysfs_root": str(hca)})
    assert done.failed
    assert "fabrics eth, ib" in done.result["msg"]


def test_plan_path_on_the_node(node, run, hca, tmp_path):
    (tmp_path / "cabling.csv").write_text(PLAN)
    node.programs = {"ibnetdiscover"}
    node.outputs = {"ibnetdiscover -p": (0, EDR, "")}
    done = run("cabling_check", {"plan_path": str(tmp_path / "cabling.csv"), "fabric": "ib", "sysfs_root": str(hca)})
    assert done.result["status"] == "pass"


def test_ibnetdiscover_error_fails(node, run, hca):
    node.programs = {"ibnetdiscover"}
    node.outputs = {"ibnetdiscover -p": (1, "", "ibwarn: [12345] mad_rpc_open_port: can't open UMAD port ((null):0)\n")}
    done = run("cabling_check", {"plan": PLAN, "fabric": "ib", "sysfs_root": str(hca)})
    assert done.failed
    assert done.result["rc"] == 1
    assert "can't open UMAD port" in done.checks["cabling.discover"]["message"]


def test_replay(node, run, tmp_path):
    (tmp_path / "ibnetdiscover-p.txt").write_text(EDR)
    done = run("cabling_check", {"plan": PLAN, "fabric": "ib", "replay_dir": str(tmp_path)}, check_mode=True)
    assert (done.result["source"], done.result["status"], done.result["changed"]) == ("replay", "pass", False)
    (tmp_path / "ibnetdiscover-p.txt").unlink()
    done = run("cabling_check", {"plan": PLAN, "fabric": "ib", "replay_dir": str(tmp_path)})
    assert done.checks["cabling.links"]["message"] == "skipped: no hardware"
    assert node.calls == []
