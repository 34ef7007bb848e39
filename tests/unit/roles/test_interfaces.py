"""Every role's public interface agrees with itself: defaults, argument_specs, README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.paths import PROJECT

ROLES = sorted(p for p in (PROJECT / "roles").iterdir() if p.is_dir())
# Constants roles (roles/clusterforge, as Kubespray's kubespray_defaults): no tasks/main.yml, only
# internal role vars that the plays listing the role load once (and shared task files other roles
# include, such as the restart gate). No public interface to hold together.
CONSTANTS_ROLES = [role for role in ROLES if not (role / "tasks" / "main.yml").exists()]
TASK_ROLES = [role for role in ROLES if role not in CONSTANTS_ROLES]


def _load(path: Path) -> dict:
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


@pytest.mark.parametrize("role", CONSTANTS_ROLES, ids=lambda p: p.name)
def test_a_constants_role_has_no_interface_and_no_validation_task(role):
    """An argument spec would add a validate_argument_spec task to every play that lists the role."""
    assert not (role / "defaults").exists()
    assert not (role / "meta" / "argument_specs.yml").exists()
    assert _load(role / "vars" / "main.yml"), "the role holds its constants in vars/main.yml"


@pytest.mark.parametrize("role", TASK_ROLES, ids=lambda p: p.name)
def test_defaults_match_argument_specs(role):
    defaults = _load(role / "defaults" / "main.yml")
    options = _load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    for name, option in options.items():
        assert option.get("default") == defaults[name], name
        assert option.get("description"), f"{name} has no description"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_every_variable_carries_the_role_prefix(role):
    defaults = _load(role / "defaults" / "main.yml")
    assert all(name.startswith(f"{role.name}_") for name in defaults)
    for vars_file in (role / "vars").glob("*.yml"):
        assert all(name.startswith(f"__{role.name}_") for name in _load(vars_file)), vars_file


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_readme_lists_exactly_the_public_variables(role):
    defaults = _load(role / "defaults" / "main.yml")
    readme = (role / "README.md").read_text()
    listed = re.findall(r"^\| `([a-z0-9_]+)` \|", readme, flags=re.MULTILINE)
    assert sorted(listed) == sorted(defaults)


@pytest.mark.parametrize("role", TASK_ROLES, ids=lambda p: p.name)
def test_os_data_reaches_tasks_only_through_public_defaults(role):
    """vars/<OS>.yml holds __ names; tasks, handlers and templates read the overridable default.
    vars/main.yml holds the role's internal constants (not OS data, not meant to be overridden)."""
    defaults_text = (role / "defaults" / "main.yml").read_text()
    os_files = [p for p in (role / "vars").glob("*.yml") if p.name != "main.yml"]
    os_names = {name for vars_file in os_files for name in _load(vars_file)}
    users = [p for d in ("tasks", "handlers", "templates") for p in (role / d).glob("*") if p.is_file()]
    for name in sorted(os_names):
        assert re.search(rf"^{role.name}_[a-z0-9_]+: .*\b{name}\b", defaults_text, flags=re.MULTILINE), (
            f"{name} has no public default in defaults/main.yml"
        )
        direct = [str(p.relative_to(role)) for p in users if re.search(rf"\b{name}\b", p.read_text())]
        assert direct == [], f"{name} used directly instead of its public default"


# Galaxy's platform names and versions -> the distribution-major names the roles' tables use
# (ansible_facts distribution ~ '-' ~ distribution_major_version); EL 9 is RHEL and Rocky 9.
GALAXY_RELEASES = {
    ("Debian", "bookworm"): {"Debian-12"},
    ("Debian", "trixie"): {"Debian-13"},
    ("Ubuntu", "jammy"): {"Ubuntu-22"},
    ("Ubuntu", "noble"): {"Ubuntu-24"},
    ("EL", "9"): {"RedHat-9", "Rocky-9"},
}
TABLED_ROLES = [role for role in TASK_ROLES if f"__{role.name}_supported_releases" in _load(role / "vars" / "main.yml")]


@pytest.mark.parametrize("role", TABLED_ROLES, ids=lambda p: p.name)
def test_the_supported_releases_table_is_what_meta_says(role):
    """One table per role (vars/main.yml __<role>_supported_releases, which its tasks assert) and
    meta/main.yml's platforms say the same releases."""
    table = set(_load(role / "vars" / "main.yml")[f"__{role.name}_supported_releases"])
    platforms = _load(role / "meta" / "main.yml")["galaxy_info"]["platforms"]
    releases = [(platform["name"], str(version)) for platform in platforms for version in platform["versions"]]
    meta = set().union(*(GALAXY_RELEASES[release] for release in releases))
    assert table == meta
