"""Write a sample validation run and its report from the test fixtures, for a look in a browser.

    python tools/sample_report.py OUTDIR        # then: tools/report_screenshot.sh OUTDIR/report/report.html

Two DGX H100 of the SuperPOD example (inventories/examples/h100-superpod.topology.yml): dgx001
with the throttling H100s of a real nvidia-smi -q, the ports of a real ibstat (three down) and a
made-up rail HCA in Polling; dgx040 with another real nvidia-smi -q; head01 without hardware; and
the pair dgx001+dgx040 failed, unresolved. Judged with the nodes' own judges, and marked replayed
from recorded outputs as every such run is; written to
OUTDIR/<run id> (the run) and OUTDIR/report (report.json, junit.xml, report.html).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from clusterforge.validation import report  # noqa: E402
from tests.unit.clusterforge.validation.test_report import host_file, judged, record  # noqa: E402

RUN_ID = "20250102T000000Z"
TOPOLOGY = ROOT / "inventories" / "examples" / "h100-superpod.topology.yml"


def main(out: Path) -> Path:
    run_dir = out / RUN_ID
    run_dir.mkdir(parents=True, exist_ok=True)
    gpu = judged("nvidia-smi-q", "nvidia-smi_query/h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt", {"gpu_count": 8})
    gpu2 = judged("nvidia-smi-q", "nvidia-smi_query/h100-8gpu-nvidia-smi-q-535.183.01-gpud.txt", {"gpu_count": 8})
    ib = judged("ibstat", "ibstat/h100-ndr400-ib-active-eth-down-disabled-gpud.txt", {"rate": 400})
    polling = {
        "check": "ib.phys_state",
        "status": "fail",
        "measured": {"mlx5_0/1": "LinkUp", "mlx5_3/1": "Polling"},
        "expected": "LinkUp",
        "message": "mlx5_3/1: physical state Polling",
    }
    no_hardware = {"check": "gpu.count", "status": "skipped", "message": "skipped: no hardware"}
    # Judged from recordings, as the modules' replay mode does: the report says so on every node.
    replay = {"source": "replay"}
    dgx001 = [record("gpu_check", gpu, **replay), record("ib_check", [polling], **replay)]
    dgx001.append(record("ib_check", ib, **replay))
    host_file(run_dir, "dgx001", dgx001, "dgx_h100")
    host_file(run_dir, "dgx040", [record("gpu_check", gpu2, **replay)], "dgx_h100")
    host_file(run_dir, "head01", [record("gpu_check", [no_hardware], **replay)], "mgmt_server")
    pair = ["dgx001", "dgx040"]
    verdict = {"culprits": [], "cleared": [], "unresolved": [pair], "untested": []}
    run = {"schema": report.RUN_SCHEMA, "run_id": RUN_ID, "pairs": {"pairs": [pair]}, "failed_pairs": [pair]}
    (run_dir / "_run.json").write_text(json.dumps({**run, "verdict": verdict}))
    run_ = report.load_run(run_dir, topology=os.path.relpath(TOPOLOGY))
    written = report.write_report(run_, out / "report", force=True)
    return written["html"]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(main(Path(sys.argv[1])))
