"""package_cache's defaults, input guard and apt drop-in, evaluated by Ansible's own templating."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "package_cache"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
GUARD = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())[0]
HOSTS = ["head01", "node01", "node02"]


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ({"package_cache": ["node02"], "head": ["head01"]}, "node02"),
        ({"head": ["head01"]}, "head01"),
        ({"head": []}, "node01"),
        ({}, "node01"),
    ],
    ids=["package_cache-group", "head", "empty-head-group", "no-groups"],
)
def test_the_cache_host_is_the_package_cache_group_else_the_head_else_the_first_host(groups, expected):
    all_hosts = ["node01", "node02", "head01"]
    assert render(DEFAULTS["package_cache_server"], groups={"all": all_hosts, **groups}) == expected


@pytest.mark.parametrize(
    ("hostvars", "address", "url"),
    [
        ({"head01": {"ansible_host": "10.0.0.5"}}, "10.0.0.5", "http://10.0.0.5:3142"),
        ({"head01": {}}, "head01", "http://head01:3142"),
        ({"head01": {"ansible_host": "fd00::5"}}, "fd00::5", "http://[fd00::5]:3142"),
    ],
)
def test_nodes_reach_the_cache_at_its_ansible_host_else_its_name(hostvars, address, url):
    variables = {"package_cache_server": "head01", "hostvars": hostvars}
    assert render(DEFAULTS["package_cache_address"], **variables) == address
    assert render(VARS["__package_cache_url"], package_cache_address=address, package_cache_port=3142) == url


def _bad_inputs(**overrides) -> str:
    variables = (
        {name: value for name, value in DEFAULTS.items() if "{{" not in str(value)}
        | {
            "package_cache_server": "head01",
            "package_cache_address": "head01",
            "groups": {"all": HOSTS},
            "__package_cache_archives": VARS["__package_cache_archives"],
        }
        | overrides
    )
    rules = render(GUARD["vars"]["__package_cache_rules"], **variables)
    return render(GUARD["vars"]["__package_cache_bad_inputs"], __package_cache_rules=rules, **variables) or ""


def test_the_defaults_and_a_site_mirror_pass_the_guard():
    assert _bad_inputs() == ""
    mirrors = {"debian": ["http://mirror.site/debian/"], "ubuntu": ["https://mirror.site/ubuntu"]}
    assert _bad_inputs(package_cache_backends=mirrors, package_cache_upstream_proxy="http://proxy.site:3128") == ""


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("package_cache_server", "head02", "a host of the inventory"),
        ("package_cache_address", "head 01", "a host name or an IP address"),
        ("package_cache_port", 0, "a TCP port from 1 to 65535"),
        ("package_cache_port", 70000, "a TCP port from 1 to 65535"),
        ("package_cache_pin_priority", "high", "a number above 0"),
        ("package_cache_backends", {"centos": ["http://mirror.site/centos/"]}, "a mapping of debian or ubuntu"),
        ("package_cache_backends", {"debian": "http://mirror.site/debian/"}, "a mapping of debian or ubuntu"),
        ("package_cache_backends", {"debian": []}, "non-empty list"),
        ("package_cache_backends", {"debian": ["ftp://mirror.site/debian/"]}, "http:// or https:// URLs"),
        ("package_cache_backends", ["http://mirror.site/debian/"], "a mapping"),
        ("package_cache_upstream_proxy", "proxy.site:3128", "a proxy URL"),
        ("package_cache_direct_hosts", "localhost", "a list of host names"),
        ("package_cache_direct_hosts", ["repo site"], "a list of host names"),
    ],
)
def test_a_bad_input_is_refused_naming_the_variable_its_value_and_what_is_expected(variable, value, expected):
    message = _bad_inputs(**{variable: value})
    assert message.startswith(f"{variable} is ")
    assert expected in message
    assert ";" not in message  # only the one bad variable


def test_the_drop_in_sends_http_through_the_cache_except_the_direct_hosts():
    text = render(
        (ROLE / "templates" / "apt-proxy.conf.j2").read_text(),
        ansible_managed="Ansible managed",
        package_cache_server="head01",
        package_cache_direct_hosts=["localhost", "repo.site"],
        __package_cache_url="http://10.0.0.5:3142",
    )
    lines = [line for line in text.splitlines() if line and not line.startswith("//")]
    assert lines == [
        'Acquire::http::Proxy "http://10.0.0.5:3142/";',
        'Acquire::http::Proxy-Auto-Detect "";',
        'Acquire::http::Proxy::localhost "DIRECT";',
        'Acquire::http::Proxy::repo.site "DIRECT";',
    ]
    assert text.startswith("//")


def test_a_backends_file_lists_each_mirror_as_a_directory_url():
    text = render(
        (ROLE / "templates" / "backends.j2").read_text(),
        ansible_managed="Ansible managed",
        item="debian",
        __package_cache_backends_marker=VARS["__package_cache_backends_marker"],
        package_cache_backends={"debian": ["http://mirror.site/debian", "http://mirror2.site/debian/"]},
    )
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines == ["http://mirror.site/debian/", "http://mirror2.site/debian/"]
    # The line the role finds its own files by, before removing one.
    assert f"# {VARS['__package_cache_backends_marker']}: " in text
