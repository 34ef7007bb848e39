"""playbooks/validate.yml on the trays of one NVLink domain, reached with the local connection (no
containers), each judging its replayed nvidia-smi -q: tray01 the attached but Unhealthy GB200 tray of
dra-driver issue 626 (clique 2, ClusterUUID dc6e40c4-...), tray02 the GB200 tray of azhpc-images
PR 506 whose probe failed (clique 0, the all-zero ClusterUUID). head01 is in no domain and runs no
fabric check. The domain step holds both trays to the identity tray01 reports and fails tray02
with the domain and both values named; every verdict says it judged recorded outputs."""

from __future__ import annotations

import argparse
import json
import shutil

from clusterforge.cli import check as check_cli
from tests.integration.conftest import local_inventory, run_replayed
from tests.paths import PROJECT
from tests.unit.plugins.module_utils.samples import fixture

UUID = "dc6e40c4-d722-4357-9ba6-5291dd461278"
RECORDINGS = {
    "tray01": fixture("nvidia-smi_fabric", "gb200-fabric-unhealthy-dra-driver-626.txt"),
    "tray02": fixture("nvidia-smi_fabric", "gb200-fabric-insufficient-resources-azhpc-506.txt"),
}


def records(reports, host: str, module: str) -> list[dict]:
    document = json.loads((reports / "fabric" / f"{host}.json").read_text())
    return [record for record in document["results"] if record["module"] == module]


def test_the_tray_whose_cluster_uuid_differs_fails_its_domain(tmp_path):
    inventory = local_inventory(
        tmp_path,
        {"tray01": "clusterforge_nvlink_domain=nvl01", "tray02": "clusterforge_nvlink_domain=nvl01", "head01": ""},
    )
    replay = tmp_path / "replay"
    for host in ("tray01", "tray02", "head01"):
        (replay / host).mkdir(parents=True)
        if host in RECORDINGS:
            shutil.copy(RECORDINGS[host], replay / host / "nvidia-smi-fabric.txt")
    reports = tmp_path / "reports"
    done = run_replayed(
        tmp_path,
        str(PROJECT / "playbooks" / "validate.yml"),
        inventory,
        "fabric",
        f"clusterforge_validation_textfile_dir={tmp_path}/no-textfile-dir",
    )
    log = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 2, log
    assert "hosts: 3  failed: 2  unreachable: 0" in done.stdout, log  # tray01 for its health, tray02 its domain

    # Each tray's own judgement of its recording, labelled replay.
    (tray01,) = records(reports, "tray01", "fabric_check")
    assert (tray01["status"], tray01["source"]) == ("fail", "replay")
    assert {c["check"]: c["status"] for c in tray01["checks"]} == {
        "gpu.fabric_state": "pass",
        "gpu.fabric_domain": "pass",
        "gpu.fabric_health": "fail",
    }
    (tray02,) = records(reports, "tray02", "fabric_check")
    assert tray02["status"] == "fail" and tray02["source"] == "replay"

    # The domain step: tray01's identity is the domain's; tray02 differs and fails, both values named.
    (domain01,) = records(reports, "tray01", "fabric_domain")
    assert domain01["status"] == "pass" and domain01["source"] == "replay"
    assert domain01["checks"][0]["check"] == "nvlink_domain.nvl01"
    (domain02,) = records(reports, "tray02", "fabric_domain")
    check = domain02["checks"][0]
    assert (domain02["status"], check["check"]) == ("fail", "nvlink_domain.nvl01")
    assert (check["measured"], check["expected"]) == ("none", f"2/{UUID}")
    assert check["message"] == (
        f"NVLink domain nvl01 (1 of 2 trays report 2/{UUID}): #1 in no NVLink domain "
        "(CliqueId 0, ClusterUUID 00000000-0000-0000-0000-000000000000)"
    )
    assert "fabric_domain: 1 of 1 checks failed: nvlink_domain.nvl01: NVLink domain nvl01 (1 of 2" in done.stdout, log
    # head01 has no domain: no fabric check, no domain record.
    assert records(reports, "head01", "fabric_check") == records(reports, "head01", "fabric_domain") == []

    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    assert check_cli.run(parser.parse_args(["report", str(reports / "fabric"), "-o", str(out)])) == 0
    document = json.loads((out / "report.json").read_text())
    nodes = {node["host"]: node for node in document["nodes"]}
    assert {host: node["status"] for host, node in nodes.items()} == {
        "tray01": "fail",
        "tray02": "fail",
        "head01": "skipped",
    }
    domain_checks = [c for c in nodes["tray02"]["checks"] if c["check"] == "nvlink_domain.nvl01"]
    assert [(c["status"], c["origin"]) for c in domain_checks] == [("fail", "replayed from recorded outputs")]
