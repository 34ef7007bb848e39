"""playbooks/validate.yml's GPUDirect RDMA runs, replayed: on a GPU node of a small topology reached
with the local connection (no containers), each rail's HCA is measured again from the memory of the
GPU the topology pairs with it (use_cuda), judged against the rail's line rate, beside the
host-memory runs, and the report's rail table names the pair a failure affects. Every verdict here
judges recorded outputs (tests/fixtures/ib_write_bw, real runs published with their sources) and says so.

The recordings: rail 0 (mlx5_0, 25 Gb/s, GPU0) the Tesla T4 GPUDirect client of nvidia-gpu-addon-operator
(23.2 Gb/s from GPU memory: passes); rail 1 (mlx5_1, GPU1) the gardenlinux ConnectX-7 client as its
host-memory run (368.5 Gb/s) and the A40 dma-buf client of nvidia-tools-image as its GPU run (181.5
Gb/s from GPU memory). That A40 run's link rate is not in its output: 400 Gb/s is this test's
topology, so the GPU run reaches 45% of line rate and fails while the host-memory run passes."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from clusterforge.cli import check as check_cli
from clusterforge.validation import report
from tests.integration.conftest import clusterforge
from tests.paths import PROJECT
from tests.unit.plugins.module_utils.samples import fixture

TOPOLOGY = """\
plugin: topology
cluster: {name: gdlab, domain: gd.lab.example}
sites: [{name: lab}]
node_types:
  gpu_node:
    gpu: {model: NVIDIA A40, count: 2}
    hcas:
      - {device: mlx5_0, netdev: ens1f0np0, pci: "0000:41:00.0", rate_gbps: 25, gpu: 0}
      - {device: mlx5_1, netdev: ens2f0np0, pci: "0000:e1:00.0", rate_gbps: 400, gpu: 1}
roles:
  compute: {node_type: gpu_node, count: 1, hostname: "gpu{index:02d}", fabrics: [compute]}
fabrics:
  compute:
    purpose: compute
    link_layer: ethernet
    topology: fat_tree
    switch: {model: SN5600, radix: 64, port_speed_gbps: 400}
addressing: {inband: 10.30.0.0/24}
"""
RECORDINGS = {
    "ib_write_bw_gpu.mlx5_0.txt": fixture("ib_write_bw", "roce-25g-t4-gpudirect-use-cuda-sweep-client-gpu-addon.txt"),
    "ib_write_bw.mlx5_1.txt": fixture("ib_write_bw", "roce-400g-cx7-gpudirect-dmabuf-client-gardenlinux.txt"),
    "ib_write_bw_gpu.mlx5_1.txt": fixture(
        "ib_write_bw", "roce-a40-gpudirect-dmabuf-16qp-client-nvidia-tools-image.txt"
    ),
}
LOCAL = {
    "ansible_connection": "local",
    "ansible_python_interpreter": sys.executable,
    "ansible_become": "false",
}


def _validate(tmp_path, *extra: str):
    topology = tmp_path / "gdlab.topology.yml"
    topology.write_text(TOPOLOGY)
    replay = tmp_path / "replay" / "gpu01"
    replay.mkdir(parents=True)
    for name, source in RECORDINGS.items():
        shutil.copy(source, replay / name)
    reports = tmp_path / "reports"
    args = [f"{key}={value}" for key, value in LOCAL.items()] + [
        f"clusterforge_validation_replay_dir={replay}",
        f"clusterforge_report_dir={reports}",
        "clusterforge_validation_run_id=gpudirect",
        f"clusterforge_validation_textfile_dir={tmp_path}/no-textfile-dir",
        "clusterforge_validation_ib_gid_index=3",  # RoCE ports: measured with a GID index
        "clusterforge_validation_gpudirect_via=dmabuf",
        *extra,
    ]
    done = clusterforge(
        "run",
        str(PROJECT / "playbooks" / "validate.yml"),
        "-i",
        str(topology),
        *(part for arg in args for part in ("-e", arg)),
        env={"CLUSTERFORGE_STATE_DIR": str(tmp_path / "state")},
        check=False,
    )
    return done, reports / "gpudirect"


def _bandwidth(run_dir) -> dict[str, dict]:
    document = json.loads((run_dir / "gpu01.json").read_text())
    runs = [record for record in document["results"] if record["module"] == "ib_bandwidth_check"]
    return {
        check["check"]: {**check, "use_cuda": run["use_cuda"], "source": run["source"]}
        for run in runs
        for check in run["checks"]
    }


def test_each_rail_is_measured_from_its_gpu_s_memory_and_judged_against_line_rate(tmp_path):
    done, run_dir = _validate(tmp_path)
    log = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 2, log
    assert "hosts: 1  failed: 1  unreachable: 0" in done.stdout, log

    checks = _bandwidth(run_dir)
    found = {name: (c["status"], c["use_cuda"], c["source"]) for name, c in checks.items()}
    assert found == {
        # The host-memory runs stay: mlx5_0 has no recording (no hardware), mlx5_1 reaches line rate.
        "ib.write_bw.mlx5_0": ("skipped", None, "replay"),
        "ib.write_bw.mlx5_1": ("pass", None, "replay"),
        "ib.write_bw_warnings.mlx5_1": ("pass", None, "replay"),
        # The GPUDirect runs, each with its rail's GPU (the topology's hca gpu), held to GPU memory.
        "ib.write_bw_gpu.mlx5_0": ("pass", 0, "replay"),
        "ib.write_bw_gpu_memory.mlx5_0": ("pass", 0, "replay"),
        "ib.write_bw_gpu_warnings.mlx5_0": ("pass", 0, "replay"),
        "ib.write_bw_gpu.mlx5_1": ("fail", 1, "replay"),
        "ib.write_bw_gpu_memory.mlx5_1": ("pass", 1, "replay"),
        "ib.write_bw_gpu_warnings.mlx5_1": ("pass", 1, "replay"),
    }
    assert checks["ib.write_bw_gpu.mlx5_1"]["message"] == (
        "181.5 Gb/s on GPU memory (NVIDIA A40) = 45% of 400 Gb/s (floor 90%)"
    )
    assert checks["ib.write_bw_gpu_memory.mlx5_0"]["message"].startswith("GPU memory (Tesla T4)")

    # The report: the rail table shows each pair's GPU-memory bandwidth, labelled replayed.
    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    check_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    assert check_cli.run(parser.parse_args(["report", str(run_dir), "-o", str(out)])) == 0
    document = json.loads((out / "report.json").read_text())
    (node,) = document["nodes"]
    rails = {row["pair"]: row for row in node["gpudirect_rails"]}
    assert set(rails) == {"mlx5_0 - GPU0", "mlx5_1 - GPU1"}
    first, second = rails["mlx5_0 - GPU0"]["checks"]["gpu_bandwidth"], rails["mlx5_1 - GPU1"]["checks"]["gpu_bandwidth"]
    assert (first["status"], second["status"]) == ("pass", "fail")
    assert {first["origin"], second["origin"]} == {report.verdicts.REPLAYED}
    assert rails["mlx5_1 - GPU1"]["affects"].startswith("mlx5_1 - GPU1")
    assert "GPU-memory bandwidth: 181.5 Gb/s on GPU memory" in rails["mlx5_1 - GPU1"]["affects"]
    assert rails["mlx5_1 - GPU1"]["origin"] == report.verdicts.REPLAYED


def test_the_gpudirect_runs_can_be_turned_off(tmp_path):
    done, run_dir = _validate(tmp_path, "clusterforge_validation_ib_gpudirect=false")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert sorted(_bandwidth(run_dir)) == ["ib.write_bw.mlx5_0", "ib.write_bw.mlx5_1", "ib.write_bw_warnings.mlx5_1"]
