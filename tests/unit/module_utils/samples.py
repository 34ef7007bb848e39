"""Where the captured outputs live, and plugins/module_utils imported the way Ansible does it.

Ansible merges a project's module_utils directory into the ``ansible.module_utils`` namespace when it
builds a module payload, so the files import each other with ``from ansible.module_utils.checks
import ...``. Appending the directory to that package's search path gives the tests the same view.
"""

from __future__ import annotations

from pathlib import Path

import ansible.module_utils
import pytest

REPO = Path(__file__).resolve().parents[3]
MODULE_UTILS = REPO / "plugins" / "module_utils"
# CI clones the repository with shared/ beside it; the real captured outputs live there.
SHARED_FIXTURES = (REPO / ".." / "shared" / "fixtures").resolve()
LOCAL_FIXTURES = REPO / "tests" / "fixtures"

# Tests over the shared captures skip (rather than error) in a checkout without shared/ beside it.
requires_shared = pytest.mark.skipif(not SHARED_FIXTURES.is_dir(), reason=f"no shared fixtures at {SHARED_FIXTURES}")

if str(MODULE_UTILS) not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(MODULE_UTILS))


def fixture_files(kind: str) -> list[Path]:
    """Every captured output of one kind, shared and local, sorted by name."""
    files = [*(SHARED_FIXTURES / kind).glob("*.txt"), *(LOCAL_FIXTURES / kind).glob("*.txt")]
    files += (LOCAL_FIXTURES / kind).glob("*.xml")
    return sorted(files, key=lambda p: p.name)


def fixture(kind: str, name: str) -> Path:
    for root in (SHARED_FIXTURES, LOCAL_FIXTURES):
        path = root / kind / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"no fixture {kind}/{name} under {SHARED_FIXTURES} or {LOCAL_FIXTURES}")


def read(path: Path) -> str:
    # newline="" keeps CRLF files byte for byte; the parsers must cope with \r themselves.
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def load(kind: str, name: str) -> str:
    return read(fixture(kind, name))


def names(kind: str) -> set[str]:
    return {p.name for p in fixture_files(kind)}
