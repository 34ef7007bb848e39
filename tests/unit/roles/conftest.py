"""Fixtures of the role unit tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.paths import PROJECT
from tests.unit.roles.monitoring.tools import SETUP, TOOLS


@pytest.fixture(scope="session")
def tools() -> dict[str, Path]:
    """promtool and amtool; fetched once by the project's own script when they are missing."""
    wanted = {name: TOOLS / name for name in ("promtool", "amtool")}
    if not all(path.is_file() for path in wanted.values()):
        done = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.fail(
                f"{SETUP.relative_to(PROJECT)} could not fetch promtool and amtool:\n{done.stdout}{done.stderr}"
            )
    missing = [str(path) for path in wanted.values() if not path.is_file()]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run {SETUP.relative_to(PROJECT)}")
    return wanted
