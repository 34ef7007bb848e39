"""playbooks/validate.yml end to end on a tiny lab, with recorded real outputs replayed on one node.

The lab is described by a topology whose nodes are DGX-like (8 H100, NVLink 4 with NVSwitch,
four NDR rails), so the inventory expects GPUs and HCAs. node01 gets the real outputs of an H100
node (nvidia-smi -q with driver 535.161.08, ibstat, all_reduce_perf) in a replay directory;
head01 gets none. One playbook run, then `clusterforge report`.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from clusterforge.cli import check as check_cli
from tests.integration.conftest import clusterforge, put_files
from tests.paths import PROJECT
from tests.unit.plugins.module_utils.samples import fixture

pytestmark = pytest.mark.lab

LAB_NAME = "cfvalidate"  # its own name: never touches a lab the user (or another test) has up
REPLAY_DIR = "/var/lib/clusterforge/replay"
RECORDINGS = {
    "nvidia-smi-q.txt": ("nvidia-smi_query", "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt"),
    "ibstat.txt": ("ibstat", "h100-ndr400-ib-active-eth-down-disabled-gpud.txt"),
    "all_reduce_perf.txt": ("nccl_all_reduce_perf", "h100-8gpu-single-node-bitdeer.txt"),
}
HCAS = [("mlx5_0", "0000:18:00.0"), ("mlx5_3", "0000:40:00.0"), ("mlx5_4", "0000:4f:00.0"), ("mlx5_5", "0000:5e:00.0")]
TOPOLOGY = {
    "plugin": "topology",
    "cluster": {"name": "gpulab", "domain": "gpulab.clusterforge.test"},
    "sites": [{"name": "local"}],
    "node_types": {
        "hgx_h100": {
            "description": "lab container posing as a DGX H100 (recorded outputs are replayed)",
            "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8, "nvlink_generation": 4, "nvswitch": True},
            "hcas": [
                {"device": d, "netdev": f"ib{i}", "pci": pci, "rate_gbps": 400} for i, (d, pci) in enumerate(HCAS)
            ],
        }
    },
    "roles": {
        "head": {"node_type": "hgx_h100", "count": 1, "hostname": "head{index:02d}", "fabrics": ["inband"]},
        "compute": {"node_type": "hgx_h100", "count": 1, "hostname": "node{index:02d}", "fabrics": ["inband"]},
    },
    "fabrics": {
        "compute": {
            "purpose": "compute",
            "link_layer": "infiniband",
            "topology": "fat_tree",
            "switch": {"model": "QM9700", "radix": 8, "port_speed_gbps": 400},
        },
        "inband": {
            "purpose": "inband",
            "link_layer": "ethernet",
            "topology": "fat_tree",
            "switch": {"model": "docker-bridge", "radix": 64, "port_speed_gbps": 10},
        },
    },
    "addressing": {"inband": "172.31.252.0/24"},
}


@pytest.fixture(scope="module")
def gpu_lab(docker_client, tmp_path_factory):
    state = tmp_path_factory.mktemp("validate-state")
    source = state / "gpulab.topology.yml"
    source.write_text(yaml.safe_dump(TOPOLOGY, sort_keys=False))
    env = {"CLUSTERFORGE_STATE_DIR": str(state)}
    clusterforge("lab", "up", "--size", "tiny", "--name", LAB_NAME, "--topology", str(source), env=env)
    yield {"env": env, "state": state, "inventory": state / "labs" / LAB_NAME / "lab.topology.yml"}
    clusterforge("lab", "down", "--name", LAB_NAME, env=env)


def put_recordings(container) -> None:
    files = {name: fixture(kind, fixture_name).read_bytes() for name, (kind, fixture_name) in RECORDINGS.items()}
    put_files(container, REPLAY_DIR, files)


def test_validate_judges_replayed_outputs_and_reports(gpu_lab, docker_client, tmp_path):
    put_recordings(docker_client.containers.get(f"clusterforge-{LAB_NAME}-node01"))
    reports = tmp_path / "reports"
    done = clusterforge(
        "run",
        str(PROJECT / "playbooks" / "validate.yml"),
        "-i",
        str(gpu_lab["inventory"]),
        "-e",
        f"clusterforge_validation_replay_dir={REPLAY_DIR}",
        "-e",
        f"clusterforge_report_dir={reports}",
        "-e",
        "clusterforge_validation_run_id=e2e",
        env=gpu_lab["env"],
        check=False,
    )
    # node01's GPUs are held down by the power brake: that host fails, at the end; head01 does not.
    assert done.returncode == 2, done.stdout[-4000:] + done.stderr[-2000:]
    assert "hosts: 2  failed: 1  unreachable: 0" in done.stdout

    run_dir = reports / "e2e"
    assert sorted(p.name for p in run_dir.iterdir()) == ["_run.json", "head01.json", "node01.json"]
    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    assert check_cli.run(parser.parse_args(["report", str(run_dir), "-o", str(out)])) == 0

    document = json.loads((out / "report.json").read_text())
    nodes = {node["host"]: node for node in document["nodes"]}
    node01 = {c["check"]: c for c in nodes["node01"]["checks"]}
    assert nodes["node01"]["status"] == "fail"
    assert node01["gpu.throttle"]["status"] == "fail"
    assert "hw_power_brake_slowdown" in node01["gpu.throttle"]["message"]
    assert node01["gpu.count"]["status"] == "pass"  # 8 of the 8 the topology expects
    assert node01["gpu.model"]["status"] == "pass"
    assert node01["ib.present"]["status"] == "pass"
    assert node01["ib.rate"]["status"] == "pass"
    assert node01["nccl.all_reduce.busbw"]["status"] == "pass"  # 470.7 GB/s, NVLink 4 floor 360
    assert node01["nccl.all_gather.run"]["message"] == "skipped: no hardware"  # nothing recorded for it

    # head01 has nothing recorded: every check it ran says no hardware, and it passes the run.
    head = nodes["head01"]
    assert head["status"] == "skipped"
    assert {c["message"] for c in head["checks"]} == {"skipped: no hardware"}
    assert {c["module"] for c in head["checks"]} >= {"gpu_check", "ib_check", "nccl_check", "cabling_check"}

    suites = {s.get("name"): s for s in ET.parse(out / "junit.xml").getroot().findall("testsuite")}
    throttle = next(c for c in suites["node01"].findall("testcase") if c.get("name") == "gpu.throttle")
    assert throttle.find("failure") is not None
    assert int(suites["head01"].get("skipped")) == int(suites["head01"].get("tests"))

    page = (out / "report.html").read_text()
    assert 'id="node-node01"' in page and 'id="node-head01"' in page
    assert '<g class="bar pass">' in page  # node01's all_reduce bandwidth in the chart
