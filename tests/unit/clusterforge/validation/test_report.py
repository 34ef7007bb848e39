"""clusterforge report (JSON, JUnit XML, HTML) and clusterforge check judge."""

from __future__ import annotations

import argparse
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clusterforge import errors
from clusterforge.cli import check as check_cli
from clusterforge.cli import main
from clusterforge.validation import judges, report
from clusterforge.validation.host_verdict import verdicts
from tests.paths import PROJECT
from tests.unit.plugins.module_utils.samples import fixture, load
from tests.unit.plugins.modules.test_ib_check import sysfs


def judged(kind: str, name: str, expected: dict) -> list[dict]:
    return [r.as_dict() for r in judges.judge_text(kind, load(*name.split("/")), expected)]


def record(module: str, checks: list[dict], **extra) -> dict:
    statuses = [c["status"] for c in checks]
    return {"module": module, "status": verdicts.worst(statuses), "checks": checks, **extra}


def host_file(directory: Path, host: str, results: list[dict], node_type: str = "hgx_h100") -> None:
    document = {"schema": report.HOST_SCHEMA, "run_id": "20250101T000000Z", "host": host, "node_type": node_type}
    (directory / f"{host}.json").write_text(json.dumps({**document, "groups": ["compute"], "results": results}))


@pytest.fixture
def run_dir(tmp_path) -> Path:
    """A run of three nodes: gpu01 with the throttling H100 (fail), gpu02 healthy, head01 without hardware."""
    directory = tmp_path / "20250101T000000Z"
    directory.mkdir()
    gpu = judged("nvidia-smi-q", "nvidia-smi_query/h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt", {"gpu_count": 8})
    ib = judged(
        "ibstat", "ibstat/h100-ndr400-ib-active-eth-down-disabled-gpud.txt", {"devices": ["mlx5_0"], "rate": 400}
    )
    nccl = [
        {**c, "check": c["check"].replace("nccl.", "nccl.all_reduce.")}
        for c in judged("nccl", "nccl_all_reduce_perf/h100-8gpu-single-node-bitdeer.txt", {"nvlink_generation": 4})
    ]
    busbw = {"measured": 470.73, "reference": 450.0, "floor": 360.0, "how": "NVLink 4", "ranks": 8, "nodes": 1}
    pair_checks = [
        {**c, "check": c["check"].replace("nccl.", "nccl.all_reduce:gpu02+gpu01.")}
        for c in judged(
            "nccl",
            "nccl_all_reduce_perf/dgx-2node-roce-cx5-k8s-deepops-old-format.txt",
            {"nic_rate_gbps": 400, "rails": 8, "nodes": 2},
        )
    ]
    pair_busbw = {"measured": 22.92, "reference": 400.0, "floor": 320.0, "how": "8 rails x 400 Gb/s"}
    skipped = {
        "check": "gpu.count",
        "status": "skipped",
        "measured": None,
        "expected": 8,
        "message": "skipped: no hardware",
    }
    host_file(directory, "gpu01", [record("gpu_check", gpu), record("ib_check", ib)])
    host_file(
        directory,
        "gpu02",
        [
            record("ib_check", ib),
            record("nccl_check", nccl, label="all_reduce", scope="node", hosts=[], busbw=busbw),
            record(
                "nccl_check",
                pair_checks,
                label="all_reduce:gpu02+gpu01",
                scope="pair",
                hosts=["gpu02", "gpu01"],
                busbw=pair_busbw,
            ),
        ],
    )
    host_file(
        directory,
        "head01",
        [record("gpu_check", [skipped]), {"module": "cabling_check", "error": "MODULE FAILURE"}],
        "mgmt",
    )
    run = {
        "schema": report.RUN_SCHEMA,
        "run_id": "20250101T000000Z",
        "pairs": {"rounds": [[["gpu02", "gpu01"]]], "pairs": [["gpu02", "gpu01"]]},
        "failed_pairs": [["gpu02", "gpu01"]],
        "verdict": {"culprits": ["gpu01"], "cleared": ["gpu02"], "unresolved": [], "untested": []},
    }
    (directory / "_run.json").write_text(json.dumps(run))
    return directory


def test_node_verdicts(run_dir):
    run = report.load_run(run_dir)
    status = {node.host: node.status for node in run.nodes}
    # gpu02's failed pair does not count against it: the bisection cleared it.
    assert status == {"gpu01": "fail", "gpu02": "pass", "head01": "fail"}
    head = next(n for n in run.nodes if n.host == "head01")
    assert [(c.check, c.status) for c in head.checks] == [("gpu.count", "skipped"), ("cabling_check.error", "fail")]
    assert run.status == "fail"
    assert [(b.host, b.scope, b.measured, b.status) for b in run.bandwidth] == [
        ("gpu02", "node", 470.73, "pass"),
        ("gpu02", "pair", 22.92, "fail"),
    ]


def test_json_document(run_dir, tmp_path):
    written = report.write_report(report.load_run(run_dir), tmp_path / "out")
    document = json.loads(written["json"].read_text())
    assert document["schema"] == report.REPORT_SCHEMA
    assert document["run_id"] == "20250101T000000Z"
    assert document["status"] == "fail"
    assert document["summary"]["nodes_by_status"] == {"fail": 2, "unreachable": 0, "warn": 0, "pass": 1, "skipped": 0}
    gpu01 = next(n for n in document["nodes"] if n["host"] == "gpu01")
    throttle = next(c for c in gpu01["checks"] if c["check"] == "gpu.throttle")
    assert (throttle["status"], throttle["module"]) == ("fail", "gpu_check")
    assert document["verdict"]["culprits"] == ["gpu01"]


def _replayed_run(run_dir: Path) -> Path:
    """The run_dir fixture's run where gpu01's module runs and head01's gpu_check judged recorded
    outputs (the modules' replay mode: "source" replay or replay:<reader>); gpu02 ran live."""
    for host, replayed_modules in (("gpu01", {"gpu_check", "ib_check"}), ("head01", {"gpu_check"})):
        path = run_dir / f"{host}.json"
        document = json.loads(path.read_text())
        for result in document["results"]:
            if result.get("module") in replayed_modules:
                result["source"] = "replay:ibstat" if result["module"] == "ib_check" else "replay"
        path.write_text(json.dumps(document))
    gpu02 = run_dir / "gpu02.json"
    document = json.loads(gpu02.read_text())
    for result in document["results"]:
        result["source"] = "live"
    gpu02.write_text(json.dumps(document))
    return run_dir


def test_every_artefact_says_replayed_per_check_and_per_host(run_dir, tmp_path):
    """A run judged from recordings must not look like a live pass: report.json, JUnit and the HTML
    page say "replayed from recorded outputs" on each such check and host, and nowhere else."""
    said = "replayed from recorded outputs"
    written = report.write_report(report.load_run(_replayed_run(run_dir)), tmp_path / "out")

    document = json.loads(written["json"].read_text())
    assert document["origin"] == said
    nodes = {node["host"]: node for node in document["nodes"]}
    assert {host: node["origin"] for host, node in nodes.items()} == {"gpu01": said, "gpu02": "live", "head01": said}
    assert {check["origin"] for check in nodes["gpu01"]["checks"]} == {said}
    assert {check["origin"] for check in nodes["gpu02"]["checks"]} == {"live"}
    # head01's crashed cabling_check recorded no source: live, beside its replayed gpu_check.
    assert [(c["check"], c["origin"]) for c in nodes["head01"]["checks"]] == [
        ("gpu.count", said),
        ("cabling_check.error", "live"),
    ]

    root = ET.parse(written["junit"]).getroot()
    for suite in root.findall("testsuite"):
        host = suite.get("name")
        assert suite.find("properties/property[@name='origin']").get("value") == nodes[host]["origin"]
        for case, check in zip(suite.findall("testcase"), nodes[host]["checks"], strict=True):
            assert case.find("properties/property[@name='origin']").get("value") == check["origin"]
            texts = [e.get("message") or "" for e in case.findall("failure") + case.findall("skipped")]
            texts += [(e.text or "") for e in case.findall("failure") + case.findall("system-out")]
            assert texts
            for text in texts:
                assert text.startswith(said) == (check["origin"] == said), (host, check["check"], text)

    page = written["html"].read_text()
    mark = f'<span class="origin">{said}</span>'
    assert mark in page.split("</h1>")[0].split("<h1>")[1]  # the run's mark, in its heading
    rows = {host: page.split(f'id="node-{host}"')[1].split("</tr>")[0] for host in nodes}
    assert {host: mark in row for host, row in rows.items()} == {"gpu01": True, "gpu02": False, "head01": True}
    checks = page.split("<h2>Checks per node</h2>")[1]
    details = re.split(r"<details(?: open)?>", checks)[1:]  # failing nodes' open, as all when few
    per_host = {d.split("</summary>")[0].split(">")[1].split(" ")[0]: d for d in details}
    for host, node in nodes.items():
        replayed_checks = sum(c["origin"] == said for c in node["checks"])
        # The host's summary line once when it has any, then each replayed check's row.
        assert per_host[host].count(mark) == (node["origin"] == said) + replayed_checks, host


def test_a_live_run_says_replayed_nowhere(run_dir, tmp_path):
    written = report.write_report(report.load_run(run_dir), tmp_path / "out")
    for path in written.values():
        assert "replayed from recorded outputs" not in path.read_text()
    assert json.loads(written["json"].read_text())["origin"] == "live"


def test_junit_parses_back_with_failures_and_skips(run_dir, tmp_path):
    written = report.write_report(report.load_run(run_dir), tmp_path / "out")
    root = ET.parse(written["junit"]).getroot()
    assert root.tag == "testsuites"
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert set(suites) == {"gpu01", "gpu02", "head01"}
    cases = {(s, c.get("name")): c for s, suite in suites.items() for c in suite.findall("testcase")}
    throttle = cases[("gpu01", "gpu.throttle")]
    assert throttle.get("classname") == "gpu01.gpu_check"
    assert "hw_power_brake_slowdown" in throttle.find("failure").get("message")
    assert cases[("head01", "gpu.count")].find("skipped").get("message") == "skipped: no hardware"
    assert cases[("head01", "cabling_check.error")].find("failure") is not None
    cleared = cases[("gpu02", "nccl.all_reduce:gpu02+gpu01.busbw")]
    assert cleared.find("failure") is None and "cleared by bisection" in cleared.find("system-out").text
    assert cases[("gpu01", "gpu.count")].find("failure") is None
    total = sum(int(s.get("tests")) for s in suites.values())
    assert int(root.get("tests")) == total == len(cases)
    assert int(root.get("failures")) == sum(1 for c in cases.values() if c.find("failure") is not None)
    assert int(root.get("skipped")) == sum(1 for c in cases.values() if c.find("skipped") is not None)


def test_html_is_self_contained_with_rows_and_chart(run_dir, tmp_path):
    written = report.write_report(report.load_run(run_dir), tmp_path / "out")
    page = written["html"].read_text()
    assert page.startswith("<!DOCTYPE html>")
    for host in ("gpu01", "gpu02", "head01"):
        assert f'id="node-{host}"' in page
    assert '<tr class="node fail" id="node-gpu01">' in page
    assert "gpu.throttle" in page and "skipped: no hardware" not in page.split('id="node-head01"')[0]
    chart = page[page.index('<div id="bandwidth">') :]
    assert chart.count('<g class="bar') == 2
    assert "470.7" in chart and "22.9" in chart
    assert 'stroke-dasharray="3,2"' in chart  # the floor each run was judged against
    assert "culprits: gpu01" in page
    # No external assets: no scripts, stylesheets, images or fonts from elsewhere.
    for marker in ("<script", "<link", "src=", "@import", "url("):
        assert marker not in page
    ET.fromstring(page[page.index("<svg") : page.index("</svg>") + 6])  # the chart is well-formed SVG


def test_an_unreachable_node_is_unreachable_in_every_report(run_dir, tmp_path):
    # gpu02 passed; then it could not be reached, with its gpu_check already recorded.
    why = "Task failed: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.2 port 22: No route to host"
    data = json.loads((run_dir / "gpu02.json").read_text())
    (run_dir / "gpu02.json").write_text(json.dumps({**data, "unreachable": why}))
    run = report.load_run(run_dir)
    gpu02 = next(node for node in run.nodes if node.host == "gpu02")
    assert (gpu02.status, gpu02.unreachable) == ("unreachable", why)
    assert gpu02.checks  # what it recorded before stays in the report
    written = report.write_report(run, tmp_path / "out")
    document = json.loads(written["json"].read_text())
    assert document["status"] == "fail"  # a node nobody checked does not pass the run
    assert document["summary"]["nodes_by_status"] == {"fail": 2, "unreachable": 1, "warn": 0, "pass": 0, "skipped": 0}
    node = next(n for n in document["nodes"] if n["host"] == "gpu02")
    assert (node["status"], node["unreachable"]) == ("unreachable", why)
    root = ET.parse(written["junit"]).getroot()
    error = root.find("testsuite[@name='gpu02']/testcase[@name='unreachable']/error")
    assert error is not None and error.get("message") == why
    assert (root.get("errors"), root.find("testsuite[@name='gpu02']").get("errors")) == ("1", "1")
    page = written["html"].read_text()
    assert '<tr class="node unreachable" id="node-gpu02">' in page and "No route to host" in page
    assert cli("report", str(run_dir), "-o", str(tmp_path / "cli")) == 0


def test_unreachable_must_be_a_reason(run_dir):
    data = json.loads((run_dir / "gpu02.json").read_text())
    (run_dir / "gpu02.json").write_text(json.dumps({**data, "unreachable": True}))
    with pytest.raises(errors.UsageError, match=r"gpu02.json: unreachable: Input should be a valid string"):
        report.load_run(run_dir)


def test_chart_without_nccl():
    svg = report.bandwidth_svg([])
    assert f">{report.NO_BANDWIDTH}<" in svg and report.NO_BANDWIDTH == "No NCCL bandwidth measured."


def test_chart_axis_has_round_ticks():
    assert report._ticks(516.6) == [0, 200, 400]
    assert report._ticks(12) == [0, 5, 10]
    assert report._ticks(0.5) == [0, 0.1, 0.2, 0.3, 0.4]


@pytest.mark.parametrize(
    "content,match",
    [
        (None, "no <host>.json results"),
        ("{", "not JSON"),
        ('{"schema": "other/1"}', "expected 'clusterforge.validation.host/1'"),
        ('{"schema": "clusterforge.validation.host/1", "results": 3}', "h.json: results: Input should be a valid list"),
    ],
)
def test_bad_results_are_usage_errors(tmp_path, content, match):
    if content is not None:
        (tmp_path / "h.json").write_text(content)
    with pytest.raises(errors.UsageError, match=match):
        report.load_run(tmp_path)


# --- the CLI ------------------------------------------------------------------------------------


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    return check_cli.run(parser.parse_args(list(argv)))


def test_report_command(run_dir, tmp_path, capsys):
    assert cli("report", str(run_dir), "-o", str(tmp_path / "out")) == 0
    written = {p.name for p in (tmp_path / "out").iterdir()}
    assert written == {"report.json", "junit.xml", "report.html", ".clusterforge-output.json"}
    assert "run 20250101T000000Z: fail (3 nodes)" in capsys.readouterr().out
    with pytest.raises(errors.UsageError, match="results directory not found"):
        cli("report", str(tmp_path / "nope"), "-o", str(tmp_path / "out"))


def test_judge_nvidia_smi_json(capsys):
    path = str(fixture("nvidia-smi_query", "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt"))
    code = cli(
        "check", "judge", "nvidia-smi-q", path, "--expect", "gpu_count=8", "--expect", "cuda_version=12.2", "--json"
    )
    document = json.loads(capsys.readouterr().out)
    assert code == errors.EXIT_HOSTS_FAILED
    assert document["status"] == "fail"
    checks = {c["check"]: c for c in document["checks"]}
    assert checks["gpu.throttle"]["status"] == "fail"
    assert checks["gpu.cuda_version"]["status"] == "pass"  # "12.2" stays text


@pytest.mark.parametrize(
    "kind,name,expect,status",
    [
        ("nccl", "nccl_all_reduce_perf/h100-2node-16gpu-ib-bitdeer.txt", ["nic_rate_gbps=400", "rails=8"], "pass"),
        ("nccl", "nccl_all_reduce_perf/dgx-2node-roce-cx5-k8s-deepops-old-format.txt", ["expected_busbw=100"], "fail"),
        (
            "ibstat",
            "ibstat/h100-ndr400-ib-active-eth-down-disabled-gpud.txt",
            ["devices=mlx5_0,mlx5_3", "rate=400"],
            "pass",
        ),
        ("ibv_devinfo", "ibv_devinfo/connectx3-mlx4-2hca-port1-active-port2-down.txt", ["devices=mlx4_0"], "fail"),
        (
            "nvidia-smi-topo",
            "nvidia-smi_topo/a100-sxm-40g-8gpu-10nic-dgx-style-tabs.txt",
            ["nvlinks_per_gpu=12", "nvswitch=true"],
            "pass",
        ),
        (
            "ibnetdiscover",
            "ibnetdiscover_iblinkinfo/ibnetdiscover-p-edr-osc-subset-infiniband-exporter.txt",
            ["speed=EDR"],
            "pass",
        ),
        ("dcgmi", "dcgmi_diag/r1-deployment-fail-deepops.txt", [], "fail"),
        ("ib_write_bw", "ib_write_bw/roce-100g-4qp-rdma-cm-client-oci.txt", ["rate_gbps=100"], "pass"),
        ("kernel-log", "kernel_log_xid/h100-xid79-fallen-off-bus-sxid20034-gpud.txt", [], "fail"),
        ("xid", "kernel_log_xid/h100-xid79-fallen-off-bus-sxid20034-gpud.txt", [], "fail"),
        (
            "nvidia-smi-query",
            "nvidia-smi_query/24gb-gpu-query-gpu-timestamp-pstate-mem-csv-lms.txt",
            ["memory_total_min_mib=23028", "temperature_warn_c=26"],
            "pass",
        ),
    ],
)
def test_judge_kinds(kind, name, expect, status, capsys):
    args = [a for e in expect for a in ("--expect", e)]
    code = cli("check", "judge", kind, str(fixture(*name.split("/"))), *args)
    out = capsys.readouterr().out
    assert f"status: {status}" in out
    assert code == (errors.EXIT_HOSTS_FAILED if status == "fail" else 0)


def test_judge_ibnetdiscover_against_a_plan(tmp_path, capsys):
    plan = tmp_path / "cabling.csv"
    plan.write_text(
        "fabric,tier,source_device,source_port,destination_device,destination_port,speed_gbps\n"
        "ib,node-leaf,o0001,HCA-1,ib-i1l1s01,11,100\n"
    )
    path = str(fixture("ibnetdiscover_iblinkinfo", "ibnetdiscover-p-edr-osc-subset-infiniband-exporter.txt"))
    assert cli("check", "judge", "ibnetdiscover", path, "--plan", str(plan), "--json") == errors.EXIT_HOSTS_FAILED
    checks = {c["check"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["cabling.links"]["measured"] == {"o0001 HCA-1/1 - ib-i1l1s01/11": "miscabled: goes to ib-i1l1s01/10"}
    assert checks["cabling.speed"]["status"] == "pass"


def test_judge_errors(tmp_path):
    wrong = str(fixture("ibstat", "p100-host-connectx3-fdr56-active.txt"))
    with pytest.raises(errors.UsageError, match="not nccl-tests output"):
        cli("check", "judge", "nccl", wrong)
    with pytest.raises(errors.UsageError, match="expected KEY=VALUE"):
        cli("check", "judge", "ibstat", wrong, "--expect", "rate")
    with pytest.raises(errors.UsageError, match="cannot read"):
        cli("check", "judge", "ibstat", str(tmp_path / "missing.txt"))


def test_expectation_values_are_typed_by_the_kinds_table():
    assert judges.expectation_from_text(
        "nvidia-smi-q", ["gpu_count=8", "cuda_version=12.10", "nvswitch=true", "product_name=NVIDIA H100 80GB HBM3"]
    ) == {"gpu_count": 8, "cuda_version": "12.10", "nvswitch": True, "product_name": "NVIDIA H100 80GB HBM3"}
    assert judges.expectation_from_text(
        "ib-sysfs",
        ["devices=mlx5_0, mlx5_1", 'counter_limits={"symbol_error": 5}', "rate=400", "link_layer=infiniband"],
    ) == {
        "devices": ["mlx5_0", "mlx5_1"],
        "counter_limits": {"symbol_error": 5},
        "rate": 400.0,
        "link_layer": "infiniband",
    }
    # A table where one is allowed: JSON first, then what the other type reads.
    assert judges.expectation_from_text("ibstat", ['rate={"mlx5_0": 400}', 'link_layer={"mlx5_0": "Ethernet"}']) == {
        "rate": {"mlx5_0": 400},
        "link_layer": {"mlx5_0": "Ethernet"},
    }


@pytest.mark.parametrize(
    "kind,expect,match",
    [
        # The case: topo -m reads no driver version, and xid no GPU count.
        (
            "nvidia-smi-topo",
            "driver_version=535",
            "driver_version: nvidia-smi-topo reads no such key; its keys: "
            "gpu_count, hca_gpus, nic_affinity_severity, nvlink_generation, nvlinks_per_gpu, nvswitch",
        ),
        ("xid", "gpu_count=8", "gpu_count: xid reads no such key; its keys: none"),
        ("kernel-log", "gpu_count=8", "gpu_count: xid reads no such key"),
        ("ibstat", "counter_limits={}", "counter_limits: ibstat reads no such key"),  # ibstat prints no counters
        ("nvidia-smi-q", "gpu_count=eight", "nvidia-smi-q: gpu_count must be int, got 'eight'"),
        ("nvidia-smi-q", "gpu_count=8.5", "gpu_count must be int"),
        ("nvidia-smi-q", "nvswitch=maybe", "nvswitch must be bool"),
        ("ibstat", "rate=fast", "rate must be float or dict"),
        ("nccl", "nvlink_generation", "expected KEY=VALUE"),
    ],
)
def test_expectations_a_kind_does_not_read_are_refused(kind, expect, match, capsys):
    path = str(fixture("nvidia-smi_topo", "a10-4gpu-pcie-no-nvlink-sys.txt"))
    assert main(["check", "judge", kind, path, "--expect", expect]) == errors.EXIT_USAGE
    assert match in " ".join(capsys.readouterr().err.split())


def test_a_key_read_only_with_another_is_refused_alone(capsys):
    path = str(fixture("nvidia-smi_topo", "a100-sxm-40g-8gpu-10nic-dgx-style-tabs.txt"))
    assert main(["check", "judge", "nvidia-smi-topo", path, "--expect", "nvlink_generation=3"]) == errors.EXIT_USAGE
    assert "nvidia-smi-topo: nvlink_generation is read only with nvswitch set" in capsys.readouterr().err
    assert (
        cli("check", "judge", "nvidia-smi-topo", path, "--expect", "nvlink_generation=3", "--expect", "nvswitch=true")
        == 0
    )


def test_programmatic_expectations_are_checked_too():
    text = load("nvidia-smi_topo", "a10-4gpu-pcie-no-nvlink-sys.txt")
    with pytest.raises(errors.UsageError, match="driver_version: nvidia-smi-topo reads no such key"):
        judges.judge_text("nvidia-smi-topo", text, {"driver_version": "535"})
    with pytest.raises(errors.UsageError, match="gpu_count must be int, got '4'"):
        judges.judge_text("nvidia-smi-topo", text, {"gpu_count": "4"})
    with pytest.raises(errors.UsageError, match="gpu_count must be int, got True"):
        judges.judge_text("nvidia-smi-topo", text, {"gpu_count": True})


def test_topology_checks_the_gpu_count():
    """gpu_count=8 on a topo -m of fewer GPUs fails (it passed when the key was ignored)."""
    name = "a10-4gpu-pcie-no-nvlink-sys.txt"
    text = load("nvidia-smi_topo", name)
    gpus = sum(1 for line in text.splitlines() if line.startswith("GPU"))  # the matrix rows, counted here
    assert gpus == 4
    path = str(fixture("nvidia-smi_topo", name))
    assert cli("check", "judge", "nvidia-smi-topo", path, "--expect", f"gpu_count={gpus}") == 0
    assert cli("check", "judge", "nvidia-smi-topo", path, "--expect", "gpu_count=8") == errors.EXIT_HOSTS_FAILED


def test_xid_and_its_old_name_kernel_log_judge_alike(capsys):
    path = str(fixture("kernel_log_xid", "xid13-xid109-dmesg-ctime-gpud.txt"))
    documents = []
    for kind in ("xid", "kernel-log"):
        cli("check", "judge", kind, path, "--json")
        documents.append(json.loads(capsys.readouterr().out))
    assert documents[0] == documents[1]
    assert documents[0]["kind"] == "xid"


def test_sysfs_tree_is_judged_from_a_directory(tmp_path, capsys):
    root = sysfs(tmp_path / "infiniband", {"mlx5_0": {}, "mlx5_1": {"rate": 200}})
    assert cli("check", "judge", "ib-sysfs", str(root), "--expect", "rate=200") == errors.EXIT_OK
    capsys.readouterr()
    code = cli("check", "judge", "ib-sysfs", str(root), "--expect", "rate=400", "--json")
    document = json.loads(capsys.readouterr().out)
    assert code == errors.EXIT_HOSTS_FAILED
    rate = {c["check"]: c for c in document["checks"]}["ib.rate"]
    assert rate["measured"] == {"mlx5_0/1": 400.0, "mlx5_1/1": 200.0}
    with pytest.raises(errors.UsageError, match="is not one"):
        cli("check", "judge", "ib-sysfs", str(fixture("ibstat", "p100-host-connectx3-fdr56-active.txt")))


def test_the_docs_list_every_kind_with_the_keys_its_judge_reads():
    page = (PROJECT / "docs" / "validation.md").read_text()
    start = page.index("<!-- check-judge-keys: generated from the judges' key tables -->\n")
    table = page[page.index("\n", start) + 1 : page.index("\n<!-- /check-judge-keys -->")]
    assert table == judges.keys_markdown(), "docs/validation.md's kinds and keys are stale: print keys_markdown() anew"
    kinds = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert kinds == set(judges.KINDS)
    assert {"nvidia-smi-query", "ib_write_bw", "xid", "ib-sysfs"} <= kinds  # the new kinds


def test_judge_help_lists_the_keys_of_every_kind(capsys):
    with pytest.raises(SystemExit):
        main(["check", "judge", "--help"])
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    topo = "nvidia-smi-topo: gpu_count (int), nvlinks_per_gpu (int), nvswitch (bool), nvlink_generation (int), "
    assert topo + "hca_gpus (dict), nic_affinity_severity (str)" in lines
    assert "xid: none" in lines
    assert sum(1 for line in lines if line.split(":")[0] in judges.KINDS) == len(judges.KINDS)
