"""The ansible-core releases the project supports: pyproject.toml states the range, each CI leg's
constraints pin one release inside it, and the `ansible` package installed matches the core."""

from __future__ import annotations

import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.version import Version

from tests.paths import PROJECT

NEWEST_LEG = PROJECT / ".ci" / "newest-core" / "constraints.txt"


def _requirements() -> dict[str, Requirement]:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    return {r.name: r for r in map(Requirement, project["dependencies"])}


def _pins(path) -> dict[str, Version]:
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return {r.name: Version(str(r.specifier).removeprefix("==")) for r in map(Requirement, filter(None, lines))}


def test_pyproject_states_a_range_from_2_19_to_the_newest_leg():
    core = _requirements()["ansible-core"].specifier
    assert Version("2.19.0") in core and Version("2.18.99") not in core
    newest = _pins(NEWEST_LEG)["ansible-core"]
    assert newest in core
    assert Version(f"{newest.major}.{newest.minor + 1}.0") not in core  # a core CI has not run is not claimed


def test_the_newest_legs_pins_are_inside_pyprojects_ranges():
    pins = _pins(NEWEST_LEG)
    assert set(pins) == {"ansible-core", "ansible"}
    requirements = _requirements()
    for name, version in pins.items():
        assert version in requirements[name].specifier, (name, version, str(requirements[name]))


def test_the_installed_ansible_package_is_the_one_built_for_the_installed_core():
    core = Version(metadata.version("ansible-core"))
    assert core in _requirements()["ansible-core"].specifier
    wanted = [Requirement(r) for r in metadata.requires("ansible") or [] if r.startswith("ansible-core")]
    assert wanted, "the ansible package names no ansible-core requirement"
    assert all(core in r.specifier for r in wanted), (str(core), [str(r) for r in wanted])
