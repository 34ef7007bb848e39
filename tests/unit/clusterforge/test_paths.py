from __future__ import annotations

import pytest

from clusterforge import paths
from clusterforge.errors import UsageError


def test_project_found_from_a_subdirectory(project, monkeypatch):
    monkeypatch.delenv("CLUSTERFORGE_PROJECT_DIR", raising=False)
    monkeypatch.chdir(project / "roles")
    assert paths.project_dir() == project


def test_explicit_project_dir_must_hold_the_project(tmp_path):
    with pytest.raises(UsageError, match="is not a clusterforge project directory"):
        paths.project_dir(tmp_path)


def test_state_dir_follows_the_environment(state_dir):
    assert paths.state_dir() == state_dir
    assert state_dir.is_dir()
