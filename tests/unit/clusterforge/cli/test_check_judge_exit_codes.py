"""`clusterforge check judge`: a run that stopped early is a fail (exit 2) quoting its reason; output
that is not the tool's is unreadable input (exit 4); numbers are finite and --json is strict JSON."""

from __future__ import annotations

import json
import math

import pytest

from clusterforge import cli, errors
from clusterforge.validation import judges
from tests.unit.plugins.module_utils.samples import fixture


def judge(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["check", "judge", *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as strict consumers (JavaScript, jq) do."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "kind,name,quoted",
    [
        (
            "nccl",
            "nccl_all_reduce_perf/h100-8gpu-cuda-failure-system-not-yet-initialized-nccl-tests-264.txt",
            "Test CUDA failure common.cu:941 'system not yet initialized'",
        ),
        (
            "nccl",
            "nccl_all_reduce_perf/rtx-a6000-2node-mpirun-nccl-internal-error-nccl-tests-219.txt",
            "Test NCCL failure common.cu:959 'internal error",
        ),
        ("ib_write_bw", "ib_write_bw/couldnt-connect-socket-client-perftest-228.txt", "Couldn't connect to"),
        (
            "nvidia-smi-q",
            "nvidia-smi_query/driver-not-loaded-nvidia-smi-has-failed.txt",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
        ),
        ("ibstat", "ibstat/a100-hdr200-azure-ibpanic-exit255-gpud.txt", "ibpanic: [1400444] main: stat of IB device"),
    ],
)
def test_a_run_that_stopped_early_fails_with_its_reason(capsys, kind, name, quoted):
    code, output = judge(capsys, kind, str(fixture(*name.split("/"))), "--json")
    assert code == errors.EXIT_HOSTS_FAILED
    document = strict_json(output)
    assert document["status"] == "fail"
    (check,) = document["checks"]
    assert check["check"] == judges.KINDS[kind].run_check
    assert quoted in check["message"] and check["message"].startswith(name.split("/")[1])


@pytest.mark.parametrize("text", ["", "bash: all_reduce_perf: command not found\n", "CA 'mlx5_0'\n\tCA type: MT4124\n"])
def test_output_that_is_not_the_tools_is_unreadable_input(capsys, tmp_path, text):
    path = tmp_path / "out.txt"
    path.write_text(text)
    code, output = judge(capsys, "nccl", str(path))
    assert code == errors.EXIT_USAGE
    assert "not nccl-tests output" in output and "Traceback" not in output


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_expectations_are_refused(capsys, value):
    path = str(fixture("nccl_all_reduce_perf", "h100-8gpu-single-node-bitdeer.txt"))
    code, output = judge(capsys, "nccl", path, "--expect", f"expected_busbw={value}")
    assert code == errors.EXIT_USAGE
    assert "expected_busbw" in output and "finite" in output


@pytest.mark.parametrize("expect", ["expected_busbw=0", "expected_busbw=-5", "rails=0", "nic_rate_gbps=0"])
def test_a_zero_threshold_is_refused_with_the_allowed_range(capsys, expect):
    """A zero reference used to raise ZeroDivisionError, then turned the busbw check into a skip
    and the run into a pass; it is now refused, naming the key and what it must be."""
    path = str(fixture("nccl_all_reduce_perf", "h100-2node-16gpu-ib-bitdeer.txt"))
    args = ["--expect", "nic_rate_gbps=400", "--expect", "rails=8", "--expect", expect, "--json"]
    code, output = judge(capsys, "nccl", path, *args)
    key, _, _value = expect.partition("=")
    assert code == errors.EXIT_USAGE
    assert f"{key} must be " in output and ("above 0" in output or "at least 1" in output)
    assert "Traceback" not in output


def test_ib_write_bw_zero_rate_is_named_not_divided_by(capsys):
    path = str(fixture("ib_write_bw", "roce-100g-4qp-rdma-cm-client-oci.txt"))
    code, output = judge(capsys, "ib_write_bw", path, "--expect", "rate_gbps=0", "--json")
    checks = {c["check"]: c for c in strict_json(output)["checks"]}
    assert code == errors.EXIT_OK and checks["ib.write_bw"]["status"] == "skipped"
    assert "rate_gbps must be above 0, got 0" in checks["ib.write_bw"]["message"]


def test_json_output_never_carries_nan(capsys, monkeypatch):
    """Were a judge ever to measure NaN, --json refuses to print it rather than write invalid JSON."""
    verdicts = judges.load("verdicts")
    monkeypatch.setattr(judges, "judge_text", lambda *args, **kwargs: [verdicts.result("x", "pass", math.nan, 1, "m")])
    path = str(fixture("nccl_all_reduce_perf", "h100-8gpu-single-node-bitdeer.txt"))
    with pytest.raises(ValueError, match="not JSON compliant"):
        cli.main(["check", "judge", "nccl", path, "--json"])
    assert "NaN" not in capsys.readouterr().out


def test_escape_sequences_in_names_do_not_reach_the_terminal(capsys, tmp_path):
    """A file name (or a tool's message) with a terminal escape is shown without it: ESC [2J would
    clear the operator's screen."""
    source = fixture("nccl_all_reduce_perf", "h100-8gpu-single-node-bitdeer.txt")
    path = tmp_path / "out\x1b[2J.txt"
    path.write_text(source.read_text())
    code, output = judge(capsys, "nccl", str(path))
    assert code == errors.EXIT_OK
    assert "\x1b" not in output and "out.txt" in output, repr(output)
