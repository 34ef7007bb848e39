"""tests/run_all.sh, the README's test command, run against stand-in tools.

Every tool it calls (the linters, clusterforge, pytest, molecule) is replaced on PATH by a script
that exits as the test says, and the checkout's molecule/ directory by two scenarios, so these tests
check the runner's own logic: that any failed job fails the run, pytest's exit 5 ("no tests") too,
and that the end of the output says why, since CI pages keep only the tail. The stand-in molecule
prints a real Molecule log of a failed scenario (tests/fixtures/molecule_log, each with its .source).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import FIXTURES, PROJECT

PASSING_TOOLS = ("ruff", "yamllint", "ansible-lint", "ansible-playbook", "clusterforge", "molecule")
PYTEST_FAILURE = "FAILED tests/test_probe.py::test_that_failed - AssertionError: probe"


@pytest.fixture
def checkout(tmp_path):
    """A copy of the runner beside two Molecule scenarios, one of them marked on demand."""
    root = tmp_path / "checkout"
    (root / "tests").mkdir(parents=True)
    for script in ("run_all.sh", "why_failed.awk"):
        shutil.copy(PROJECT / "tests" / script, root / "tests" / script)
    for name, header in (("alpha", ""), ("slow", "# clusterforge: on-demand\n")):
        scenario = root / "molecule" / name
        scenario.mkdir(parents=True)
        (scenario / "molecule.yml").write_text(f"{header}---\ndriver:\n  name: docker\n")
    # The newest-core job's script, which the runner calls by its path in the checkout.
    (root / ".ci").mkdir()
    (root / ".ci" / "newest-core.sh").write_text("exit 0\n")
    return root


def stand_in_tools(bin_dir: Path, *, pytest_rc: int, molecule_rc: int = 0, molecule_log: str = "") -> None:
    """molecule_log: a file of tests/fixtures/molecule_log the stand-in molecule prints."""
    bin_dir.mkdir()
    scripts = {tool: "exit 0" for tool in PASSING_TOOLS}
    log = FIXTURES / "molecule_log" / molecule_log if molecule_log else None
    scripts["molecule"] = f'echo "molecule $*"; {f"cat {log}; " if log else ""}exit {molecule_rc}'
    scripts["pytest"] = (
        "echo 'a long log'; "
        "echo '=========================== short test summary info ============================'; "
        f"echo '{PYTEST_FAILURE}'; exit {pytest_rc}"
    )
    for tool, body in scripts.items():
        path = bin_dir / tool
        path.write_text(f"#!/usr/bin/env bash\n{body}\n")
        path.chmod(0o755)


def run_all(checkout: Path, bin_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("CLUSTERFORGE_ON_DEMAND", None)
    return subprocess.run(
        ["bash", str(checkout / "tests" / "run_all.sh")], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_run_where_every_job_passes_says_so_and_exits_0(checkout, tmp_path):
    stand_in_tools(tmp_path / "bin", pytest_rc=0)
    result = run_all(checkout, tmp_path / "bin")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("==> all tests passed: pytest newest-core alpha")
    assert "molecule test -s slow: on demand, not run" in result.stdout


def after_last(marker: str, output: str) -> list[str]:
    """The non-empty lines that follow the last line starting with marker."""
    lines = output.rstrip().splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith(marker))
    return [line for line in lines[start:] if line]


@pytest.mark.parametrize("pytest_rc", [1, 5], ids=["a failed test", "no tests collected"])
def test_a_failed_pytest_fails_the_run_and_its_summary_ends_the_output(checkout, tmp_path, pytest_rc):
    stand_in_tools(tmp_path / "bin", pytest_rc=pytest_rc)
    result = run_all(checkout, tmp_path / "bin")
    assert result.returncode == 1
    assert after_last("==> why", result.stdout) == [
        "==> why pytest failed (from its log, printed in full above)",
        "=========================== short test summary info ============================",
        PYTEST_FAILURE,
        "==> failed: pytest",
    ]


def plain(text: str) -> str:
    """Without the ANSI colours Molecule writes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def why_section(output: str) -> list[str]:
    return [plain(line) for line in after_last("==> why", output)]


def test_a_failed_verifier_is_shown_by_its_failed_testinfra_session_not_the_destroy_after_it(checkout, tmp_path):
    stand_in_tools(tmp_path / "bin", pytest_rc=0, molecule_rc=1, molecule_log="pyxis-verify-failed-then-destroy.txt")
    result = run_all(checkout, tmp_path / "bin")
    assert result.returncode == 1
    why = why_section(result.stdout)
    assert why[0] == "==> why alpha failed (from its log, printed in full above)"
    assert why[1].endswith("============================= test session starts")
    text = "\n".join(why)
    for expected in (
        "E       AssertionError: assert {'enroot+caps...mix2t64', ...} >= {'enroot',",
        "tests/test_pyxis_standin.py::test_the_enroot_standin_packages_are_installe",
        "======================== 1 failed, 16 passed in 18.11s",
        "CRITICAL Verifier tests failed",
    ):
        assert expected in text, expected
    # The destroy's tasks come after the failure in the log; only the scenario's recap is repeated.
    assert "Wait for instance(s) deletion" not in text
    assert why[-2].startswith("pyxis") and "actions=3" in why[-2]
    assert why[-1] == "==> failed: alpha"


def test_a_failed_ansible_task_is_shown_from_its_task_line_with_molecule_s_verdict(checkout, tmp_path):
    stand_in_tools(tmp_path / "bin", pytest_rc=0, molecule_rc=2, molecule_log="dcgm-check-failed.txt")
    result = run_all(checkout, tmp_path / "bin")
    assert result.returncode == 1
    why = why_section(result.stdout)
    assert why[1].strip().startswith("│ TASK [dcgm : Validating arguments against arg spec 'main'")
    text = "\n".join(why)
    for expected in (
        "fatal: [instance-dcgm]: FAILED!",
        "'__dcgm_repo_url' is undefined",
        "CRITICAL Ansible return code was 2, command was: ansible-playbook --check",
    ):
        assert expected in text, expected
    # Not the plays of the steps that passed before it (create, prepare).
    assert "PLAY RECAP" not in text and "'glob failed" not in text
    assert why[-1] == "==> failed: alpha"


def test_a_scenario_log_with_no_session_or_task_that_failed_ends_with_its_last_lines(checkout, tmp_path):
    stand_in_tools(tmp_path / "bin", pytest_rc=0, molecule_rc=2)
    result = run_all(checkout, tmp_path / "bin")
    assert result.returncode == 1
    assert after_last("==> why", result.stdout) == [
        "==> why alpha failed (from its log, printed in full above)",
        "(...)",
        "molecule test -s alpha",
        "==> failed: alpha",
    ]
