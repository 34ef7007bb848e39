"""playbooks/validate.yml's NCCL pairs and bisection, on hosts reached with the local connection.

No containers: five inventory hosts of a topology all run on this machine (ansible_connection
local), each with its own replay directory. The pairs span the two leaves of the compute fabric;
gpu03's pair runs are recorded slow (a real 2-node RoCE run far below 4 x NDR), so its pair
fails, the bisection runs each of its two nodes with a good node, clears gpu01 and names gpu03.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import xml.etree.ElementTree as ET

import yaml

from clusterforge.cli import check as check_cli
from tests.integration.conftest import clusterforge, run_replayed
from tests.paths import PROJECT
from tests.unit.plugins.module_utils.samples import fixture

HCAS = [("mlx5_0", "0000:18:00.0"), ("mlx5_3", "0000:40:00.0"), ("mlx5_4", "0000:4f:00.0"), ("mlx5_5", "0000:5e:00.0")]
GOOD = fixture("nccl_all_reduce_perf", "h100-2node-16gpu-ib-bitdeer.txt")
SLOW = fixture("nccl_all_reduce_perf", "dgx-2node-roce-cx5-k8s-deepops-old-format.txt")


def topology() -> dict:
    return {
        "plugin": "topology",
        "cluster": {"name": "pairs", "domain": "pairs.clusterforge.test"},
        "sites": [{"name": "local"}],
        "node_types": {
            "mgmt": {},
            "gpu_node": {
                "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8, "nvlink_generation": 4, "nvswitch": True},
                # Four NDR rails: with 16-port leaves (8 down) two nodes share a leaf.
                "hcas": [
                    {"device": d, "netdev": f"ib{i}", "pci": p, "rate_gbps": 400} for i, (d, p) in enumerate(HCAS)
                ],
            },
        },
        "roles": {
            "head": {"node_type": "mgmt", "count": 1, "hostname": "head{index:02d}", "fabrics": ["inband"]},
            "compute": {"node_type": "gpu_node", "count": 4, "hostname": "gpu{index:02d}", "fabrics": ["inband"]},
        },
        "fabrics": {
            "compute": {
                "purpose": "compute",
                "link_layer": "infiniband",
                "topology": "fat_tree",
                "switch": {"model": "QM9700", "radix": 16, "port_speed_gbps": 400},
            },
            "inband": {
                "purpose": "inband",
                "link_layer": "ethernet",
                "topology": "fat_tree",
                "switch": {"model": "bridge", "radix": 64, "port_speed_gbps": 10},
            },
        },
        "addressing": {"inband": "10.99.0.0/24"},
        "ansible": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "ansible_become": False,
            },
            "host": "{name}",
        },
    }


def test_pairs_span_leaves_and_bisection_names_the_culprit(tmp_path):
    inventory = tmp_path / "pairs.topology.yml"
    inventory.write_text(yaml.safe_dump(topology(), sort_keys=False))
    replay = tmp_path / "replay"
    for host in ("gpu01", "gpu02", "gpu03", "gpu04"):
        (replay / host).mkdir(parents=True)
        shutil.copy(SLOW if host == "gpu03" else GOOD, replay / host / "all_reduce_perf.2node.txt")
    shutil.copy(SLOW, replay / "gpu01" / "all_reduce_perf.gpu01+gpu03.txt")  # gpu01 led the pair with gpu03
    reports = tmp_path / "reports"
    # Each node's node exporter textfile directory (head01 has none, so it gets no file).
    textfiles = tmp_path / "textfile"
    for host in ("gpu01", "gpu02", "gpu03", "gpu04"):
        (textfiles / host).mkdir(parents=True)
    done = run_replayed(
        tmp_path,
        str(PROJECT / "playbooks" / "validate.yml"),
        inventory,
        "pairs",
        f"clusterforge_validation_textfile_dir={textfiles}/{{{{ inventory_hostname }}}}",
    )
    assert done.returncode == 2, done.stdout[-4000:] + done.stderr[-2000:]
    assert "hosts: 5  failed: 1  unreachable: 0" in done.stdout  # gpu03 only
    validation = next(line for line in done.stdout.splitlines() if line.startswith("validation: "))
    assert ", all replayed from recorded outputs -> clusterforge report" in validation, validation

    # The verdicts as node exporter textfile metrics: gpu03 failed its pair and probe runs, gpu01
    # was cleared by the bisection.
    metrics = {host: (textfiles / host / "clusterforge_validation.prom").read_text() for host in ("gpu01", "gpu03")}
    # Every node judged recordings (replay_dir): each series of its checks and its host_ok say so.
    replayed = 'origin="replayed from recorded outputs"'
    assert f"clusterforge_validation_host_ok{{{replayed}}} 0\n" in metrics["gpu03"]
    assert re.search(
        r'^clusterforge_validation_check_ok\{module="nccl_check",.*status="fail",' + replayed + r"\} 0$",
        metrics["gpu03"],
        re.M,
    )
    assert f"clusterforge_validation_host_ok{{{replayed}}} 1\n" in metrics["gpu01"]
    assert re.search(
        r"^clusterforge_validation_check_measured\{module=\"nccl_check\",.*\} [0-9.]+$", metrics["gpu01"], re.M
    )
    for text in metrics.values():
        series = [line for line in text.splitlines() if line.startswith("clusterforge_validation_") and "{" in line]
        assert series and all(replayed in line for line in series)
    assert not (textfiles / "head01").exists()

    # The acceptance job is held to the floor the pairs' all-reduce runs were held to (no run across
    # all healthy nodes was recorded); it says skipped here (no torch on these hosts).
    pair_records = [
        record
        for host in ("gpu01", "gpu02")
        for record in json.loads((reports / "pairs" / f"{host}.json").read_text())["results"]
        if record["module"] == "nccl_check" and record.get("label", "").startswith("all_reduce:")
    ]
    floors = {record["busbw"]["floor"] for record in pair_records if "busbw" in record}
    training = next(
        record
        for record in json.loads((reports / "pairs" / "head01.json").read_text())["results"]
        if record["module"] == "training_check"
    )
    # 4 NDR rails x 400 Gb/s: every pair was held to 160 GB/s, and so is the job.
    assert floors == {160.0} and training["busbw_floor_gbps"] == 160.0, training

    run = json.loads((reports / "pairs" / "_run.json").read_text())
    assert run["pairs"]["pairs"] == [["gpu01", "gpu03"], ["gpu02", "gpu04"]]
    assert set(run["pairs"]["crossings"].values()) == {"spine"}
    assert run["failed_pairs"] == [["gpu01", "gpu03"]]
    assert run["probes"] == [[["gpu01", "gpu04"], ["gpu03", "gpu02"]]]  # each with the farthest good node
    assert run["verdict"] == {"culprits": ["gpu03"], "cleared": ["gpu01"], "unresolved": [], "untested": []}
    assert run["cabling_host"] == "gpu01"  # the head node has no HCA on the InfiniBand fabric
    assert (run["cluster"], run["topology"]) == ("pairs", str(inventory.resolve()))
    assert run["started"].endswith("Z") and run["versions"]["ansible-core"].startswith("2.")

    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    assert check_cli.run(parser.parse_args(["report", str(reports / "pairs"), "-o", str(out)])) == 0
    document = json.loads((out / "report.json").read_text())
    status = {node["host"]: node["status"] for node in document["nodes"]}
    assert status == {"gpu01": "pass", "gpu02": "pass", "gpu03": "fail", "gpu04": "skipped", "head01": "skipped"}
    # Without --topology: the topology file the validate stage recorded names the cluster and
    # places the failed pair on the cabling plan.
    header = document["header"]
    assert (header["cluster"], header["topology"], header["started"]) == ("pairs", run["topology"], run["started"])
    assert "gpu01 + gpu03 on the cabling plan" in (out / "report.html").read_text()

    # A run judged from recorded outputs says so in every artefact, per host and per check.
    said = "replayed from recorded outputs"
    assert document["origin"] == said
    for node in document["nodes"]:
        assert node["origin"] == said and node["checks"], node["host"]
        assert {check["origin"] for check in node["checks"]} == {said}, node["host"]
    junit = ET.parse(out / "junit.xml").getroot()
    origins = [p.get("value") for p in junit.iter("property") if p.get("name") == "origin"]
    cases = list(junit.iter("testcase"))
    assert len(origins) == len(cases) + len(junit.findall("testsuite")) and set(origins) == {said}
    for case in cases:
        for element in case.findall("failure") + case.findall("skipped") + case.findall("system-out"):
            assert (element.get("message") or element.text).startswith(said), ET.tostring(case, encoding="unicode")
    page = (out / "report.html").read_text()
    # The GPUDirect per-rail table labels each replayed cell and each replayed rail's verdict too.
    rail_cells = sum(
        [item["origin"] for item in row["checks"].values()].count(said) + (row["origin"] == said)
        for node in document["nodes"]
        for row in node["gpudirect_rails"]
    )
    assert rail_cells > 0
    assert page.count(f'<span class="origin">{said}</span>') == 1 + 2 * len(document["nodes"]) + len(cases) + rail_cells
    bars = {(b["label"], b["scope"], b["status"]) for b in document["bandwidth"]}
    assert bars == {
        ("all_reduce:gpu01+gpu03", "pair", "fail"),
        ("all_reduce:gpu02+gpu04", "pair", "pass"),
        ("all_reduce:gpu01+gpu04", "probe", "pass"),
        ("all_reduce:gpu03+gpu02", "probe", "fail"),
    }


def test_a_host_that_cannot_be_reached_is_recorded_and_reported_unreachable(tmp_path):
    # ghost refuses the SSH connection (port 1), so it drops out at its first node check; node01
    # (local, no recorded outputs: no hardware) is the one left to write ghost's file.
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(
        "[all]\n"
        "ghost ansible_host=127.0.0.1 ansible_port=1 ansible_connection=ssh\n"
        f"node01 ansible_connection=local ansible_python_interpreter={sys.executable} ansible_become=false\n"
    )
    (tmp_path / "replay" / "node01").mkdir(parents=True)
    reports = tmp_path / "reports"
    done = run_replayed(tmp_path, str(PROJECT / "playbooks" / "validate.yml"), inventory, "lost")
    assert "hosts: 2  failed: 0  unreachable: 1" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]
    ghost = json.loads((reports / "lost" / "ghost.json").read_text())
    assert "port 1: Connection refused" in ghost["unreachable"]
    assert ghost["results"] == []  # it judged nothing before it was lost
    assert json.loads((reports / "lost" / "node01.json").read_text())["unreachable"] is None

    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    assert check_cli.run(parser.parse_args(["report", str(reports / "lost"), "-o", str(out)])) == 0
    document = json.loads((out / "report.json").read_text())
    assert {node["host"]: node["status"] for node in document["nodes"]} == {"ghost": "unreachable", "node01": "skipped"}
    assert document["status"] == "fail"


def test_a_bad_node_among_eight_is_named_by_bisection_in_three_rounds(tmp_path):
    # No topology, so no pairs: the run across all eight GPU nodes fails (node05 is in it), and the
    # bisection halves it: node01-04 pass, node05-08 fail; node05+06 fail, node07+08 pass; node05
    # with a good partner fails, node06 with one passes. log2(8) = 3 rounds.
    hosts = [f"node{i:02d}" for i in range(1, 9)]
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(
        "[all]\n"
        + "".join(
            f"{host} ansible_connection=local ansible_python_interpreter={sys.executable} ansible_become=false"
            " clusterforge_expected_gpus=8\n"
            for host in hosts
        )
    )
    gpu = tmp_path / "pci" / "0000:18:00.0"  # what nccl_check probes before it runs: an NVIDIA 3D controller
    gpu.mkdir(parents=True)
    (gpu / "vendor").write_text("0x10de\n")
    (gpu / "class").write_text("0x030200\n")
    fake = PROJECT / "tests" / "integration" / "fake_nccl_tests.py"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "all_reduce_perf").write_text(f'#!/bin/sh\nexec {sys.executable} {fake} "$@"\n')
    (bin_dir / "all_reduce_perf").chmod(0o755)
    log = tmp_path / "nccl.log"
    reports = tmp_path / "reports"
    extra = {
        "clusterforge_report_dir": str(reports),
        "clusterforge_validation_run_id": "bisect",
        "clusterforge_validation_pci_root": str(tmp_path / "pci"),
        "clusterforge_validation_nccl_bin_dirs": [str(bin_dir)],
        "clusterforge_validation_nccl_launcher": [sys.executable, str(fake), "{hosts}"],
        "clusterforge_validation_nccl_tests": ["all_reduce"],
        "clusterforge_validation_ib_loopback": False,
    }
    extra_vars = tmp_path / "extra.json"
    extra_vars.write_text(json.dumps(extra))
    env = {
        "CLUSTERFORGE_STATE_DIR": str(tmp_path / "state"),
        "FAKE_NCCL_BAD_HOST": "node05",
        "FAKE_NCCL_LOG": str(log),
        "FAKE_NCCL_GOOD_OUTPUT": str(GOOD),
        "FAKE_NCCL_SINGLE_OUTPUT": str(fixture("nccl_all_reduce_perf", "h100-8gpu-single-node-bitdeer.txt")),
    }
    done = clusterforge(
        "run",
        str(PROJECT / "playbooks" / "validate.yml"),
        "-i",
        str(inventory),
        "-e",
        f"@{extra_vars}",
        env=env,
        check=False,
    )
    assert "hosts: 8  failed: 1  unreachable: 0" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]

    run = json.loads((reports / "bisect" / "_run.json").read_text())
    assert run["group"] == hosts
    bisection = run["bisection"]
    assert bisection["rounds"] == [
        [hosts[:4], hosts[4:]],
        [["node05", "node06"], ["node07", "node08"]],
        [["node05", "node01"], ["node06", "node02"]],  # each single with its own good partner
    ]
    assert (bisection["culprits"], bisection["unresolved"]) == (["node05"], [])
    assert run["verdict"]["culprits"] == ["node05"]
    # The fake saw the run across all eight and two runs a round, nothing else.
    assert [json.loads(line) for line in log.read_text().splitlines()][:1] == [hosts]
    assert len(log.read_text().splitlines()) == 1 + 2 * 3

    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    assert check_cli.run(parser.parse_args(["report", str(reports / "bisect"), "-o", str(out)])) == 0
    document = json.loads((out / "report.json").read_text())
    # node01 led the failed run across all eight and node05-08's half is led by node05: only node05 fails.
    assert {node["host"]: node["status"] for node in document["nodes"]} == {
        host: "fail" if host == "node05" else "pass" for host in hosts
    }
    assert document["bisection"]["culprits"] == ["node05"]
    page = (out / "report.html").read_text()
    assert "failed run across 8 nodes bisected in 3 rounds" in page and "culprits: node05" in page
