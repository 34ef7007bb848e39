"""Shared fixtures: the project root and a private clusterforge state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project() -> Path:
    return PROJECT


@pytest.fixture
def state_dir(tmp_path, monkeypatch) -> Path:
    """Keep lab inventories and run directories of a test out of the user's state."""
    path = tmp_path / "state"
    monkeypatch.setenv("CLUSTERFORGE_STATE_DIR", str(path))
    return path
