"""The project is self-contained: a user's clone has nothing beside it, so no file the project
ships may read the steering repository's shared/ folder (fixtures are copied into tests/fixtures
with their .source files)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.paths import PROJECT

REPO = PROJECT
# Built from pieces so this file does not match itself.
OUTSIDE = re.compile(r"\.\./" + "shared" + r"\b|['\"]" + "shared" + r"['\"]\s*/\s*['\"]fixtures")


def _project_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return [REPO / name.decode() for name in listed if name]


def test_no_file_refers_to_a_shared_folder_outside_the_project():
    offenders = []
    for path in _project_files():
        if not path.is_file() or path.suffix in {".png", ".svg", ".gz"}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [
            f"{path.relative_to(REPO)}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), 1)
            if OUTSIDE.search(line)
        ]
    assert not offenders, "files that reach outside the project:\n" + "\n".join(offenders)


def test_every_fixture_has_its_source():
    fixtures = REPO / "tests" / "fixtures"
    outputs = [p for p in fixtures.rglob("*") if p.suffix in {".txt", ".xml"}]
    assert outputs
    missing = [str(p.relative_to(REPO)) for p in outputs if not p.with_suffix(".source").is_file()]
    assert not missing, f"fixtures without a .source file: {missing}"
