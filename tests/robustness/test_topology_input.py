"""Hostile and careless topology files against every entry point that reads one: `clusterforge
topology validate|show|render|draw`, `clusterforge lab up --topology` (its validation, before
Docker) and the inventory plugin (ansible-inventory). Each must refuse the file with
`file:line: field: what was expected`, exit 4 (ansible-inventory: its own failure code), and
never print a traceback.

Every case runs through `validate`; the other entry points share its loader (cli/topology.run
loads before dispatching; lab up and the plugin call topology.load), so they get one case per
layer of the loader (reading, YAML, schema, cross-field checks, control characters) to stay fast."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterforge.topology import TopologyError, load
from clusterforge.topology.model import HOSTNAME_PATTERN
from clusterforge.topology.source import MAX_BYTES
from tests.paths import EXAMPLES, PROJECT
from tests.unit.clusterforge.topology.test_schema import TINY

BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(PROJECT / "src"), os.environ.get("PYTHONPATH", "")]),
    "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
    # Should a case ever validate, lab up must fail at the engine, not start containers.
    "DOCKER_HOST": "unix:///nonexistent/docker.sock",
    "NO_COLOR": "1",
    "COLUMNS": "200",
    "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
}


def tiny(old: str, new: str) -> str:
    assert old in TINY, old
    return TINY.replace(old, new, 1)


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)
HOSTNAME = ("roles.compute.hostname", 14)
NEWLINE_AS_BINARY = base64.b64encode(b"dc\nSwitchName=evil").decode()

# name -> (file content, the field the error names, its line or None, what the error says)
CASES: dict[str, tuple[str | bytes, str, int | None, str]] = {
    "empty": ("", "(top level)", None, "expected a mapping"),
    "binary": (bytes(range(256)) * 4, "(top level)", None, "not UTF-8"),
    "latin-1": (tiny("dc1", "dc1 caf\xe9").encode("latin-1"), "(top level)", None, "not UTF-8"),
    "billion-laughs": (BILLION_LAUGHS, "(top level)", None, "more than 200000 values"),
    "too-large": (TINY + "#" * MAX_BYTES + "\n", "(top level)", None, f"larger than {MAX_BYTES} bytes"),
    "deep-nesting": ("a: " + "[" * 500 + "]" * 500 + "\n", "(top level)", 1, "nests deeper than 64 levels"),
    "repeated-key": (TINY + "addressing:\n  inband: 10.9.0.0/16\n", "addressing", 17, "repeated (first on line 15)"),
    "unknown-key": (
        tiny("    power_w: 300\n", "    power_w: 300\n    colour: red\n"),
        "node_types.box.colour",
        10,
        "unknown field",
    ),
    "wrong-type": (tiny("count: 4", "count: four"), "roles.compute.count", 13, "valid integer"),
    "bad-count": (tiny("count: 4", "count: -1"), "roles.compute.count", 13, "greater than or equal to 0"),
    # YAML's true is not a count (pydantic read it as 1 host), nor is a number written as text.
    "count-true": (tiny("count: 4", "count: true"), "roles.compute.count", 13, "valid integer"),
    "count-text": (tiny("count: 4", 'count: "4"'), "roles.compute.count", 13, "valid integer"),
    "all-counts-zero": (tiny("count: 4", "count: 0"), "roles.compute.count", 13, "the cluster has no hosts"),
    "hostile-hostname": (tiny('"n{index}"', '"n;reboot #{index}"'), *HOSTNAME, "expected a host name"),
    "format-width": (tiny('"n{index}"', '"a{index:0100000000d}"'), *HOSTNAME, "{index:0100000000d} is not allowed"),
    "format-comma": (tiny('"n{index}"', '"gpu{index:,}"'), *HOSTNAME, "{index:,} is not allowed"),
    "format-locale": (tiny('"n{index}"', '"gpu{index:n}"'), *HOSTNAME, "{index:n} is not allowed"),
    "format-nested": (tiny('"n{index}"', '"n{slot:{unit}}{index}"'), *HOSTNAME, "{slot:{unit}} is not allowed"),
    "format-conversion": (tiny('"n{index}"', '"{role!r}{index}"'), *HOSTNAME, "a conversion is not allowed"),
    "format-attribute": (tiny('"n{index}"', '"n{index.real}{index}"'), *HOSTNAME, "unknown field(s) ['index.real']"),
    "host-width": (
        TINY + 'ansible:\n  host: "{name:>50000000}"\n',
        "ansible.host",
        18,
        "{name:>50000000} is not allowed",
    ),
    # Only a sample name was tried before: the real site names fill the template in.
    "site-makes-no-hostname": (
        tiny("name: dc1", "name: dc_1").replace('"n{index}"', '"{site}-n{index}"'),
        *HOSTNAME,
        "makes 'dc_1-n1'",
    ),
    "newline-in-value": (
        tiny("  - name: dc1\n", '  - name: dc1\n    description: "x\\nSwitchName=evil"\n'),
        "sites.0.description",
        7,
        "control character U+000A",
    ),
    "carriage-return-in-key": (tiny("  box:", '  "box\\r":'), "node_types.box\\r", 8, "control character U+000D"),
    "line-separator": (
        tiny("  - name: dc1\n", '  - name: dc1\n    description: "x\\u2028y"\n'),
        "sites.0.description",
        7,
        "control character U+2028",
    ),
    "newline-in-binary": (
        tiny("  - name: dc1\n", f"  - name: dc1\n    description: !!binary {NEWLINE_AS_BINARY}\n"),
        "sites.0.description",
        7,
        "control character U+000A",
    ),
    **{
        f"formula-{name}": (
            tiny("    power_w: 300\n", f"    power_w: 300\n    gpu: {{model: '{start}cmd|calc', count: 1}}\n"),
            "node_types.box.gpu.model",
            10,
            f"starts with '{start}', which a spreadsheet",
        )
        for name, start in (("equals", "="), ("plus", "+"), ("minus", "-"), ("at", "@"))
    },
}
# One per layer of the loader (reading and YAML, schema, control characters), for the entry
# points that share it.
LAYERS = ("repeated-key", "format-width", "newline-in-value")


def write(tmp_path: Path, content: str | bytes, name: str = "hostile.topology.yml") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def clusterforge(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**ENV, "CLUSTERFORGE_STATE_DIR": str(tmp_path / "state")}
    return subprocess.run(
        [sys.executable, "-m", "clusterforge.cli", *args], capture_output=True, text=True, env=env, cwd=tmp_path
    )


def ansible(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, env=ENV, cwd=PROJECT)


def entry_point(name: str, tmp_path: Path, path: Path) -> subprocess.CompletedProcess:
    if name == "inventory":
        return ansible("ansible-inventory", "-i", str(path), "--list")
    if name == "lab up":
        return clusterforge(tmp_path, "lab", "up", "--topology", str(path))
    extra = {"render": ["-o", str(tmp_path / "out")], "draw": ["-o", str(tmp_path / "fabric.svg")]}
    return clusterforge(tmp_path, "topology", name, *extra.get(name, []), str(path))


def assert_refused(done: subprocess.CompletedProcess, path: Path, case: tuple, exit_code: int = 4):
    _, field, line, says = case
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == exit_code, done.stderr
    where = f"{path}:{line}: " if line else f"{path}: "
    reports = [row for row in done.stderr.splitlines() if where in row and f": {field}: " in row]
    assert reports and says in reports[0], done.stderr


@pytest.mark.parametrize("case", CASES)
def test_validate_refuses(tmp_path, case):
    path = write(tmp_path, CASES[case][0])
    assert_refused(entry_point("validate", tmp_path, path), path, CASES[case])


@pytest.mark.parametrize("command", ["show", "render", "draw", "lab up"])
@pytest.mark.parametrize("case", LAYERS)
def test_every_command_refuses(tmp_path, command, case):
    path = write(tmp_path, CASES[case][0])
    assert_refused(entry_point(command, tmp_path, path), path, CASES[case])
    assert not (tmp_path / "out").exists() and not (tmp_path / "fabric.svg").exists()


@pytest.mark.parametrize("case", LAYERS)
def test_the_inventory_plugin_refuses(tmp_path, case):
    path = write(tmp_path, CASES[case][0])
    assert_refused(entry_point("inventory", tmp_path, path), path, CASES[case], exit_code=1)


def test_a_missing_file_is_named(tmp_path):
    path = tmp_path / "missing.topology.yml"
    for command in ("validate", "lab up"):
        done = entry_point(command, tmp_path, path)
        assert "Traceback" not in done.stderr and done.returncode == 4
        assert str(path) in done.stderr


def test_a_pattern_in_an_error_is_printed_as_it_is(tmp_path):
    # Rich read "[a-z]" as markup and printed '^*$'.
    path = write(tmp_path, tiny("name: dc1", "name: Dc1"))
    done = entry_point("validate", tmp_path, path)
    assert "should match pattern '^[a-z][a-z0-9_]*$'" in done.stderr


def test_markup_in_names_is_printed_as_it_is(tmp_path):
    source = (EXAMPLES / "pcie-roce-small.topology.yml").read_text()
    path = write(tmp_path, source.replace("model: SN3700", "model: '[bold]SN3700[/]'"), "[red]x.topology.yml")
    shown = entry_point("show", tmp_path, path)
    assert shown.returncode == 0, shown.stderr
    assert "[bold]SN3700[/]" in shown.stdout
    rendered = entry_point("render", tmp_path, path)
    assert rendered.returncode == 0, rendered.stderr
    assert f"files written to {tmp_path / 'out'}" in rendered.stdout


def test_a_file_name_with_a_newline_adds_no_line_to_rendered_files(tmp_path):
    path = write(tmp_path, (EXAMPLES / "pcie-roce-small.topology.yml").read_text(), "x\nSwitchName=evil.topology.yml")
    done = entry_point("render", tmp_path, path)
    assert done.returncode == 0, done.stderr
    outputs = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert {p.name for p in outputs} >= {"topology.conf", "hosts.yml", "l40s_server.env"}
    for output in outputs:
        text = output.read_text()
        assert not any(line.startswith("SwitchName=evil") for line in text.splitlines()), output
        if output.suffix not in (".json", ".csv"):  # every other file names its source, escaped
            assert "x\\nSwitchName" in text, output


def test_the_topology_path_is_data_for_ansible_and_the_file_content_is_trusted(tmp_path):
    # A directory named "{{ 7*7 }}" printed 49 (or ran a lookup('pipe') on the controller).
    directory = tmp_path / "{{ 7*7 }}"
    directory.mkdir()
    path = write(directory, TINY + 'ansible:\n  vars:\n    answer: "{{ 6*7 }}"\n', "t.topology.yml")
    static = tmp_path / "static"
    assert clusterforge(tmp_path, "topology", "render", "-o", str(static), str(path)).returncode == 0
    for inventory in (path, static / "inventory" / "hosts.yml"):
        done = ansible(
            "ansible",
            "localhost",
            "-i",
            str(inventory),
            "-m",
            "debug",
            "-a",
            "msg={{ [clusterforge_topology_file, answer] }}",
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.split("=>", 1)[1])["msg"] == [str(path), 42], (inventory, done.stdout)


# --- properties, in process --------------------------------------------------------------------

TEXT_FIELDS = [
    ("cluster", "name"),
    ("cluster", "domain"),
    ("sites", 0, "name"),
    ("roles", "compute", "hostname"),
    ("addressing", "inband"),
]


@settings(max_examples=60, deadline=None, database=None)
@given(spec=st.text(alphabet="0123456789dnxXbcosfeEgG%,_<>^=+- .{}!:", max_size=12))
def test_any_format_spec_gives_valid_names_or_is_refused(tmp_path_factory, spec):
    path = tmp_path_factory.mktemp("spec") / "t.topology.yml"
    path.write_text(tiny('"n{index}"', json.dumps(f"n{{index:{spec}}}")))
    try:
        plan = load(path, links=False)
    except TopologyError as exc:
        assert [problem[0] for problem in exc.problems] == [("roles", "compute", "hostname")], str(exc)
    else:
        assert all(HOSTNAME_PATTERN.fullmatch(host.name) and len(host.name) <= 63 for host in plan.hosts)


@settings(max_examples=60, deadline=None, database=None)
@given(
    field=st.sampled_from(TEXT_FIELDS),
    char=st.characters(categories=["Cc", "Zl", "Zp"]),
    at=st.integers(min_value=0, max_value=20),
)
def test_a_control_character_in_any_field_is_refused_there(tmp_path_factory, field, char, at):
    data = yaml.safe_load(TINY)
    parent = data
    for part in field[:-1]:
        parent = parent[part]
    value = parent[field[-1]]
    parent[field[-1]] = value[:at] + char + value[at:]
    path = tmp_path_factory.mktemp("ctrl") / "t.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))  # escaped: PyYAML folds a raw U+0085
    with pytest.raises(TopologyError) as caught:
        load(path, links=False)
    locations = [problem[0] for problem in caught.value.problems]
    assert locations == [field], str(caught.value)
    assert f"U+{ord(char):04X}" in str(caught.value)
