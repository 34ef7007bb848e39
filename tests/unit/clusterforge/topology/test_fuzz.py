"""Malformed topology files: load() returns a ClusterPlan or raises TopologyError, nothing else."""

from __future__ import annotations

import contextlib
import copy
import signal
import tempfile
import traceback
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.topology import ClusterPlan, TopologyError, load
from tests.paths import PROJECT
from tests.unit.clusterforge.topology.test_fabric import assert_cabling_is_sound

EXAMPLE = PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml"
SUPERPOD_TEXT = EXAMPLE.read_text()
SUPERPOD = yaml.safe_load(SUPERPOD_TEXT)
SLOW_S = 10  # a load that takes longer than this is a hang, and a failure

FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def _from_yaml_constructor(exc: BaseException) -> bool:
    return any(frame.filename.endswith("yaml/constructor.py") for frame in traceback.extract_tb(exc.__traceback__))


# Crashes already reported and pinned by the strict xfail tests at the end of this file (the keys
# name them). Remove an entry when its fix lands: the xfail test then passes, and strict mode says so.
KNOWN_CRASHES: dict = {}


class Slow(Exception):
    pass


@contextlib.contextmanager
def within(seconds: float):
    """Raise Slow in the main thread when the block runs longer than `seconds`."""

    def alarm(signum, frame):
        if frame is not None and frame.f_code.co_name in ("gc_callback", "__del__"):
            return  # raised here it would be swallowed (hypothesis times the collector); it fires again
        raise Slow(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    # Repeat every 0.25 s until the block ends: see alarm().
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.25)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(text: str | bytes):
    """Load `text` from a file; fail on anything but a ClusterPlan or a well-formed TopologyError,
    or if loading without links (the inventory and `topology validate`) judges it otherwise."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.topology.yml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        found = _outcome(path)
        if isinstance(found, (ClusterPlan, TopologyError)):
            try:
                with within(SLOW_S):
                    load(path, links=False)
            except TopologyError as light:
                assert isinstance(found, TopologyError) and light.problems == found.problems
            else:
                assert isinstance(found, ClusterPlan)
        return found


def _outcome(path: Path):
    try:
        with within(SLOW_S):
            plan = load(path)
    except TopologyError as exc:
        assert exc.problems
        for location, line, message in exc.problems:
            assert isinstance(location, tuple) and message
            assert line is None or line >= 1
        assert str(exc).startswith(str(path)) and str(exc).count(str(path)) >= len(exc.problems)
        return exc
    except Exception as exc:
        if any(known(exc) for known in KNOWN_CRASHES.values()):
            return exc
        raise
    assert isinstance(plan, ClusterPlan)
    return plan


# --- strategies ------------------------------------------------------------------------------------

texts = st.text(st.characters(codec="utf-8"), max_size=20)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 100),
    st.sampled_from([0, -1, 2**31, 2**63, 10**12, 10**100, -(10**9)]),
    st.floats(),
    texts,
    st.sampled_from(["", "{index}", "a{index}", "x" * 300, "10.0.0.0/8", "0.0.0.0/0", "dgx_h100", "compute"]),
)
keys = st.one_of(texts, st.sampled_from(["count", "fabric", "rails", "hcas", "gpu", "name"]), st.integers(-1, 3))
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=8,
)


def paths(data, prefix=()):
    """Every path into a document: mapping keys and list indexes, containers included."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, (*prefix, index))


def mutate(data, operation: str, choice: int, key, value):
    """Delete, replace or add at the `choice`-th path of `data` (modulo the paths there are)."""
    found = list(paths(data))
    path = found[choice % len(found)]
    if not path:
        return value if operation == "replace" else data
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if operation == "delete":
        del parent[last]
    elif operation == "replace":
        parent[last] = value
    elif isinstance(parent[last], dict):
        parent[last][key] = value
    elif isinstance(parent[last], list):
        parent[last].insert(choice % (len(parent[last]) + 1), value)
    else:
        parent[last] = [parent[last], value]
    return data


mutations = st.lists(
    st.tuples(st.sampled_from(["delete", "replace", "add"]), st.integers(0, 10_000), keys, values),
    min_size=1,
    max_size=4,
)


# --- the fuzz tests ----------------------------------------------------------------------------------


@FUZZ
@given(mutations)
def test_mutated_superpod(steps):
    data = copy.deepcopy(SUPERPOD)
    for step in steps:
        data = mutate(data, *step)
    outcome(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


@FUZZ
@given(values)
def test_random_documents(data):
    outcome(yaml.safe_dump(data, allow_unicode=True))


YAML_ALPHABET = st.sampled_from([*"abcxyz019 :-[]{},#&*!|>'\"%@`?\n\t.~", "\n  ", ": ", "- ", "---", "<<"])


@FUZZ
@given(st.lists(YAML_ALPHABET, max_size=60).map("".join))
def test_random_yaml_text(text):
    outcome(text)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 200), st.sampled_from(["drop", "dup", "indent", "dedent", "cut"]))))
def test_edited_superpod_text(edits):
    lines = SUPERPOD_TEXT.splitlines()
    for where, edit in edits:
        if not lines:
            break
        i = where % len(lines)
        if edit == "drop":
            del lines[i]
        elif edit == "dup":
            lines.insert(i, lines[i])
        elif edit == "indent":
            lines[i] = "  " + lines[i]
        elif edit == "dedent":
            lines[i] = lines[i].removeprefix("  ")
        else:
            lines[i] = lines[i][: len(lines[i]) // 2]
    outcome("\n".join(lines) + "\n")


@st.composite
def clusters(draw) -> dict:
    """Well-formed files of random shape: whatever the generators accept must be cabled soundly."""
    kind = draw(st.sampled_from(["fat_tree", "rail_optimized_fat_tree", "dragonfly"]))
    hcas = draw(st.integers(2, 8) if kind == "rail_optimized_fat_tree" else st.integers(1, 4))
    fabric = {
        "purpose": "compute",
        "link_layer": "infiniband",
        "topology": kind,
        "switch": {"model": "x", "radix": draw(st.integers(4, 72)), "port_speed_gbps": 400},
        "oversubscription": draw(st.sampled_from([1, 1.5, 2, 3, 5, 16])),
    }
    if kind == "rail_optimized_fat_tree":
        fabric["rails"] = hcas
    if kind == "dragonfly":
        p, a, h = (draw(st.integers(1, 8)) for _ in range(3))
        fabric["dragonfly"] = dict(
            terminals_per_router=p, routers_per_group=a, global_links_per_router=h, groups=draw(st.integers(2, 20))
        )
    hca = [
        {"device": f"mlx5_{i}", "netdev": f"ib{i}", "pci": f"0000:{i + 1:02x}:00.0", "rate_gbps": 400}
        for i in range(hcas)
    ]
    compute = {"node_type": "node", "hostname": "n{index:05d}"}
    head = {
        "node_type": draw(st.sampled_from(["svc", "node"])),
        "count": draw(st.integers(0, 3)),
        "hostname": "h{index}",
    }
    data = {
        "cluster": {"name": "t", "domain": "t.example.com"},
        "sites": [{"name": "dc1"}],
        "node_types": {"node": {"hcas": hca}, "svc": {}},
        "roles": {"compute": compute, "head": head},
        "fabrics": {"compute": fabric},
        "addressing": {"inband": "10.0.0.0/8"},
    }
    if draw(st.booleans()):
        compute["placement"] = "scalable_units"
        data["scalable_units"] = {
            "count": draw(st.integers(1, 12)),
            "nodes_per_unit": draw(st.integers(1, 40)),
            "reserved_slots": draw(st.sampled_from([[], [{"unit": 1, "slot": 1}]])),
        }
    else:
        compute["count"] = draw(st.integers(0, 400))
    return data


@FUZZ
@given(clusters())
def test_generated_fabrics_are_sound_or_refused(data):
    plan = outcome(yaml.safe_dump(data, sort_keys=False))
    if not isinstance(plan, ClusterPlan):
        return
    fabric = plan.fabrics["compute"]
    cabled = {h.name for h in plan.hosts if plan.topology.node_types[h.node_type].hcas}
    assert set(fabric.attachments) == cabled
    if fabric.switches:
        assert_cabling_is_sound(fabric)


def test_the_unmutated_example_loads():
    assert isinstance(outcome(SUPERPOD_TEXT), ClusterPlan)


# --- regressions found by fuzzing, pinned until fixed ---------------------------------------------


def superpod_with(path: str, value) -> str:
    data = copy.deepcopy(SUPERPOD)
    *parents, last = path.split(".")
    target = data
    for part in parents:
        target = target[part]
    target[last] = value
    return yaml.safe_dump(data, sort_keys=False)


def load_text(tmp_path: Path, text: str | bytes):
    path = tmp_path / "bad.topology.yml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return load(path)


CRASHES = {
    # Role._hostname_ends_in_index indexes fields[-1] of an empty parse.
    "empty-hostname": (superpod_with("roles.head.hostname", ""), IndexError),
    # The template's format spec is only tried when the hosts are expanded.
    "hostname-format-spec": (superpod_with("roles.head.hostname", "h{index:s}"), ValueError),
    "hostname-format-spec-site": (superpod_with("roles.head.hostname", "h{site:d}{index}"), ValueError),
    # source.load_yaml catches YAMLError, but PyYAML's constructors raise plain ValueError.
    "impossible-date": ("cluster: 2001-02-30\n", ValueError),
    "impossible-time": ("cluster: 2001-01-01 25:00:00\n", ValueError),
    "int-tag": ("cluster: !!int abc\n", ValueError),
    "float-tag": ("cluster: !!float abc\n", ValueError),
    "int-over-4300-digits": ("cluster: " + "1" * 5000 + "\n", ValueError),
    # read_text() raises UnicodeDecodeError, a ValueError, not the OSError that is caught.
    "not-utf8": (b"cluster: \xff\xfe\n", UnicodeDecodeError),
    # _collect_lines follows aliases into themselves.
    "recursive-alias": ("a: &x [*x]\n", RecursionError),
    "recursive-alias-map": ("cluster: &x {name: *x}\n", RecursionError),
}


@pytest.mark.parametrize(
    ("text", "crash"),
    [pytest.param(text, crash) for text, crash in CRASHES.values()],
    ids=CRASHES.keys(),
)
def test_crash_regressions(tmp_path, text, crash):
    with pytest.raises(TopologyError):
        load_text(tmp_path, text)


def _billion_laughs(levels: int) -> str:
    text = "l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n"
    for i in range(1, levels + 1):
        text += f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n"
    return text


_DRAGONFLY = {
    "topology": "dragonfly",
    "dragonfly": {"terminals_per_router": 1, "routers_per_group": 50, "global_links_per_router": 50, "groups": 2501},
    "switch": {"model": "x", "radix": 100, "port_speed_gbps": 400},
}
# Each takes 15-25 s and 1-2 GB here before load() answers; kept that small in case the timer fails.
HANGS = {
    # Within every schema bound: 125,050 routers and 3 million local links are generated before
    # the out-of-band subnet is found far too small for them.
    "dragonfly-groups": superpod_with("fabrics.compute", {**SUPERPOD["fabrics"]["compute"], **_DRAGONFLY}),
    # Aliases of aliases: _collect_lines walks a million paths through 7 small lists.
    "billion-laughs": _billion_laughs(6),
}


@pytest.mark.parametrize("path", ["roles.head.count", "scalable_units.count"])
def test_a_huge_host_count_is_refused_at_once(tmp_path, path):
    with within(5), pytest.raises(TopologyError):
        load_text(tmp_path, superpod_with(path, 10**9))


@pytest.mark.parametrize("text", HANGS.values(), ids=HANGS.keys())
def test_small_files_asking_for_huge_work_are_refused_quickly(tmp_path, text):
    with within(1.5), pytest.raises(TopologyError):
        load_text(tmp_path, text)
