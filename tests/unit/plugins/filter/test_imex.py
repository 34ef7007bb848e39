"""The clusterforge_imex_nodes_config filter (plugins/filter/imex.py) on the GB200 NVL72 example: the
node file a tray gets is the file `topology render` writes for its domain, and bad input is refused
naming the topology file and the field."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from clusterforge.topology import load
from clusterforge.topology.inventory import build
from clusterforge.topology.render import nvlink as render_nvlink
from tests.paths import NVL72_EXAMPLE
from tests.paths import SUPERPOD as SUPERPOD_PATH
from tests.paths import filters as filters_of

EXAMPLE = str(NVL72_EXAMPLE)
SUPERPOD = str(SUPERPOD_PATH)


@pytest.fixture(scope="module")
def imex_nodes_config():
    return filters_of("plugins/filter/imex.py")["clusterforge_imex_nodes_config"]


@pytest.fixture(scope="module")
def plan():
    return load(EXAMPLE)


def test_every_tray_s_file_is_the_rendered_file_of_its_inventory_domain(imex_nodes_config, plan):
    rendered = render_nvlink.files(plan)
    inventory = build(plan)
    checked = 0
    for group in inventory.children["nvlink_domain"]:
        domain = inventory.group_vars[group]["clusterforge_nvlink_domain"]
        for tray in inventory.group_hosts[group]:
            assert imex_nodes_config(tray, EXAMPLE, domain) == rendered[f"imex/{domain}/nodes_config.cfg"]
            checked += 1
    assert checked == 144  # every tray of the 8 racks


def test_the_file_lists_the_domain_s_18_in_band_addresses(imex_nodes_config, plan):
    text = imex_nodes_config("gb019", EXAMPLE, "nvl02")
    lines = text.splitlines()
    assert len(lines) == 18 and text.endswith("\n")
    assert plan.interface_addresses(plan.host("gb019"))["inband"] in lines
    assert plan.interface_addresses(plan.host("gb018"))["inband"] not in lines  # the last tray of nvl01


def test_an_unknown_domain_is_refused_naming_the_file_and_field(imex_nodes_config):
    with pytest.raises(AnsibleFilterError) as caught:
        imex_nodes_config("gb001", EXAMPLE, "nvl09")
    message = str(caught.value)
    assert f"{EXAMPLE}: nvidia_imex_domain: unknown NVLink domain 'nvl09'" in message
    assert "expected one of nvl01, nvl02, nvl03, nvl04, nvl05, nvl06, nvl07, nvl08" in message


def test_a_tray_of_another_domain_is_refused(imex_nodes_config):
    with pytest.raises(AnsibleFilterError) as caught:
        imex_nodes_config("gb001", EXAMPLE, "nvl02")
    message = str(caught.value)
    assert f"{EXAMPLE}: nvidia_imex_domain: gb001 is not in NVLink domain nvl02's node list (gb019, " in message
    assert "(its domain is nvl01)" in message


def test_a_node_outside_every_domain_is_refused(imex_nodes_config):
    with pytest.raises(AnsibleFilterError, match=r"head01 is not in NVLink domain nvl01's .*no tray of any"):
        imex_nodes_config("head01", EXAMPLE, "nvl01")


def test_a_topology_without_nvlink_domains_has_none(imex_nodes_config):
    with pytest.raises(AnsibleFilterError, match="expected one of none: the topology has no nvlink_domain"):
        imex_nodes_config("dgx001", SUPERPOD, "nvl01")
    assert build(load(SUPERPOD)).children["nvlink_domain"] == []


def test_the_inventory_groups_the_trays_by_domain(plan):
    inventory = build(plan)
    assert inventory.children["nvlink_domain"] == [f"nvlink_nvl{n:02d}" for n in range(1, 9)]
    assert inventory.group_hosts["nvlink_nvl01"] == [f"gb{n:03d}" for n in range(1, 19)]
    assert inventory.group_vars["nvlink_nvl08"] == {"clusterforge_nvlink_domain": "nvl08"}
    in_domains = {host for group in inventory.children["nvlink_domain"] for host in inventory.group_hosts[group]}
    assert len(in_domains) == 144 and "head01" not in in_domains
