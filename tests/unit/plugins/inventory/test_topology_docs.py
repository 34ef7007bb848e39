"""The topology inventory plugin's DOCUMENTATION says exactly what build() produces."""

from __future__ import annotations

import re

import pytest
import yaml

from clusterforge.topology import groups, load
from clusterforge.topology.expectations import VARIABLE_PREFIX
from clusterforge.topology.inventory import build
from tests.paths import PROJECT, load_plugin

SUPERPOD = PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml"
CODE = re.compile(r"C\(([a-z0-9_]+)\)")


@pytest.fixture(scope="module")
def description() -> list[str]:
    module = load_plugin("plugins/inventory/topology.py")
    return [" ".join(item.split()) for item in yaml.safe_load(module.DOCUMENTATION)["description"]]


def item(description: list[str], start: str) -> str:
    (found,) = [text for text in description if text.startswith(start)]
    return found


def test_documented_host_variables_are_the_ones_built(description, tmp_path):
    # With a storage subnet too, so that every address variable is made.
    with_storage = tmp_path / "storage.topology.yml"
    with_storage.write_text(SUPERPOD.read_text().replace("addressing:\n", "addressing:\n  storage: 10.132.0.0/22\n"))
    data = build(load(with_storage, links=False))
    built = {name for host_vars in data.host_vars.values() for name in host_vars}
    assert set(CODE.findall(item(description, "Host variables:"))) == built


def test_documented_group_variables_are_the_ones_built(description):
    data = build(load(SUPERPOD, links=False))
    text = item(description, "Variables of C(all):")
    documented = set(re.findall(r"clusterforge_[a-z_]+", text))
    built = {*data.all_vars, *data.group_vars["su1"], *data.group_vars["type_dgx_h100"]}
    assert documented == built
    assert {name for name in documented if name.startswith(VARIABLE_PREFIX)} == set(
        load(SUPERPOD, links=False).expectations("dgx_h100").inventory_vars()
    )


def test_documented_capability_groups_are_the_ones_built(description):
    assert CODE.findall(item(description, "Capability groups")) == list(groups.CAPABILITY_GROUPS)
    data = build(load(SUPERPOD, links=False))
    assert set(groups.CAPABILITY_GROUPS) <= set(data.children)


def test_documented_orchestrator_groups_and_their_roles(description):
    text = item(description, "Orchestrator groups")
    documented = {
        name: tuple(roles.split(", ")) for name, roles in re.findall(r"C\(([a-z0-9_]+)\) \(([a-z, ]+)\)", text)
    }
    assert documented == groups.ORCHESTRATOR_GROUPS
