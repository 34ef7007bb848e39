"""`clusterforge check judge` on real outputs of faults that once passed or could not be judged: a
GPU lost without an Xid, a perftest run that aborted after its first rows, and a one-shot
--query-gpu capture without an index column. The verdict and its reason, as a user sees them."""

from __future__ import annotations

import json

import pytest

from clusterforge import cli, errors
from tests.unit.plugins.module_utils.samples import fixture


def judge(capsys, kind: str, name: str, *expect: str) -> tuple[int, dict]:
    args = [a for e in expect for a in ("--expect", e)]
    code = cli.main(["check", "judge", kind, str(fixture(*name.split("/"))), "--json", *args])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "name,names",
    [
        ("l40-fallen-off-bus-multiline-no-xid-570-nvsentinel-155.txt", "GPU 0000:b3:00.0 fell off the bus"),
        ("gpu-at-has-fallen-off-the-bus-old-driver-bumblebee-554.txt", "GPU 0000:01:00.0 fell off the bus"),
        (
            "two-gpus-rminitadapter-failed-ibm-cloud-gpu-operator-649.txt",
            "GPU 0000:04:01.0 failed to initialise (RmInitAdapter), GPU 0000:04:02.0",
        ),
    ],
)
def test_a_lost_gpu_without_an_xid_line_fails(capsys, name: str, names: str):
    code, document = judge(capsys, "xid", f"kernel_log_xid/{name}")
    assert code == errors.EXIT_HOSTS_FAILED and document["status"] == "fail"
    (check,) = document["checks"]
    assert check["check"] == "gpu.xid" and names in check["message"]


def test_a_perftest_run_that_aborted_after_its_rows_fails(capsys):
    """381 Gb/s reached at 64 KiB would pass a 400 Gb/s port: the sweep then died, so the run fails."""
    name = "ib_write_bw/roce-h200-gke-sweep-completion-error-after-65536-dranet.txt"
    code, document = judge(capsys, "ib_write_bw", name, "rate_gbps=400")
    assert code == errors.EXIT_HOSTS_FAILED and document["status"] == "fail"
    (check,) = document["checks"]
    assert check["check"] == "ib.write_bw"
    assert check["message"] == (
        "roce-h200-gke-sweep-completion-error-after-65536-dranet.txt line 41: the test failed on mlx5_3 after its"
        " 65536-byte row (381.41 Gb/s average so far): Completion with error at client;"
        " Failed status 10: wr_id 0 syndrom 0x88"
    )


@pytest.mark.parametrize("want,code,status", [(2, 0, "pass"), (8, errors.EXIT_HOSTS_FAILED, "fail")])
def test_a_one_shot_query_gpu_csv_without_index_is_counted(capsys, want: int, code: int, status: str):
    name = "nvidia-smi_query/2gpu-gtx1080ti-gtx1060-query-gpu-csv-one-shot-no-index-bpytop-26.txt"
    got, document = judge(capsys, "nvidia-smi-query", name, f"gpu_count={want}")
    assert (got, document["status"]) == (code, status)
    count = next(c for c in document["checks"] if c["check"] == "gpu.count")
    assert (count["measured"], count["expected"]) == (2, want)


def test_a_looped_query_gpu_csv_without_index_still_cannot_be_counted(capsys):
    name = "nvidia-smi_query/24gb-gpu-query-gpu-timestamp-pstate-mem-csv-lms.txt"
    code = cli.main(["check", "judge", "nvidia-smi-query", str(fixture(*name.split("/"))), "--expect", "gpu_count=1"])
    assert code == errors.EXIT_USAGE
    assert "a looped capture (-l/-lms)" in capsys.readouterr().err
