"""The HTML report read back as a browser's parser reads it: colours, cut cells, summaries, the
header, failures on the cabling plan, and the pairs section; and the summaries in JUnit and
`clusterforge check judge`."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from clusterforge.cli import check as check_cli
from clusterforge.cli import main
from clusterforge.validation import report
from clusterforge.validation.summary import cut, summarize
from tests.paths import PROJECT
from tests.unit.clusterforge.validation.test_report import host_file, judged, record
from tests.unit.clusterforge.validation.test_report import run_dir as run_dir

SUPERPOD = PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml"
VOID = {"meta", "br", "link", "img", "input", "hr", "col"}


class Element:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element | str] = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self, tag: str | None = None, cls: str | None = None):
        for child in self.children:
            if isinstance(child, Element):
                if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                    yield child
                yield from child.iter(tag, cls)


class Tree(HTMLParser):
    """The page as elements, entities decoded: what a reader sees in each cell."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.current = Element("root", {}, None)
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None, f"</{tag}> closes nothing"
        self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def page_of(run: report.Run, tmp_path: Path) -> tuple[str, Element]:
    page = report.write_report(run, tmp_path / "out")["html"].read_text()
    return page, Tree(page).root


def checks_of(root: Element, host: str) -> dict[str, list[str]]:
    """The cells of each check row of host's table under "Checks per node"."""
    details = next(d for d in root.iter("details") if next(d.iter("summary")).text().split()[0] == host)
    rows = [[td.text() for td in tr.iter("td")] for tr in details.iter("tr", "check")]
    return {cells[1]: cells for cells in rows}


def css_rules(page: str) -> dict[str, str]:
    style = page[page.index("<style>") + 7 : page.index("</style>")]
    rules = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", style):
        for selector in selectors.split(","):
            rules[selector.strip()] = body
    return rules


def luminance(colour: str) -> float:
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_badges_are_coloured_and_rows_only_tinted(run_dir, tmp_path):
    page, root = page_of(report.load_run(run_dir), tmp_path)
    rules = css_rules(page)
    for status in ("pass", "warn", "fail", "skipped", "unreachable"):
        badge = re.search(r"background:(#[0-9a-f]{6})", rules[f".status.{status}"])[1]
        row = re.search(r"background:(#[0-9a-f]{6})", rules[f"tr.node.{status} td"])[1]
        assert luminance(badge) < 0.5, f"{status} badge {badge} is dark, its white text readable"
        assert luminance(row) > 0.9, f"{status} row tint {row} is light, its dark text readable"
    # No rule colours a bare status class: a row of that class would be filled whole.
    assert not {selector for selector in rules if re.fullmatch(r"\.(pass|warn|fail|skipped|unreachable)", selector)}
    row = next(r for r in root.iter("tr", "node") if r.attrs["id"] == "node-gpu01")
    assert "fail" in row.classes
    badges = list(row.iter("span", "status"))
    assert badges and all("fail" in b.classes or "warn" in b.classes for b in badges)


def test_cells_are_cut_before_escaping_with_an_ellipsis_and_null_is_a_dash(run_dir, tmp_path):
    message = 'bad "quoted" value & <tag> ' * 40
    checks = [
        {"check": "gpu.fabric", "status": "fail", "measured": None, "expected": None, "message": message},
        {"check": "gpu.ecc", "status": "fail", "measured": {"x": '"' * 900}, "expected": "0", "message": "m"},
    ]
    host_file(run_dir, "gpu03", [record("gpu_check", checks)])
    page, root = page_of(report.load_run(run_dir), tmp_path)
    assert not re.search(r"&[a-z]{1,5}(?![a-z;])", page.replace("&amp;", "").replace("&quot;", "")), "a cut entity"
    row = next(r for r in root.iter("tr", "node") if r.attrs["id"] == "node-gpu03")
    notes = next(row.iter("td", "msg")).text()
    assert "\u2026" in notes and '"quoted"' in notes and "&quo" not in notes
    cells = checks_of(root, "gpu03")["gpu.fabric"]
    assert cells[3] == "-" and cells[4] == "-" and cells[6] == "-"  # measured, expected and raw null
    assert cells[5].endswith("\u2026") and len(cells[5]) == 600
    raw_cell = checks_of(root, "gpu03")["gpu.ecc"][6]
    assert len(raw_cell) == 400 and raw_cell.endswith("\u2026") and set(raw_cell[10:-1]) == {'"', "\\"}
    assert "null" not in {td.text() for td in root.iter("td")}


def test_measured_shows_a_summary_next_to_the_raw_value(run_dir, tmp_path):
    _, root = page_of(report.load_run(run_dir), tmp_path)
    rows = checks_of(root, "gpu01")
    assert rows["gpu.model"][3] == "8x NVIDIA H100 80GB HBM3"
    assert rows["gpu.pcie"][3] == "8/8 Gen5 x16"
    assert rows["gpu.temperature"][3] == "29-32 C (8 GPUs)"
    assert rows["gpu.throttle"][3] == "8/8 hw_power_brake_slowdown, hw_slowdown"
    assert rows["gpu.pcie"][6].startswith('{"00000000:19:00.0"')  # the raw value stays beside it


def test_summaries_of_each_shape():
    assert summarize("gpu.count", 8) == "8 GPUs"
    assert summarize("gpu.temperature", {"a": 30}) == "30 C"
    assert summarize("ib.rate", {"mlx5_0/1": 400.0, "mlx5_1/1": 200.0}) == "200-400 Gb/s (2 ports)"
    assert summarize("ib.state", {"a": "Active", "b": "Down", "c": "Active"}) == "2/3 Active; 1/3 Down"
    assert summarize("gpu.pcie", {"a": {"gen": 1, "gen_max": 5, "width": 16, "width_max": 16}}) == (
        "1/1 Gen1 x16 of Gen5 x16"
    )
    assert summarize("gpu.fabric", {"a": {"state": None, "status": None}}) == "not reported (1 GPUs)"
    assert summarize("gpu.ecc", {"a": {"volatile_uncorrectable": 2, "aggregate_uncorrectable": 0}}) == (
        "1/1 volatile_uncorrectable 2"
    )
    assert summarize("nccl.all_reduce.busbw", 470.734) == "470.73 GB/s"
    assert summarize("gpu.xid", []) == "none"
    assert summarize("x", None) == summarize("x", "") == "-"
    assert len(summarize("x", "y" * 500)) == 120 and summarize("x", "y" * 500).endswith("\u2026")
    assert cut("abc", 3) == "abc" and cut("abcd", 3) == "ab\u2026"


def test_the_acs_summary_names_the_redirected_pair_and_port():
    """pcie.acs on the real rccl#547 tree, the ACS block moved to the switch port (as in test_acs.py)."""
    from tests.unit.plugins.module_utils.samples import load  # noqa: I001 (first: it puts module_utils on the path)
    from ansible.module_utils.acs_judge import judge_acs
    from ansible.module_utils.lspci import parse_lspci

    text = load("lspci_vvv", "amd-mi100-connectx6-pmc-switch-root-port-acs-vvv-excerpt-and-tv-rccl-547.txt")
    bad = judge_acs(parse_lspci(text.replace("40:01.1 PCI bridge", "44:01.0 PCI bridge")), {})
    assert summarize(bad.check, bad.measured, 200) == (
        "1/2 GPU-NIC pairs redirected: 0000:45:00.0-0000:4a:00.0 at 0000:44:01.0"
    )
    unknown = judge_acs(parse_lspci(text), {})
    assert (
        summarize(unknown.check, unknown.measured) == "2 GPU-NIC pairs, none redirected (2 with ports of unknown ACS)"
    )


def test_junit_and_json_carry_the_summary(run_dir, tmp_path):
    written = report.write_report(report.load_run(run_dir), tmp_path / "out")
    root = ET.parse(written["junit"]).getroot()
    throttle = root.find("testsuite[@name='gpu01']/testcase[@name='gpu.throttle']/failure")
    assert throttle.text.startswith("measured: 8/8 hw_power_brake_slowdown, hw_slowdown\nraw: {")
    document = json.loads(written["json"].read_text())
    gpu01 = next(n for n in document["nodes"] if n["host"] == "gpu01")
    assert next(c for c in gpu01["checks"] if c["check"] == "gpu.pcie")["summary"] == "8/8 Gen5 x16"
    assert document["header"]["versions"]["clusterforge"]


def test_check_judge_shows_the_summary(capsys, monkeypatch):
    monkeypatch.setattr(check_cli, "console", Console(width=200))
    path = PROJECT / "tests/fixtures/nvidia-smi_query/h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt"
    main(["check", "judge", "nvidia-smi-q", str(path), "--expect", "gpu_count=8"])
    out = capsys.readouterr().out
    assert "8x NVIDIA H100 80GB HBM3" in out and "8/8 Gen5 x16" in out
    main(["check", "judge", "nvidia-smi-q", str(path), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert {c["check"]: c["summary"] for c in document["checks"]}["gpu.temperature"] == "29-32 C (8 GPUs)"


@pytest.fixture
def superpod_run(tmp_path) -> Path:
    """dgx001 with three HCAs down (ibstat), dgx001+dgx040 a failed pair; no topology in the run."""
    directory = tmp_path / "20250102T000000Z"
    directory.mkdir()
    ib = judged("ibstat", "ibstat/h100-ndr400-ib-active-eth-down-disabled-gpud.txt", {"rate": 400})
    down = {
        "check": "ib.phys_state",
        "status": "fail",
        "measured": {"mlx5_0/1": "LinkUp", "mlx5_3/1": "Polling"},
        "expected": "LinkUp",
        "message": "mlx5_3/1: physical state Polling",
    }
    host_file(directory, "dgx001", [record("ib_check", ib), record("ib_check", [down])], "dgx_h100")
    host_file(directory, "dgx040", [record("ib_check", [])], "dgx_h100")
    run = {
        "schema": report.RUN_SCHEMA,
        "run_id": "20250102T000000Z",
        "pairs": {"pairs": [["dgx001", "dgx040"]]},
        "failed_pairs": [["dgx001", "dgx040"]],
        "verdict": {"culprits": [], "cleared": [], "unresolved": [["dgx001", "dgx040"]], "untested": []},
    }
    (directory / "_run.json").write_text(json.dumps(run))
    return directory


def test_header_names_the_cluster_topology_time_and_versions(superpod_run, tmp_path):
    _, root = page_of(report.load_run(superpod_run, topology=SUPERPOD), tmp_path)
    meta = next(root.iter("dl", "meta"))
    terms = [dt.text() for dt in meta.iter("dt")]
    values = dict(zip(terms, [dd.text() for dd in meta.iter("dd")], strict=True))
    assert values["cluster"] == "superpod"
    assert values["topology"] == str(SUPERPOD)
    assert values["run"] == "20250102T000000Z"
    assert values["started"] == "2025-01-02T00:00:00Z"  # from the run id validate.yml gives
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", values["generated"])
    assert values["versions"].startswith("clusterforge ") and "ansible-core 2." in values["versions"]
    # The run id once on the page, in the header (the browser tab names it too).
    assert next(root.iter("h1")).text() == "clusterforge validation superpod fail"
    assert next(root.iter("title")).text() == "clusterforge validation superpod 20250102T000000Z"


def _check(name: str, status: str, message: str = "") -> dict:
    return {"check": name, "status": status, "measured": None, "expected": None, "message": message}


def _nodes_run(tmp_path: Path, passing: int) -> Path:
    """bad01 failing, hw01 with nothing to check (no hardware), and `passing` nodes that pass."""
    directory = tmp_path / "20250103T000000Z"
    directory.mkdir()
    no_hw = "skipped: no hardware"
    host_file(directory, "bad01", [record("gpu_check", [_check("gpu.count", "fail", "7 of 8 GPUs")])])
    host_file(
        directory,
        "hw01",
        [record("gpu_check", [_check("gpu.count", "skipped", no_hw), _check("gpu.model", "skipped", no_hw)])],
    )
    for index in range(passing):
        host_file(
            directory,
            f"ok{index:02d}",
            [record("gpu_check", [_check("gpu.count", "pass"), _check("nccl.all_reduce", "skipped", "no NCCL tests")])],
        )
    return directory


def _row(root: Element, host: str) -> list[str]:
    row = next(r for r in root.iter("tr", "node") if r.attrs["id"] == f"node-{host}")
    return [td.text() for td in row.iter("td")]


def test_failing_or_warning_says_none_when_nothing_did_and_skipped_checks_are_apart(tmp_path):
    _, root = page_of(report.load_run(_nodes_run(tmp_path, passing=1)), tmp_path)
    heads = [th.text() for th in next(root.iter("table")).iter("th")]
    assert heads[-2:] == ["failing or warning checks", "skipped checks"]
    assert _row(root, "hw01")[-2:] == ["none", "skipped: no hardware: gpu.count, gpu.model"]
    assert _row(root, "ok00")[-2:] == ["none", "no NCCL tests: nccl.all_reduce"]
    bad = _row(root, "bad01")
    assert bad[-2].startswith("fail gpu.count") and "7 of 8 GPUs" in bad[-2] and bad[-1] == "none"
    # Nothing measured, said in one style: a sentence each.
    assert next(e for e in root.iter() if e.attrs.get("id") == "bandwidth").text() == "No NCCL bandwidth measured."
    assert next(e for e in root.iter() if e.attrs.get("id") == "pairs").text() == "No NCCL pairs ran."


@pytest.mark.parametrize(("passing", "opened"), [(1, {"bad01", "hw01", "ok00"}), (3, {"bad01"})])
def test_failing_nodes_checks_are_open_and_every_nodes_when_few(tmp_path, passing, opened):
    _, root = page_of(report.load_run(_nodes_run(tmp_path, passing)), tmp_path)
    shown = {next(d.iter("summary")).text().split()[0]: "open" in d.attrs for d in root.iter("details")}
    assert len(shown) == passing + 2
    assert {host for host, is_open in shown.items() if is_open} == opened


def test_paths_under_the_home_directory_read_as_in_the_run_summary(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _, root = page_of(report.load_run(_nodes_run(tmp_path, passing=0)), tmp_path)
    meta = next(root.iter("dl", "meta"))
    values = dict(zip([dt.text() for dt in meta.iter("dt")], [dd.text() for dd in meta.iter("dd")], strict=True))
    assert values["results"] == "~/20250103T000000Z"


def test_hca_and_pair_failures_are_placed_on_the_cabling_plan(superpod_run, tmp_path):
    _, root = page_of(report.load_run(superpod_run, topology=SUPERPOD), tmp_path)
    row = next(r for r in root.iter("tr", "node") if r.attrs["id"] == "node-dgx001")
    notes = next(row.iter("td", "msg")).text()
    # The DGX's mlx5_3 is its rail 2 HCA: leaf r2 of SU 1, port 1 (the first DGX slot).
    polling = notes[notes.index("ib.phys_state: 1/2 LinkUp") :]
    assert "mlx5_3/1: rail 2, compute-su1-r2-leaf1 port 1" in polling
    assert "mlx5_0/1" not in polling  # only the ports the failure names
    # ibstat's failing ports are Ethernet ports the plan does not cable, and it says so.
    assert "mlx5_2/1: not in the cabling plan" in notes[notes.index("ib.state") :]
    assert len(list(root.iter("table", "pair-rails"))) == 1  # failed and unresolved: one table
    pair = next(root.iter("table", "pair-rails"))
    rails = [[td.text() for td in tr.iter("td")] for tr in pair.iter("tr") if list(tr.iter("td"))]
    assert len(rails) == 8
    assert rails[0][0] == "1" and rails[0][1] == "dgx001 mlx5_0 \u2192 compute-su1-r1-leaf1 port 1"
    assert rails[0][2].startswith("dgx040 mlx5_0 \u2192 compute-su2-r1-leaf1")
    assert rails[0][3] == "through the spines"


def test_without_a_topology_the_report_says_nothing_of_the_plan(superpod_run, tmp_path):
    page, root = page_of(report.load_run(superpod_run), tmp_path)
    assert "pair-rails" not in page and "rail 1" not in page
    values = [dd.text() for dd in next(root.iter("dl", "meta")).iter("dd")]
    assert values[0] == "-"  # no cluster name


def test_no_pairs_ran(run_dir, tmp_path):
    (run_dir / "_run.json").unlink()
    data = json.loads((run_dir / "gpu02.json").read_text())
    data["results"] = [r for r in data["results"] if r.get("scope") != "pair"]
    (run_dir / "gpu02.json").write_text(json.dumps(data))
    _, root = page_of(report.load_run(run_dir), tmp_path)
    assert next(e for e in root.iter() if e.attrs.get("id") == "pairs").text() == "No NCCL pairs ran."


def test_report_command_takes_the_topology(superpod_run, tmp_path, capsys):
    assert main(["report", str(superpod_run), "-o", str(tmp_path / "o"), "--topology", str(SUPERPOD)]) == 0
    assert "compute-su1-r1-leaf1" in (tmp_path / "o" / "report.html").read_text()


def _sample_report(out: Path) -> Path:
    spec = importlib.util.spec_from_file_location("sample_report", PROJECT / "tools" / "sample_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(out)


def test_the_sample_report_script_places_the_polling_hca(tmp_path):
    page = _sample_report(tmp_path).read_text()
    notes = next(Tree(page).root.iter("td", "msg")).text()
    assert "mlx5_3/1: rail 2, compute-su1-r2-leaf1 port 1" in notes
    # Made from recordings, not from nodes: the page says so (the screenshot in docs/ shows it).
    assert page.count('<span class="origin">replayed from recorded outputs</span>') > 3


def test_the_report_renders_in_headless_chromium(tmp_path):
    # A real browser, never skipped: .ci/lab-host-setup.sh installs Debian's chromium.
    assert shutil.which("chromium"), "chromium is missing: run .ci/lab-host-setup.sh (or apt-get install chromium)"
    html_file = _sample_report(tmp_path)
    png = tmp_path / "report.png"
    script = PROJECT / "tools" / "report_screenshot.sh"
    subprocess.run(["bash", str(script), str(html_file), str(png), "1280x1240"], check=True, timeout=120)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 1240) and len(data) > 50_000  # a page drawn, not a blank one


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)


@given(check=st.sampled_from(["gpu.pcie", "gpu.model", "gpu.temperature", "ib.rate", "x"]), measured=JSON)
@settings(max_examples=150, deadline=None)
def test_any_measured_value_summarises_in_at_most_the_limit(check, measured):
    text = summarize(check, measured)
    assert isinstance(text, str) and 0 < len(text) <= 120
