from __future__ import annotations

import pytest
from ansible.module_utils import gpu_judge
from ansible.module_utils.dcgmi import DcgmiParseError, parse_dcgmi_diag
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, WARN, ToolFailed, overall

from .samples import load, names

KIND = "dcgmi_diag"
DEPLOYMENT = [
    "Blacklist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
    "Environment Variables", "Page Retirement", "Graphics Processes", "Inforom",
]  # fmt: skip

# tests in order, categories, failed tests, overall verdict
TABLE = {
    "r1-deployment-fail-deepops.txt": (
        DEPLOYMENT, {"Deployment"},
        ("Persistence Mode", "Environment Variables", "Page Retirement", "Graphics Processes", "Inforom"), FAIL),
    "r1-deployment-only-pass-deepops.txt": (DEPLOYMENT, {"Deployment"}, (), PASS),
    "r4-8gpu-legacy-format-pass-gcm.txt": (
        [*DEPLOYMENT[:6], "Page Retirement/Row Remap", *DEPLOYMENT[7:], "PCIe", "GPU Memory", "Diagnostic",
         "Pulse Test", "SM Stress", "Targeted Stress", "Targeted Power", "Memory Bandwidth", "Memtest"],
        {"Deployment", "Integration", "Hardware", "Stress"}, (), PASS),
}  # fmt: skip


def test_table_covers_every_fixture():
    assert set(TABLE) == names(KIND)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_parse_and_judge(name: str):
    tests, categories, failed, verdict = TABLE[name]
    diag = parse_dcgmi_diag(load(KIND, name))
    assert [t.name for t in diag.tests] == tests
    assert {t.category for t in diag.tests} == categories
    assert diag.failed == failed
    results = gpu_judge.judge_dcgmi(diag)
    assert overall(results) == verdict
    assert [r.check for r in results if r.status == FAIL] == [f"dcgmi.{n}" for n in failed]


def test_r4_results_carry_the_gpu_detail():
    diag = parse_dcgmi_diag(load(KIND, "r4-8gpu-legacy-format-pass-gcm.txt"))
    memtest = diag.by_name()["Memtest"]
    assert (memtest.category, memtest.result, memtest.details) == ("Stress", "Pass", ["All"])


def test_required_test_missing_fails():
    # The truncated r1 pass output has no Hardware section: requiring Memtest catches that.
    diag = parse_dcgmi_diag(load(KIND, "r1-deployment-only-pass-deepops.txt"))
    results = gpu_judge.judge_dcgmi(diag, {"required_tests": ["Memtest"]})
    assert results[-1].check == "dcgmi.Memtest" and results[-1].status == FAIL


NEWER = """\
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.5                                          |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPUs: 0, 1                              |
|                           | Fail - GPU: 2                                  |
| Warning                   | GPU 2 Error using CUDA API cudaMalloc          |
|                           | (out of memory)                                |
| Diagnostic                | Skip - All                                     |
| Pulse Test                | Pass - All                                     |
| Warning                   | GPU 0 Clocks are being throttled               |
+---------------------------+------------------------------------------------+
"""


def test_continuation_and_warning_rows():
    """Layout rules of the newer tables, on a table built from those rules (no capture of them yet)."""
    diag = parse_dcgmi_diag(NEWER)
    tests = diag.by_name()
    assert diag.metadata == {"DCGM Version": "3.3.5"}
    assert (tests["GPU Memory"].result, tests["GPU Memory"].details) == ("Fail", ["GPUs: 0, 1", "GPU: 2"])
    assert tests["GPU Memory"].messages == ["Warning: GPU 2 Error using CUDA API cudaMalloc (out of memory)"]
    assert tests["Pulse Test"].result == "Warn"
    verdicts = {r.check: r.status for r in gpu_judge.judge_dcgmi(diag)}
    assert verdicts == {
        "dcgmi.Denylist": PASS,
        "dcgmi.GPU Memory": FAIL,
        "dcgmi.Diagnostic": SKIPPED,
        "dcgmi.Pulse Test": WARN,
    }


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "no test results"),
        ("| a | b | c |\n", "two cells"),
        ("|                           | Fail - GPU: 2 |\n", "without a test above"),
    ],
)
def test_malformed(text: str, match: str):
    with pytest.raises(DcgmiParseError, match=match):
        parse_dcgmi_diag(text)


def test_dcgmi_error_is_a_failed_run():
    error = "Error: Unable to complete diagnostic for group 2147483647. Return: (-3) bad parameter passed.\n"
    with pytest.raises(ToolFailed, match="dcgmi reported an error: Error: Unable to complete diagnostic"):
        parse_dcgmi_diag(error)
