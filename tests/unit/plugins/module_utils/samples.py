"""Where the captured outputs live, and plugins/module_utils imported the way Ansible does it.

Ansible merges a project's module_utils directory into the ``ansible.module_utils`` namespace when it
builds a module payload, so the files import each other with ``from ansible.module_utils.verdicts
import ...``. Appending the directory to that package's search path gives the tests the same view.
"""

from __future__ import annotations

from pathlib import Path

import ansible.module_utils

# Real captured outputs (FIXTURES), each with a .source file naming where it was published. The
# project reads them only from there: a user's clone has nothing beside it.
from tests.paths import FIXTURES, PROJECT

MODULE_UTILS = PROJECT / "plugins" / "module_utils"

if str(MODULE_UTILS) not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(MODULE_UTILS))


def fixture_files(kind: str) -> list[Path]:
    """Every captured output of one kind, sorted by name."""
    return sorted([*(FIXTURES / kind).glob("*.txt"), *(FIXTURES / kind).glob("*.xml")], key=lambda p: p.name)


def fixture(kind: str, name: str) -> Path:
    path = FIXTURES / kind / name
    if not path.is_file():
        raise FileNotFoundError(f"no fixture {kind}/{name} under {FIXTURES}")
    return path


def read(path: Path) -> str:
    # newline="" keeps CRLF files byte for byte; the parsers must cope with \r themselves.
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def load(kind: str, name: str) -> str:
    return read(fixture(kind, name))


def names(kind: str) -> set[str]:
    return {p.name for p in fixture_files(kind)}
