"""What every scenario's testinfra tests (molecule/<scenario>/tests/test_*.py) share.

Molecule's testinfra verifier runs pytest with --connection=docker (.config/molecule/config.yml);
the nodes are the scenario's platforms, named here from its molecule.yml (or the shared config's one
"instance-<scenario>" node), so a test runs on every node of its scenario through docker exec.
Expected values come from the scenario's inputs (its molecule.yml inventory), never from a role's
own vars: `inputs` gives a test the variables the scenario set for the node it is checking.

By hand, with the scenario converged: pytest --connection=docker molecule/<scenario>/tests/
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import testinfra
import yaml

MOLECULE = Path(__file__).resolve().parent


def _scenario(config) -> Path:
    named = os.environ.get("MOLECULE_SCENARIO_DIRECTORY")
    if named:
        return Path(named)
    found = {MOLECULE / Path(arg).resolve().relative_to(MOLECULE).parts[0] for arg in config.args}
    if len(found) != 1:
        raise pytest.UsageError(f"run one scenario's tests at a time (given: {sorted(map(str, found))})")
    return found.pop()


def _interpolate(text: str) -> str:
    """Molecule's interpolation of molecule.yml: ${NAME}, ${NAME:-default}, and $$ for a plain $."""

    def value(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        return os.environ.get(match.group(1)) or (match.group(2) or "")

    return re.sub(r"\$\$|\$\{(\w+)(?::-([^}]*))?\}", value, text)


def _molecule_yml(scenario: Path) -> dict:
    return yaml.safe_load(_interpolate((scenario / "molecule.yml").read_text())) or {}


def pytest_configure(config):
    """The scenario's platforms as testinfra's hosts, unless --hosts names them."""
    if getattr(config.option, "connection", None) != "docker" or config.option.hosts:
        return
    scenario = _scenario(config)
    platforms = _molecule_yml(scenario).get("platforms") or [{"name": f"instance-{scenario.name}"}]
    config.option.hosts = ",".join(platform["name"] for platform in platforms)


@pytest.fixture(autouse=True)
def _on_a_scenario_node(request):
    """Never read the controller: a test run without the docker connection is an error."""
    if "host" in request.fixturenames and request.getfixturevalue("host").backend.NAME != "docker":
        pytest.fail("molecule/*/tests read a scenario's nodes: run them with --connection=docker (molecule verify)")


def _inputs(config, name: str) -> dict:
    """The scenario's variables for node `name`: molecule.yml's group_vars (all, then the groups its
    platform entry names) and its host_vars."""
    molecule_yml = _molecule_yml(_scenario(config))
    inventory = (molecule_yml.get("provisioner") or {}).get("inventory") or {}
    platform = next((p for p in molecule_yml.get("platforms") or [] if p["name"] == name), {})
    merged: dict = {}
    for group in ["all", *platform.get("groups", [])]:
        merged.update((inventory.get("group_vars") or {}).get(group) or {})
    merged.update((inventory.get("host_vars") or {}).get(name) or {})
    return merged


@pytest.fixture
def inputs(host, request) -> dict:
    """The scenario's variables for the node `host` is."""
    return _inputs(request.config, host.backend.name)


@pytest.fixture
def node(request):
    """node(name) -> (the testinfra host of the scenario's node `name`, its inputs), for a scenario whose
    nodes play different parts (a test that checks one of them names it)."""

    def get(name: str):
        return testinfra.get_host(f"docker://{name}"), _inputs(request.config, name)

    return get


def _containerd_loaded(host) -> dict:
    parse = "import json, sys, tomllib; print(json.dumps(tomllib.load(sys.stdin.buffer)))"
    return json.loads(host.check_output(f"containerd config dump | python3 -c '{parse}'"))


@pytest.fixture
def containerd_loaded(host) -> dict:
    """The configuration containerd loads (`containerd config dump`: its config.toml plus defaults),
    parsed by the node's own tomllib."""
    return _containerd_loaded(host)


@pytest.fixture
def containerd_loaded_on():
    """containerd_loaded for a node picked with node()."""
    return _containerd_loaded


def _until(fetch, done, tries: int = 60, delay: float = 2):
    """fetch() again until done(value), at most `tries` times: a scheduler or a scrape the node has not
    reached yet. Returns the last value, for the test to assert on. The default 2 min is for CI, where
    the scenario shares two cores with pytest's lab; a passing wait returns as soon as it is done."""
    for _ in range(tries):
        value = fetch()
        if done(value):
            return value
        time.sleep(delay)
    return value


@pytest.fixture
def until():
    return _until
