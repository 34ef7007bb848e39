"""Schema and validation errors: each names the file, the line, the field and what was expected."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from clusterforge.topology import TopologyError, load
from tests.paths import PROJECT

EXAMPLES = PROJECT / "inventories" / "examples"
SUPERPOD = yaml.safe_load((EXAMPLES / "h100-superpod.topology.yml").read_text())

# A minimal valid file whose lines the tests below know.
TINY = """\
plugin: topology
cluster:
  name: tiny
  domain: tiny.example.com
sites:
  - name: dc1
node_types:
  box:
    power_w: 300
roles:
  compute:
    node_type: box
    count: 4
    hostname: "n{index}"
addressing:
  inband: 10.0.0.0/24
"""


def problems_of(path: Path) -> TopologyError:
    with pytest.raises(TopologyError) as caught:
        load(path)
    return caught.value


def refused_edit(tmp_path: Path, text: str, old: str, new: str) -> tuple[str, str]:
    """The error a topology file gives once its first `old` reads `new`, and the edited text."""
    assert old in text
    edited = text.replace(old, new, 1)
    return str(problems_of(write_text(tmp_path, edited))), edited


def line_of(text: str, needle: str) -> int:
    """The number of the first line of text that holds needle."""
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def write_yaml(tmp_path: Path, data) -> Path:
    path = tmp_path / "bad.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def write_text(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.topology.yml"
    path.write_text(text)
    return path


def find(error: TopologyError, location: tuple) -> tuple[tuple, int | None, str]:
    for problem in error.problems:
        if tuple(problem[0]) == location:
            return problem
    raise AssertionError(f"no problem at {location}; got:\n{error}")


def test_the_tiny_file_is_valid(tmp_path):
    assert [h.name for h in load(write_text(tmp_path, TINY)).hosts] == ["n1", "n2", "n3", "n4"]


# --- errors on known lines of small literal files --------------------------------------------


def _replace(line: int, new: str) -> str:
    lines = TINY.splitlines()
    lines[line - 1] = new
    return "\n".join(lines) + "\n"


def _insert(after: int, new: str) -> str:
    lines = TINY.splitlines()
    lines.insert(after, new)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "line", "field", "expected"),
    [
        pytest.param(_replace(13, "    count: four"), 13, "roles.compute.count", "valid integer", id="wrong-type"),
        pytest.param(_insert(9, "    colour: green"), 10, "node_types.box.colour", "unknown field", id="unknown-field"),
        # A missing field points at its parent, the deepest part the file has.
        pytest.param(_replace(4, "  description: x"), 2, "cluster.domain", "required field is missing", id="missing"),
        pytest.param(
            _replace(14, '    hostname: "n{index}x"'),
            14,
            "roles.compute.hostname",
            "must end in {index}",
            id="hostname-template",
        ),
        pytest.param(
            _replace(12, "    node_type: crate"),
            12,
            "roles.compute.node_type",
            "unknown node type 'crate'",
            id="unknown-node-type",
        ),
        pytest.param(_replace(8, "  Box-1:"), 8, "node_types.Box-1", "should match pattern", id="unsafe-name"),
        pytest.param(_replace(16, "  inband: 10.0.0.0/33"), 16, "addressing.inband", "IPv4 network", id="bad-cidr"),
        pytest.param(_replace(16, "  inband: 10.0.0.0/29"), 16, "addressing.inband", "4 are needed", id="exhausted"),
        pytest.param(_replace(11, "  compuet:"), 11, "roles.compuet", "Input should be 'head'", id="unknown-role"),
    ],
)
def test_error_names_file_line_field_and_expectation(tmp_path, text, line, field, expected):
    path = write_text(tmp_path, text)
    rendered = str(problems_of(path))
    matching = [row for row in rendered.splitlines() if row.startswith(f"{path}:{line}: {field}: ")]
    assert matching, rendered
    assert expected in matching[0]


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = write_text(tmp_path, _replace(13, "    count: [4"))
    error = problems_of(path)
    ((location, line, message),) = error.problems
    assert location == () and line == 14  # the scanner notices on the next line
    assert message.startswith("not valid YAML")
    assert str(error).startswith(f"{path}:14: (top level): not valid YAML")


def test_a_top_level_list_is_refused(tmp_path):
    path = write_text(tmp_path, "- cluster: tiny\n- sites: []\n")
    ((location, line, message),) = problems_of(path).problems
    assert (location, line) == ((), 1)
    assert "expected a mapping with cluster, sites, node_types, roles, fabrics, addressing" in message


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_an_empty_file_is_refused(tmp_path, text):
    path = write_text(tmp_path, text)
    error = problems_of(path)
    ((location, _, message),) = error.problems
    assert location == ()
    assert "expected a mapping" in message
    assert str(error).startswith(str(path)) and ": (top level): expected a mapping" in str(error)


def test_an_unreadable_file_is_refused(tmp_path):
    error = problems_of(tmp_path / "missing.topology.yml")
    assert "cannot read the file" in str(error) and "missing.topology.yml" in str(error)


# --- mutations of the SuperPOD example ---------------------------------------------------------


def _set(path: str, value):
    """A mutation that sets the value at a dotted path (list indexes as numbers)."""

    def mutate(data):
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parents:
            data = data[part]
        data[last] = value

    return mutate


def _delete(path: str):
    def mutate(data):
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parents:
            data = data[part]
        del data[last]

    return mutate


def _rename(path: str, new: str):
    def mutate(data):
        *parents, old = path.split(".")
        for part in parents:
            data = data[part]
        data[new] = data.pop(old)

    return mutate


def _both(*mutations):
    def mutate(data):
        for mutation in mutations:
            mutation(data)

    return mutate


def _dragonfly(p: int, a: int, h: int, g: int):
    def mutate(data):
        fabric = data["fabrics"]["compute"]
        fabric["topology"] = "dragonfly"
        fabric["dragonfly"] = {
            "terminals_per_router": p,
            "routers_per_group": a,
            "global_links_per_router": h,
            "groups": g,
        }

    return mutate


# (mutation, location of the problem, text on that line of the dumped file, what the message says)
CASES = {
    "missing-required": (_delete("cluster.domain"), ("cluster", "domain"), "cluster:", "required field is missing"),
    "missing-section": (_delete("addressing"), ("addressing",), None, "required field is missing"),
    "unknown-field": (
        _set("node_types.dgx_h100.gpu.colour", "green"),
        ("node_types", "dgx_h100", "gpu", "colour"),
        "colour:",
        "unknown field",
    ),
    "wrong-type": (
        _set("scalable_units.count", "four"),
        ("scalable_units", "count"),
        "count: four",
        "valid integer",
    ),
    "wrong-type-list": (_set("sites", {"name": "dc1"}), ("sites",), "sites:", "valid list"),
    "out-of-range": (
        _set("node_types.dgx_h100.gpu.count", 0),
        ("node_types", "dgx_h100", "gpu", "count"),
        "count: 0",
        "greater than or equal to 1",
    ),
    "hostname-not-ending-in-index": (
        _set("roles.compute.hostname", "dgx{index:03d}-a"),
        ("roles", "compute", "hostname"),
        "hostname:",
        "must end in {index}",
    ),
    "hostname-unknown-field": (
        _set("roles.compute.hostname", "{rack}-{index}"),
        ("roles", "compute", "hostname"),
        "hostname:",
        "unknown field(s) ['rack']",
    ),
    "unknown-node-type": (
        _set("roles.login.node_type", "dgx_h200"),
        ("roles", "login", "node_type"),
        "node_type: dgx_h200",
        "unknown node type 'dgx_h200'; expected one of ['dgx_h100', 'mgmt_server', 'ufm_appliance']",
    ),
    "unknown-site": (
        _set("roles.head.site", "dc9"),
        ("roles", "head", "site"),
        "site: dc9",
        "unknown site 'dc9'; expected one of ['dc1']",
    ),
    "unknown-role-fabric": (
        _set("roles.head.fabrics", ["inband", "storage"]),
        ("roles", "head", "fabrics", 1),
        "- storage",
        "unknown fabric 'storage'; expected one of ['compute', 'inband', 'oob']",
    ),
    "unknown-hca-fabric": (
        _set("node_types.dgx_h100.hcas.3.fabric", "storage"),
        ("node_types", "dgx_h100", "hcas", 3, "fabric"),
        "fabric: storage",
        "unknown fabric 'storage'",
    ),
    "duplicate-site": (
        _set("sites", [{"name": "dc1"}, {"name": "dc1"}]),
        ("sites",),
        "sites:",
        "site 'dc1' is listed twice",
    ),
    "duplicate-hostnames": (
        _set("roles.login.hostname", "head{index:02d}"),
        ("roles", "login", "hostname"),
        "hostname:",
        "produces head01, head02, already produced by role head; expected unique names",
    ),
    "overlapping-subnets": (
        _set("addressing.oob", "10.130.2.0/24"),
        ("addressing", "oob"),
        "oob: 10.130.2.0/24",
        "10.130.2.0/24 (oob) overlaps 10.130.0.0/22 (inband)",
    ),
    "overlapping-ipoib": (
        _set("addressing.ipoib.7", "10.140.0.0/24"),
        ("addressing", "ipoib", 7),
        "- 10.140.0.0/24",
        "overlaps 10.140.0.0/24",
    ),
    # 132 hosts, but a /25 has 128 - 10 (offset) - 1 (broadcast) = 117 addresses.
    "exhausted-subnet": (
        _set("addressing.inband", "10.130.0.0/25"),
        ("addressing", "inband"),
        "inband: 10.130.0.0/25",
        "10.130.0.0/25 has 117 addresses from offset 10, but 132 are needed",
    ),
    # A /24 from offset 100 has 155 addresses: enough for the 132 hosts, not for them and the
    # 61 switches (32 leaves + 16 spines compute, 5 + 2 inband, 5 + 1 oob) = 193.
    "exhausted-oob-counts-switches": (
        _both(_set("addressing.oob", "10.131.0.0/24"), _set("addressing.first_host_offset", 100)),
        ("addressing", "oob"),
        "oob: 10.131.0.0/24",
        "10.131.0.0/24 has 155 addresses from offset 100, but 193 are needed",
    ),
    "ipoib-count-not-rails": (
        _delete("addressing.ipoib.7"),
        ("addressing", "ipoib"),
        "ipoib:",
        "7 IPoIB subnet(s) for 8 rails of fabric compute; expected one per rail",
    ),
    "ipoib-without-ib-fabric": (
        _set("fabrics.compute.link_layer", "ethernet"),
        ("addressing", "ipoib"),
        "ipoib:",
        "no fabric is an InfiniBand compute fabric",
    ),
    "dragonfly-radix-too-small": (
        _dragonfly(p=32, a=16, h=18, g=2),
        ("fabrics", "compute", "switch", "radix"),
        "radix: 64",
        "p + (a - 1) + h = 32 + 15 + 18 = 65 ports, more than the switch radix 64",
    ),
    "dragonfly-too-many-groups": (
        _dragonfly(p=16, a=4, h=2, g=10),
        None,
        None,
        "10 groups cannot all be linked: a*h + 1 = 9 at most",
    ),
    "dragonfly-too-few-terminals": (
        _dragonfly(p=8, a=8, h=8, g=8),
        None,
        None,
        "1020 node ports exceed the dragonfly's p*a*g = 512 terminals",
    ),
    "dragonfly-without-parameters": (
        _set("fabrics.compute.topology", "dragonfly"),
        ("fabrics", "compute"),
        "compute:",
        "topology dragonfly needs the dragonfly parameters",
    ),
    "rails-not-hcas": (
        _set("fabrics.compute.rails", 4),
        ("fabrics", "compute", "rails"),
        "rails: 4",
        "4 rails, but node type 'dgx_h100' (role compute) has 8 HCAs on this fabric; expected one HCA per rail",
    ),
    "rail-fabric-with-one-rail": (
        _set("fabrics.compute.rails", 1),
        ("fabrics", "compute"),
        "compute:",
        "a rail-optimised fat tree needs rails >= 2",
    ),
    "reserved-slot-outside-units": (
        _set("scalable_units.reserved_slots.0.unit", 5),
        ("scalable_units",),
        "scalable_units:",
        "reserved slot 5/32 is outside 4 units of 32 slots",
    ),
    "reserved-slot-outside-slots": (
        _set("scalable_units.reserved_slots.0.slot", 33),
        ("scalable_units",),
        "scalable_units:",
        "reserved slot 4/33 is outside 4 units of 32 slots",
    ),
    "reserved-slot-for-a-counted-role": (
        _set("scalable_units.reserved_slots.0.role", "login"),
        ("scalable_units", "reserved_slots", 0, "role"),
        "role: login",
        "role 'login' is not placed in reserved slots; expected one of ['management']",
    ),
    "reserved-slot-role-without-a-slot": (
        _delete("scalable_units.reserved_slots.0.role"),
        ("roles", "management", "placement"),
        "placement: reserved_slots",
        "placement reserved_slots, but no scalable_units.reserved_slots entry has role: management",
    ),
    "reserved-slot-role-with-a-count": (
        _set("roles.management.count", 1),
        ("roles", "management"),
        "management:",
        "count is set by the reserved slots that name this role; remove count",
    ),
    # The UFM may use fewer rails than a DGX, not more than the fabric has.
    "reserved-slot-host-with-more-ports-than-rails": (
        _set("fabrics.compute.rails", 3),
        ("fabrics", "compute", "rails"),
        "rails: 3",
        "3 rails, but node type 'ufm_appliance' (role management) has 4 HCAs on this fabric; "
        "expected at most one HCA per rail",
    ),
    "hca-names-missing-gpu": (
        _set("node_types.dgx_h100.gpu.count", 4),
        ("node_types", "dgx_h100"),
        "dgx_h100:",
        "HCA mlx5_6 names GPU 4, but the node has 4",
    ),
    # 4-port leaves at 5:1 keep floor(4 / 6) = 0 ports for uplinks.
    "leaves-without-uplinks": (
        _set("fabrics.oob.switch.radix", 4),
        ("fabrics", "oob", "switch", "radix"),
        "radix: 4",
        "33 leaves need uplinks, but a 4-port leaf at 5.0:1 has none",
    ),
    # 8-port leaves at 1:1: 4 down, so 1 service leaf + 8 per unit (31-32 hosts) = 33 leaves, more
    # than 8 spine ports; pods of 4 leaves: the service leaf + 2 per unit = 9 pods > 8 core ports.
    "too-big-for-three-tiers": (
        _both(_set("fabrics.oob.switch.radix", 8), _set("fabrics.oob.oversubscription", 1)),
        ("fabrics", "oob", "switch", "radix"),
        "radix: 8",
        "33 leaves need 9 pods, more than a 8-port core switch can reach",
    ),
    # The size limit names the field that made the cluster too big, not the top level:
    # 4096 x 512 = 2,097,152 slots plus 2 head and 2 login hosts.
    "too-many-units": (
        _both(_set("scalable_units.count", 4096), _set("scalable_units.nodes_per_unit", 512)),
        ("scalable_units", "count"),
        "count: 4096",
        "4096 units of 512 slots = 2097152 hosts make the cluster 2097156 hosts in all; at most 200000",
    ),
    # 127 DGX (128 slots) + 2 head + 250,000 login hosts.
    "too-many-hosts-in-a-role": (
        _set("roles.login.count", 250_000),
        ("roles", "login", "count"),
        "count: 250000",
        "250000 hosts make the cluster 250130 hosts in all; at most 200000 are supported",
    ),
    "node-type-with-dash": (
        _rename("node_types.dgx_h100", "DGX-H100"),
        ("node_types", "DGX-H100"),
        "DGX-H100:",
        "String should match pattern '^[a-z][a-z0-9_]*$'",
    ),
    "node-type-with-digit-first": (
        _rename("node_types.dgx_h100", "1abc"),
        ("node_types", "1abc"),
        "1abc:",
        "should match pattern",
    ),
    "fabric-with-dash": (
        _rename("fabrics.inband", "in-band"),
        ("fabrics", "in-band"),
        "in-band:",
        "should match pattern",
    ),
    "site-upper-case": (_set("sites.0.name", "DC1"), ("sites", 0, "name"), "name: DC1", "should match pattern"),
    "cluster-name-with-dash": (
        _set("cluster.name", "super-pod"),
        ("cluster", "name"),
        "name: super-pod",
        "should match pattern",
    ),
    "role-name-not-a-role": (
        _rename("roles.login", "gateway"),
        ("roles", "gateway"),
        "gateway:",
        "Input should be 'head', 'management', 'login', 'storage' or 'compute'",
    ),
}


@pytest.mark.parametrize(("mutate", "location", "line_has", "expected"), CASES.values(), ids=CASES.keys())
def test_superpod_mutation_is_refused(tmp_path, mutate, location, line_has, expected):
    data = copy.deepcopy(SUPERPOD)
    mutate(data)
    path = write_yaml(tmp_path, data)
    error = problems_of(path)
    if location is None:  # see the xfail tests below for where these should point
        matching = [p for p in error.problems if expected in p[2]]
        assert matching, str(error)
        location, line, message = matching[0]
        assert location[:2] == ("fabrics", "compute")
    else:
        _, line, message = find(error, location)
    assert expected in message
    field = ".".join(str(part) for part in location) or "(top level)"
    assert f"{path}:{line}: {field}: {message}" in str(error).splitlines()
    if line_has is not None:
        assert line_has in path.read_text().splitlines()[line - 1]


@pytest.mark.parametrize(
    ("p", "a", "h", "g", "location"),
    [
        (16, 4, 2, 10, ("fabrics", "compute", "dragonfly", "groups")),
        (8, 8, 8, 8, ("fabrics", "compute", "dragonfly")),
    ],
)
def test_dragonfly_size_errors_point_at_the_dragonfly_parameters(tmp_path, p, a, h, g, location):
    data = copy.deepcopy(SUPERPOD)
    _dragonfly(p, a, h, g)(data)
    find(problems_of(write_yaml(tmp_path, data)), location)


def test_every_problem_is_reported_at_once(tmp_path):
    data = copy.deepcopy(SUPERPOD)
    _set("roles.login.node_type", "nope")(data)
    _set("roles.head.site", "nowhere")(data)
    _set("roles.head.fabrics", ["storage"])(data)
    error = problems_of(write_yaml(tmp_path, data))
    assert {tuple(p[0]) for p in error.problems} == {
        ("roles", "login", "node_type"),
        ("roles", "head", "site"),
        ("roles", "head", "fabrics", 0),
    }


# --- bugs found by these tests, fixed ----------------------------------------------------------


@pytest.mark.parametrize("template", ["{index}", "n{index:>4}", "n{unit}_X{index}"])
def test_hostname_templates_that_make_invalid_hostnames_are_refused(tmp_path, template):
    data = copy.deepcopy(SUPERPOD)
    _set("roles.login.hostname", template)(data)
    find(problems_of(write_yaml(tmp_path, data)), ("roles", "login", "hostname"))


def test_a_node_type_named_like_a_pydantic_tag_keeps_its_location(tmp_path):
    data = copy.deepcopy(SUPERPOD)
    _rename("node_types.mgmt_server", "str")(data)
    _set("roles.head.node_type", "str")(data)
    _set("roles.login.node_type", "str")(data)
    _set("node_types.str.power_w", "lots")(data)
    find(problems_of(write_yaml(tmp_path, data)), ("node_types", "str", "power_w"))
