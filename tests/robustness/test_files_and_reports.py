"""Hostile and careless input to the commands that read and write files: `topology render -o`,
`report` and `check judge`, and the result files playbooks/validate.yml writes.

Each case runs the CLI as a user would and asserts the contract: no traceback, exit 4 with the
offending path named, and no user file lost or written through a planted link. Cases that would
hang or fill memory if the defect came back run in a subprocess with a timeout and a memory cap.
"""

from __future__ import annotations

import copy
import json
import os
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge import cli, errors
from clusterforge.safe_write import MARKER
from clusterforge.validation import report
from clusterforge.validation.result_files import HOST_SCHEMA, RUN_SCHEMA
from tests.integration.conftest import ansible_playbook, local_inventory
from tests.paths import PROJECT

TOPOLOGY = PROJECT / "inventories" / "examples" / "pcie-roce-small.topology.yml"
NCCL_OUTPUT = PROJECT / "tests" / "fixtures" / "nccl_all_reduce_perf" / "h100-8gpu-single-node-bitdeer.txt"

HOST = {
    "schema": HOST_SCHEMA,
    "run_id": "r1",
    "host": "gpu01",
    "node_type": "hgx",
    "groups": ["compute"],
    "results": [
        {
            "module": "nccl_check",
            "status": "pass",
            "scope": "node",
            "label": "all_reduce",
            "hosts": ["gpu01"],
            "checks": [
                {"check": "nccl.all_reduce.busbw", "status": "pass", "measured": 470.7, "expected": 450, "message": ""}
            ],
            "busbw": {"measured": 470.7, "reference": 450.0, "floor": 360.0, "how": "NVLink 4"},
        },
        {"module": "cabling_check", "status": "fail", "error": "MODULE FAILURE"},
    ],
}
RUN = {
    "schema": RUN_SCHEMA,
    "run_id": "r1",
    "pairs": {"rounds": [], "pairs": []},
    "failed_pairs": [["gpu01", "gpu02"]],
    "verdict": {"culprits": ["gpu02"], "cleared": ["gpu01"], "unresolved": [], "untested": []},
}


def clusterforge(capsys, *argv: str) -> tuple[int, str, str]:
    """The CLI in this process: exit code, stdout, stderr. An exception escaping main() is the
    traceback a user would see, so the test fails on it."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def clusterforge_process(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """The CLI in a subprocess that cannot hang the suite (timeout) or take the machine's memory."""

    def cap_memory():
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    return subprocess.run(
        [sys.executable, "-m", "clusterforge.cli", *map(str, argv)],
        input=stdin,
        capture_output=True,
        timeout=60,
        preexec_fn=cap_memory,
        check=False,
    )


def assert_refused(code: int, err: str, *named: object) -> None:
    assert "Traceback" not in err, err
    assert code == errors.EXIT_USAGE, err
    for name in named:
        assert str(name) in err, err


def run_dir(tmp_path: Path, host: dict | None = None, run: dict | None = None) -> Path:
    directory = tmp_path / "results"
    directory.mkdir(parents=True)
    (directory / "gpu01.json").write_text(json.dumps(HOST if host is None else host))
    (directory / "_run.json").write_text(json.dumps(RUN if run is None else run))
    return directory


def test_a_valid_run_reports(tmp_path, capsys):
    """The baseline the hostile cases differ from."""
    code, out, err = clusterforge(capsys, "report", run_dir(tmp_path), "-o", tmp_path / "out")
    assert (code, err) == (0, "")
    assert "run r1: fail (1 nodes)" in out
    assert json.loads((tmp_path / "out" / "report.json").read_text())["bandwidth"][0]["measured"] == 470.7


# --- report: records of the wrong type ----------------------------------------------------------


def put(document: dict, location: str, value) -> dict:
    """A copy of document with the field at location ("results[0].busbw.measured") set to value."""
    changed = copy.deepcopy(document)
    *path, last = location.replace("[", ".").replace("]", "").split(".")
    target = changed
    for key in path:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[int(last) if isinstance(target, list) else last] = value
    return changed


HOST_MUTATIONS = [
    ("host", 3),
    ("node_type", ["hgx"]),
    ("run_id", {"id": 1}),
    ("results", {"gpu_check": []}),
    ("results[0]", ["nccl_check"]),
    ("results[0].module", 7),
    ("results[0].status", True),
    ("results[0].checks", "nccl.all_reduce.busbw"),
    ("results[0].checks[0]", 5),
    ("results[0].checks[0].check", None),
    ("results[0].checks[0].status", 0),
    ("results[0].checks[0].message", ["slow"]),
    ("results[0].scope", 1),
    ("results[0].label", ["all_reduce"]),
    ("results[0].hosts", "gpu01"),
    ("results[0].hosts", [1]),
    ("results[0].busbw", [470.7]),
    ("results[0].busbw.measured", "fast"),
    ("results[0].busbw.measured", True),
    ("results[0].busbw.reference", {"GB/s": 450}),
    ("results[0].busbw.floor", -1),
    ("results[0].busbw.measured", 1e300),  # scaled for the chart it would overflow
]


@pytest.mark.parametrize(("location", "value"), HOST_MUTATIONS, ids=[f"{loc}={val!r}" for loc, val in HOST_MUTATIONS])
def test_a_wrongly_typed_host_record_is_refused(tmp_path, capsys, location, value):
    results = run_dir(tmp_path, host=put(HOST, location, value))
    code, _out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "gpu01.json", location)
    assert not (tmp_path / "out").exists()


RUN_MUTATIONS = [
    ("run_id", 5),
    ("pairs", [["gpu01", "gpu02"]]),
    ("failed_pairs", "gpu01+gpu02"),
    ("failed_pairs[0]", [1, 2]),
    ("verdict", ["gpu02"]),
    ("verdict.cleared", "gpu01"),
    ("verdict.culprits", [None]),
    ("verdict.unresolved", ["gpu01"]),
]


@pytest.mark.parametrize(("location", "value"), RUN_MUTATIONS, ids=[f"{loc}={val!r}" for loc, val in RUN_MUTATIONS])
def test_a_wrongly_typed_run_file_is_refused(tmp_path, capsys, location, value):
    results = run_dir(tmp_path, run=put(RUN, location, value))
    code, _out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "_run.json", location)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_number_json_does_not_allow_is_refused(tmp_path, capsys, number):
    results = run_dir(tmp_path)
    text = json.dumps(HOST).replace('"measured": 470.7, "expected"', f'"measured": {number}, "expected"')
    assert number in text
    (results / "gpu01.json").write_text(text)
    code, _out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "gpu01.json", "finite")


@pytest.mark.parametrize("depth", [500, 100_000])
def test_deep_nesting_is_refused(tmp_path, capsys, depth):
    results = run_dir(tmp_path)
    text = json.dumps(HOST).replace('"measured": 470.7,', '"measured": ' + "[" * depth + "]" * depth + ",")
    (results / "gpu01.json").write_text(text)
    code, _out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "gpu01.json", "nested too deeply")


def test_text_utf8_cannot_hold_is_refused(tmp_path, capsys):
    results = run_dir(tmp_path)
    (results / "gpu01.json").write_text(json.dumps(HOST).replace('"host": "gpu01"', '"host": "gpu\\ud800"'))
    code, _out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "gpu01.json", "lone surrogate")


def test_control_characters_from_a_tool_still_give_parseable_junit(tmp_path, capsys):
    host = put(HOST, "results[0].checks[0].message", "\x1b[31mslow\x1b[0m \x00\x07")
    code, _out, err = clusterforge(capsys, "report", run_dir(tmp_path, host=host), "-o", tmp_path / "out")
    assert (code, err) == (0, "")
    junit = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    assert "slow" in junit.find(".//system-out").text


def locations(value, prefix: str = "") -> list[str]:
    """Every field location in a document, as put() takes them."""
    if isinstance(value, dict):
        items = [(f"{prefix}.{key}" if prefix else str(key), item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [(f"{prefix}[{index}]", item) for index, item in enumerate(value)]
    else:
        return []
    return [found for location, item in items for found in (location, *locations(item, location))]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


SIMPLE_VALUES = [None, 0, -1, 1e12 + 1, "", "x", [], [None], {}, {"x": None}, True]


@pytest.mark.parametrize("which", ["host", "run"])
def test_every_field_with_every_simple_value_is_reported_or_refused(tmp_path, which):
    """Each field the result files have, set in turn to each of SIMPLE_VALUES: the report is written
    or refused with a UsageError, never a crash."""
    document = HOST if which == "host" else RUN
    crashes = []
    for number, (location, value) in enumerate((loc, val) for loc in locations(document) for val in SIMPLE_VALUES):
        results = run_dir(tmp_path / str(number), **{which: put(document, location, value)})
        try:
            report.write_report(report.load_run(results), tmp_path / str(number) / "out")
        except errors.UsageError:
            pass
        except Exception as exc:  # any other exception is the crash this test looks for
            crashes.append(f"{location}={value!r}: {type(exc).__name__}: {exc}")
    assert crashes == []


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.sampled_from(["host", "run"]),
    index=st.integers(min_value=0),
    value=JSON_VALUES,
)
def test_any_value_anywhere_is_reported_or_refused(tmp_path_factory, which, index, value):
    """Whatever a field holds, the report is written or refused with a UsageError, never a crash."""
    document = HOST if which == "host" else RUN
    spots = locations(document)
    changed = put(document, spots[index % len(spots)], value)
    tmp = tmp_path_factory.mktemp("fuzz")
    results = run_dir(tmp, **{which: changed})
    try:
        report.write_report(report.load_run(results), tmp / "out")
    except errors.UsageError:
        return


# --- report: what is in the results directory ---------------------------------------------------


def test_a_symlink_out_of_the_results_directory_is_not_followed(tmp_path, capsys):
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({**HOST, "host": "secret"}))
    results = run_dir(tmp_path)
    (results / "stolen.json").symlink_to(outside)
    code, out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "stolen.json", "symbolic link")
    assert "secret" not in out + err


def test_a_directory_named_like_a_result_is_refused(tmp_path, capsys):
    results = run_dir(tmp_path)
    (results / "gpu02.json").mkdir()
    code, _out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "gpu02.json", "a directory")


def test_a_result_larger_than_the_limit_is_refused(tmp_path, capsys):
    results = run_dir(tmp_path)
    with open(results / "gpu02.json", "wb") as handle:
        handle.truncate(33 * 1024 * 1024)  # sparse: costs no disk
    code, _out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert_refused(code, err, results / "gpu02.json", "larger than 32 MiB")


def test_a_fifo_in_the_results_directory_does_not_hang(tmp_path):
    results = run_dir(tmp_path)
    os.mkfifo(results / "gpu02.json")
    done = clusterforge_process("report", results, "-o", tmp_path / "out")
    assert_refused(done.returncode, done.stderr.decode(), results / "gpu02.json", "a FIFO")


def test_a_link_to_dev_zero_in_the_results_directory_is_refused(tmp_path):
    results = run_dir(tmp_path)
    (results / "gpu02.json").symlink_to("/dev/zero")
    done = clusterforge_process("report", results, "-o", tmp_path / "out")
    assert_refused(done.returncode, done.stderr.decode(), results / "gpu02.json")


def test_markup_in_results_is_printed_and_written_as_text(tmp_path, capsys):
    hostile = "[/bold][link=https://evil.example]<script>alert(1)</script>"
    host = put(put(HOST, "host", hostile), "results[0].checks[0].message", hostile)
    results = run_dir(tmp_path, host=host, run={**RUN, "run_id": hostile})
    code, out, err = clusterforge(capsys, "report", results, "-o", tmp_path / "out")
    assert (code, err) == (0, "")
    assert f"run {hostile}: fail" in out
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- render -o and report -o: the output directory ---------------------------------------------


def render(capsys, outdir: Path, *extra: str):
    return clusterforge(capsys, "topology", "render", TOPOLOGY, "-o", outdir, *extra)


def test_render_refuses_to_replace_a_users_file(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "bom.csv").write_text("my own costing\n")
    code, _out, err = render(capsys, out)
    assert_refused(code, err, out / "bom.csv", "--force")
    assert (out / "bom.csv").read_text() == "my own costing\n"
    assert sorted(p.name for p in out.iterdir()) == ["bom.csv"]  # nothing else written either


def test_render_refuses_a_file_edited_since_it_wrote_it_and_force_replaces_it(tmp_path, capsys):
    out = tmp_path / "out"
    assert render(capsys, out)[0] == 0
    assert render(capsys, out)[0] == 0  # its own files, unchanged: replaced
    (out / "slurm" / "topology.conf").write_text("# tuned by hand\n")
    code, _out, err = render(capsys, out)
    assert_refused(code, err, out / "slurm" / "topology.conf", "changed since clusterforge wrote it")
    assert (out / "slurm" / "topology.conf").read_text() == "# tuned by hand\n"
    assert render(capsys, out, "--force")[0] == 0
    assert (out / "slurm" / "topology.conf").read_text() != "# tuned by hand\n"
    assert render(capsys, out)[0] == 0  # the marker now lists the replaced file


def test_render_keeps_other_files(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "slurm").mkdir(parents=True)
    (out / "slurm" / "slurm.conf").write_text("ClusterName=mine\n")
    assert render(capsys, out)[0] == 0
    assert (out / "slurm" / "slurm.conf").read_text() == "ClusterName=mine\n"


def test_render_does_not_follow_a_link_planted_at_the_old_temporary_name(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (out / ".bom.csv.partial").symlink_to(victim)
    (out / ".summary.json.partial").symlink_to(tmp_path / "created-through-link")
    code, _out, err = render(capsys, out)
    assert (code, err) == (0, "")
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "created-through-link").exists()
    assert (out / "bom.csv").is_file() and not (out / "bom.csv").is_symlink()
    assert not [p for p in out.rglob("*.partial") if not p.is_symlink()]  # no temporary left behind


def test_render_does_not_write_through_a_linked_directory(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "etc-slurm"
    elsewhere.mkdir()
    (out / "slurm").symlink_to(elsewhere)
    code, _out, err = render(capsys, out)
    assert_refused(code, err, out / "slurm", "symbolic link")
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["slurm"]


@pytest.mark.parametrize("planted", ["link", "garbage"])
def test_render_refuses_a_marker_it_did_not_write(tmp_path, capsys, planted):
    out = tmp_path / "out"
    out.mkdir()
    (out / "bom.csv").write_text("mine\n")
    if planted == "link":
        (out / MARKER).symlink_to("/dev/zero")
    else:
        (out / MARKER).write_text('{"schema": "clusterforge.output/1", "files": ["bom.csv"]}')
    code, _out, err = render(capsys, out)
    assert_refused(code, err, out / MARKER)
    assert (out / "bom.csv").read_text() == "mine\n"


def test_render_into_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("notes\n")
    code, _out, err = render(capsys, target)
    assert_refused(code, err, target, "not a directory")
    assert target.read_text() == "notes\n"


def test_report_refuses_to_replace_a_users_file(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("<p>last week's report, annotated</p>\n")
    code, _out, err = clusterforge(capsys, "report", run_dir(tmp_path), "-o", out)
    assert_refused(code, err, out / "report.html", "--force")
    assert (out / "report.html").read_text() == "<p>last week's report, annotated</p>\n"
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]
    code, _out, err = clusterforge(capsys, "report", tmp_path / "results", "-o", out, "--force")
    assert (code, err) == (0, "")
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_render_into_an_empty_output_name_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _out, err = clusterforge(capsys, "topology", "render", TOPOLOGY, "-o", "")
    assert_refused(code, err, "output directory is empty")
    assert list(tmp_path.iterdir()) == []  # nothing scattered into the current directory


@pytest.mark.parametrize("where", ["results", "inside"])
def test_report_into_the_results_directory_it_reads_is_refused(tmp_path, capsys, where):
    results = run_dir(tmp_path)
    before = sorted(p.name for p in results.iterdir())
    out = results if where == "results" else results / "report"
    code, _out, err = clusterforge(capsys, "report", results, "-o", out)
    assert_refused(code, err, results, "into the results directory it reads")
    assert sorted(p.name for p in results.iterdir()) == before


def test_report_into_an_empty_output_name_is_refused(tmp_path, capsys, monkeypatch):
    results = run_dir(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _out, err = clusterforge(capsys, "report", results, "-o", "")
    assert_refused(code, err, "output directory is empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


# --- check judge FILE ---------------------------------------------------------------------------


def test_judge_a_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "nccl.txt"
    os.mkfifo(fifo)
    done = clusterforge_process("check", "judge", "nccl", fifo)
    assert_refused(done.returncode, done.stderr.decode(), fifo, "a FIFO")


def test_judge_dev_zero_is_refused_without_reading_it():
    done = clusterforge_process("check", "judge", "nccl", "/dev/zero")
    assert_refused(done.returncode, done.stderr.decode(), "/dev/zero", "a character device")


def test_judge_a_directory_or_a_huge_file_is_refused(tmp_path, capsys):
    code, _out, err = clusterforge(capsys, "check", "judge", "nccl", tmp_path)
    assert_refused(code, err, tmp_path, "a directory")
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as handle:
        handle.truncate(65 * 1024 * 1024)
    code, _out, err = clusterforge(capsys, "check", "judge", "nccl", huge)
    assert_refused(code, err, huge, "larger than 64 MiB")


def test_judge_still_reads_standard_input():
    done = clusterforge_process(
        "check", "judge", "nccl", "-", "--expect", "nvlink_generation=4", "--json", stdin=NCCL_OUTPUT.read_bytes()
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["status"] == "pass"


def _negated_out_of_place(text: str) -> str:
    """The output with every out-of-place busbw (the 8th column of a data row) negative."""
    lines = []
    for line in text.splitlines():
        tokens = line.split()
        if len(tokens) >= 12 and tokens[0].isdigit():
            tokens[7] = "-" + tokens[7]
            line = "  ".join(tokens)
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_judge_fails_an_output_whose_out_of_place_busbw_is_negative(tmp_path, capsys):
    edited = tmp_path / "negative.txt"
    edited.write_text(_negated_out_of_place(NCCL_OUTPUT.read_text()))
    rows = [line.split() for line in edited.read_text().splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert rows and all(row[7].startswith("-") and not row[11].startswith("-") for row in rows)
    code, out, err = clusterforge(capsys, "check", "judge", "nccl", edited, "--expect", "nvlink_generation=4", "--json")
    assert "Traceback" not in err
    assert code == errors.EXIT_HOSTS_FAILED, out + err
    verdict = json.loads(out)
    assert verdict["status"] == "fail"
    assert any("negative" in check["message"] for check in verdict["checks"])


@pytest.mark.parametrize(
    ("expectation", "allowed"),
    [
        ("expected_busbw=0", "above 0"),
        ("expected_busbw=-3", "above 0"),
        ("nvlink_generation=9", "one of 3, 4, 5"),
        ("efficiency_floor=-5", "above 0 and at most 1"),
        ("efficiency_floor=0", "above 0 and at most 1"),
        ("rails=0", "at least 1"),
    ],
)
def test_judge_refuses_an_expectation_out_of_range_with_the_allowed_range(capsys, expectation, allowed):
    extra = ["--expect", "nic_rate_gbps=400"] if expectation.startswith("rails") else []
    code, _out, err = clusterforge(capsys, "check", "judge", "nccl", NCCL_OUTPUT, "--expect", expectation, *extra)
    assert_refused(code, err, expectation.partition("=")[0], allowed)


def test_judge_refuses_a_list_of_the_wrong_elements_without_a_type_error(tmp_path, capsys):
    ibstat = next((PROJECT / "tests" / "fixtures" / "ibstat").glob("*.txt"))
    code, _out, err = clusterforge(capsys, "check", "judge", "ibstat", ibstat, "--expect", "devices=[1,2]")
    assert_refused(code, err, "devices must be a list of str", "[1, 2]")


def test_judge_prints_file_names_as_text_not_markup(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "[").mkdir()
    (tmp_path / "[" / "bold][red]x.txt").write_bytes(NCCL_OUTPUT.read_bytes())
    code, out, err = clusterforge(
        capsys, "check", "judge", "nccl", "[/bold][red]x.txt", "--expect", "nvlink_generation=4"
    )
    assert (code, err) == (0, "")
    assert "nccl: [/bold][red]x.txt" in out


# --- playbooks/validate.yml: host names are file names on the controller -----------------------


def test_validate_refuses_a_host_name_that_leaves_the_run_directory(tmp_path):
    reports = tmp_path / "a" / "b" / "reports"
    inventory = local_inventory(tmp_path, {"../../x": "", "good": ""})
    done = ansible_playbook(
        inventory,
        PROJECT / "playbooks" / "validate.yml",
        "-e",
        f"clusterforge_report_dir={reports}",
        "-e",
        "clusterforge_validation_run_id=r1",
        env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-2000:]  # a host failed
    output = done.stdout + done.stderr
    assert 'host "../../x": its results are written to <run dir>/<host>.json' in output
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.json"))
    assert written == ["a/b/reports/r1/_run.json", "a/b/reports/r1/good.json"]
