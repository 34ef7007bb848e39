"""tests/run_all.sh, the README's test command, run against stand-in tools.

Every tool it calls (the linters, clusterforge, pytest, molecule) is replaced on PATH by a script
that exits as the test says, and the checkout's molecule/ directory by two scenarios, so these tests
check the runner's own logic: that any failed job fails the run, pytest's exit 5 ("no tests") too,
and that the end of the output says why, since CI pages keep only the tail.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import PROJECT

PASSING_TOOLS = ("ruff", "yamllint", "ansible-lint", "ansible-playbook", "clusterforge", "molecule")
PYTEST_FAILURE = "FAILED tests/test_probe.py::test_that_failed - AssertionError: probe"


@pytest.fixture
def checkout(tmp_path):
    """A copy of the runner beside two Molecule scenarios, one of them marked on demand."""
    root = tmp_path / "checkout"
    (root / "tests").mkdir(parents=True)
    shutil.copy(PROJECT / "tests" / "run_all.sh", root / "tests" / "run_all.sh")
    for name, header in (("alpha", ""), ("slow", "# clusterforge: on-demand\n")):
        scenario = root / "molecule" / name
        scenario.mkdir(parents=True)
        (scenario / "molecule.yml").write_text(f"{header}---\ndriver:\n  name: docker\n")
    # The newest-core job's script, which the runner calls by its path in the checkout.
    (root / ".ci").mkdir()
    (root / ".ci" / "newest-core.sh").write_text("exit 0\n")
    return root


def stand_in_tools(bin_dir: Path, *, pytest_rc: int, molecule_rc: int = 0) -> None:
    bin_dir.mkdir()
    scripts = {tool: "exit 0" for tool in PASSING_TOOLS}
    scripts["molecule"] = f'echo "molecule $*"; echo "scenario ended"; exit {molecule_rc}'
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
        "==> why pytest failed (the end of its log, printed in full above)",
        "=========================== short test summary info ============================",
        PYTEST_FAILURE,
        "==> failed: pytest",
    ]


def test_a_failed_scenario_prints_the_end_of_its_log_last(checkout, tmp_path):
    stand_in_tools(tmp_path / "bin", pytest_rc=0, molecule_rc=2)
    result = run_all(checkout, tmp_path / "bin")
    assert result.returncode == 1
    assert after_last("==> why", result.stdout) == [
        "==> why alpha failed (the end of its log, printed in full above)",
        "molecule test -s alpha",
        "scenario ended",
        "==> failed: alpha",
    ]
