"""Reports of a validation run: one JSON document, JUnit XML and a self-contained HTML page.

Input: the run directory playbooks/validate.yml writes on the controller (read as untrusted input
and validated by clusterforge.validation.result_files),

    <report dir>/<run id>/<host>.json   {"schema": "clusterforge.validation.host/1", "host": ...,
                                         "results": [{"module": "gpu_check", "status": ...,
                                                      "checks": [{check, status, measured,
                                                                  expected, message}], ...}]}
    <report dir>/<run id>/_run.json     the NCCL pairs, failed pairs, bisection runs and verdict

A host that became unreachable during the run has ``"unreachable": "<why>"`` in its file (and the
results it recorded before); its status is ``unreachable``, which fails the run like a failed node.

A node's verdict follows clusterforge.validation.host_verdict, the rule the playbook applies too:
the worst of its checks (all skipped stays skipped, never pass), where a failed pair run does not
count against a node the bisection cleared. A module run that returned no verdict (it crashed)
shows as a failed check ``<module>.error``.
"""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clusterforge.errors import UsageError
from clusterforge.paths import home
from clusterforge.safe_write import write_tree
from clusterforge.text import xml_safe
from clusterforge.validation import cabling_map, rails
from clusterforge.validation.cabling_map import Cabling
from clusterforge.validation.host_verdict import counts_against, crashed, host_verdict, verdicts
from clusterforge.validation.result_files import HOST_SCHEMA as HOST_SCHEMA  # re-exported: the report's input
from clusterforge.validation.result_files import RUN_SCHEMA as RUN_SCHEMA
from clusterforge.validation.result_files import read_host_file, read_run_file
from clusterforge.validation.summary import NONE, cut, summarize

REPORT_SCHEMA = "clusterforge.validation.report/1"
STATUSES = verdicts.STATUSES
# A node's status besides the check verdicts: it could not be reached, so nothing says it is good.
UNREACHABLE = "unreachable"
NODE_STATUSES = (verdicts.FAIL, UNREACHABLE, *(s for s in STATUSES if s != verdicts.FAIL))
# What the report says where nothing was measured: sentences, in one style.
NO_BANDWIDTH = "No NCCL bandwidth measured."
NO_PAIRS = "No NCCL pairs ran."
# Up to this many nodes, every node's checks are open on the first screen.
OPEN_ALL_UP_TO = 4
COLOURS = {"pass": "#2e7d32", "warn": "#e65100", "fail": "#c62828", "skipped": "#757575", UNREACHABLE: "#4a148c"}


@dataclass
class Check:
    host: str
    module: str
    check: str
    status: str
    measured: Any
    expected: Any
    message: str
    scope: str | None = None  # node, pair or probe for NCCL runs
    counted: bool = True  # False: a pair failure of a node the bisection cleared
    summary: str = ""  # measured in a few words (clusterforge.validation.summary)
    origin: str = verdicts.LIVE  # or verdicts.REPLAYED: judged from recorded outputs, not the node

    @property
    def replayed(self) -> bool:
        return self.origin == verdicts.REPLAYED

    def __post_init__(self) -> None:
        if not self.summary:
            self.summary = summarize(self.check, self.measured)


@dataclass
class Bandwidth:
    """One NCCL run's bus bandwidth against its reference, for the chart."""

    host: str
    label: str
    scope: str
    hosts: list[str]
    measured: float
    reference: float | None
    floor: float | None
    status: str


@dataclass
class Node:
    host: str
    node_type: str | None
    checks: list[Check] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # the module runs the checks came from
    cleared: set[str] = field(default_factory=set)  # hosts the bisection cleared
    unreachable: str | None = None  # why the host could not be reached during the run

    @property
    def status(self) -> str:
        if self.unreachable is not None:
            return UNREACHABLE
        return host_verdict(self.host, self.records, self.cleared)["status"]

    @property
    def origin(self) -> str:
        """REPLAYED when any of its checks judged recorded outputs: then its verdict is not the node's."""
        return verdicts.REPLAYED if any(check.replayed for check in self.checks) else verdicts.LIVE

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for check in self.checks:
            counts[check.status] = counts.get(check.status, 0) + 1
        return counts


@dataclass
class Run:
    run_id: str
    source: str
    nodes: list[Node]
    bandwidth: list[Bandwidth]
    run: dict[str, Any]
    cabling: Cabling | None = None  # the topology's cabling plan, when the report was given one

    @property
    def status(self) -> str:
        # worst() reads a status it does not know (unreachable) as fail.
        return verdicts.worst(node.status for node in self.nodes)

    @property
    def verdict(self) -> dict[str, Any]:
        return self.run.get("verdict") or {}

    @property
    def origin(self) -> str:
        return verdicts.REPLAYED if any(node.origin == verdicts.REPLAYED for node in self.nodes) else verdicts.LIVE


def _checks_of(host: str, record: dict[str, Any], cleared: set[str]) -> list[Check]:
    module = str(record.get("module") or "unknown")
    scope = record.get("scope")
    counted = counts_against(host, record, cleared)
    origin = verdicts.origin(record.get("source"))
    if crashed(record):
        message = str(record.get("error") or record.get("msg") or "the module returned no verdict")
        return [
            Check(host, module, f"{module}.error", verdicts.FAIL, None, None, message, scope, counted, origin=origin)
        ]
    found = []
    for item in record["checks"]:
        status = verdicts.worst([str(item.get("status"))])  # an unknown status reads as fail
        found.append(
            Check(
                host,
                module,
                str(item.get("check")),
                status,
                item.get("measured"),
                item.get("expected"),
                str(item.get("message") or ""),
                scope,
                counted,
                origin=origin,
            )
        )
    return found


def _bandwidth_of(host: str, record: dict[str, Any]) -> Bandwidth | None:
    busbw = record.get("busbw")
    if record.get("module") != "nccl_check" or not isinstance(busbw, dict) or busbw.get("measured") is None:
        return None
    busbw_check = next((c for c in record.get("checks") or () if str(c.get("check", "")).endswith(".busbw")), None)
    return Bandwidth(
        host=host,
        label=str(record.get("label") or "nccl"),
        scope=str(record.get("scope") or "node"),
        hosts=list(record.get("hosts") or [host]),
        measured=float(busbw["measured"]),
        reference=busbw.get("reference"),
        floor=busbw.get("floor"),
        status=busbw_check.get("status", "skipped") if busbw_check else "skipped",
    )


def load_run(results_dir: str | Path, topology: str | Path | None = None) -> Run:
    """Read a run directory; UsageError names the file, the field and what was expected
    (clusterforge.validation.result_files). With topology (a *.topology.yml), HCA and pair
    failures are placed on the cabling plan's rails, leaves and ports; without it, the topology
    file the validate stage recorded in _run.json, where that file still exists."""
    directory = Path(results_dir)
    if not directory.is_dir():
        raise UsageError(f"results directory not found: {directory}")
    run_file = directory / "_run.json"
    run = read_run_file(run_file) if os.path.lexists(run_file) else {}
    cleared = set((run.get("verdict") or {}).get("cleared") or ())
    files = sorted(p for p in directory.glob("*.json") if not p.name.startswith("_"))
    if not files:
        raise UsageError(f"{directory}: no <host>.json results (expected the output of playbooks/validate.yml)")
    nodes, bandwidth = [], []
    run_ids = set()
    for path in files:
        data = read_host_file(path)
        host = data.get("host") or path.stem
        node = Node(host, data.get("node_type"), cleared=cleared, unreachable=data.get("unreachable"))
        for record in data["results"]:
            node.records.append(record)
            node.checks.extend(_checks_of(host, record, cleared))
            point = _bandwidth_of(host, record)
            if point is not None:
                bandwidth.append(point)
        nodes.append(node)
        if data.get("run_id"):
            run_ids.add(data["run_id"])
    run_id = run.get("run_id") or (sorted(run_ids)[0] if run_ids else directory.name)
    if topology is None and isinstance(run.get("topology"), str) and Path(run["topology"]).is_file():
        topology = run["topology"]
    cabling = cabling_map.load(topology) if topology is not None else None
    return Run(run_id, str(directory), nodes, bandwidth, run, cabling)


# --- JSON ---------------------------------------------------------------------------------------


def run_document(run: Run) -> dict[str, Any]:
    totals = dict.fromkeys(STATUSES, 0)
    for node in run.nodes:
        for status, count in node.counts.items():
            totals[status] = totals.get(status, 0) + count
    node_totals = dict.fromkeys(NODE_STATUSES, 0)
    for node in run.nodes:
        node_totals[node.status] += 1
    return {
        "schema": REPORT_SCHEMA,
        "run_id": run.run_id,
        "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": run.source,
        "origin": run.origin,
        "header": header(run),
        "status": run.status,
        "summary": {"nodes": len(run.nodes), "nodes_by_status": node_totals, "checks_by_status": totals},
        "nodes": [
            {
                "host": node.host,
                "node_type": node.node_type,
                "status": node.status,
                "origin": node.origin,
                "unreachable": node.unreachable,
                "counts": node.counts,
                "checks": [{k: v for k, v in asdict(check).items() if k != "host"} for check in node.checks],
                "gpudirect_rails": rails.node_rails(node.host, node.records, node.checks, run.cabling),
            }
            for node in run.nodes
        ],
        "bandwidth": [asdict(point) for point in run.bandwidth],
        "pairs": run.run.get("pairs") or {},
        "failed_pairs": run.run.get("failed_pairs") or [],
        "bisection": run.run.get("bisection") or {},
        "verdict": run.verdict,
    }


# --- JUnit XML ----------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _origin_property(element: ET.Element, origin: str) -> None:
    ET.SubElement(ET.SubElement(element, "properties"), "property", name="origin", value=origin)


def junit_xml(run: Run) -> str:
    """One test suite per node, one test case per check: fail -> <failure>, skipped -> <skipped>,
    warn passes with its message in <system-out>; an unreachable node has an <error> case. A suite
    and a case judged from recorded outputs say so in an "origin" property and before their text."""
    suites = ET.Element("testsuites", name=f"clusterforge validation {run.run_id}")
    all_tests = all_failures = all_skipped = all_errors = 0
    for node in run.nodes:
        suite = ET.SubElement(suites, "testsuite", name=node.host)
        _origin_property(suite, node.origin)
        tests = failures = skipped = errors = 0
        if node.unreachable is not None:
            case = ET.SubElement(suite, "testcase", classname=f"{node.host}.connection", name=UNREACHABLE)
            case.set("time", "0")
            ET.SubElement(case, "error", message=node.unreachable[:500], type=UNREACHABLE).text = node.unreachable
            tests, errors = tests + 1, errors + 1
        for check in node.checks:
            case = ET.SubElement(suite, "testcase", classname=f"{node.host}.{check.module}", name=check.check)
            case.set("time", "0")
            _origin_property(case, check.origin)
            tests += 1
            said = f"{verdicts.REPLAYED}: " if check.replayed else ""
            detail = (
                f"measured: {check.summary}\nraw: {_text(check.measured)}\n"
                f"expected: {_text(check.expected)}\n{check.message}"
            )
            if check.status == "fail" and check.counted:
                failures += 1
                failure = ET.SubElement(case, "failure", message=(said + check.message)[:500], type="fail")
                failure.text = said + detail
            elif check.status == "skipped":
                skipped += 1
                ET.SubElement(case, "skipped", message=(said + check.message)[:500])
            else:
                out = ET.SubElement(case, "system-out")
                prefix = "cleared by bisection: " if check.status == "fail" else f"{check.status.upper()}: "
                out.text = said + prefix + detail
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("skipped", str(skipped))
        suite.set("time", "0")
        all_tests, all_failures, all_skipped = all_tests + tests, all_failures + failures, all_skipped + skipped
        all_errors += errors
    suites.set("tests", str(all_tests))
    suites.set("failures", str(all_failures))
    suites.set("errors", str(all_errors))
    suites.set("skipped", str(all_skipped))
    ET.indent(suites)
    # ElementTree writes control characters (a tool's colour codes, a NUL) as they are, which no
    # XML parser accepts: replace them in the serialised text, where they can only be content.
    document = xml_safe(ET.tostring(suites, encoding="unicode"))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + document + "\n"


# --- HTML ---------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem;color:#212121}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;
vertical-align:top;font-size:.9rem}th{background:#f5f5f5}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem;font-size:.9rem}dl.meta dt{color:#616161}
dl.meta dd{margin:0}
.status{display:inline-block;font-weight:600;color:#fff;border-radius:3px;padding:0 .4rem;white-space:nowrap}
.status.pass{background:#2e7d32}.status.warn{background:#e65100}.status.fail{background:#c62828}
.status.skipped{background:#757575}.status.unreachable{background:#4a148c}
.origin{display:inline-block;border:1px solid #4a148c;color:#4a148c;border-radius:3px;padding:0 .4rem;font-size:.8rem}
tr.node.pass td{background:#f1f8f1}tr.node.warn td{background:#fff6ec}tr.node.fail td{background:#fdf0f0}
tr.node.skipped td{background:#fafafa}tr.node.unreachable td{background:#f6f0fa}
td.msg{max-width:60rem;word-break:break-word}td.raw{color:#757575;font-size:.8rem;max-width:30rem;
word-break:break-all}details{margin:.4rem 0}summary{cursor:pointer}.none{color:#9e9e9e}
"""


def _badge(status: str) -> str:
    return f'<span class="status {html.escape(status)}">{html.escape(status)}</span>'


def _origin(origin: str) -> str:
    """Nothing for a live verdict; a mark saying it was judged from recorded outputs otherwise."""
    return f' <span class="origin">{html.escape(origin)}</span>' if origin == verdicts.REPLAYED else ""


def cell(value: Any, limit: int = 300) -> str:
    """A value as HTML text: cut to limit characters first (the cut marked with an ellipsis), then
    escaped, so no cell ends in half an entity; None (JSON null) and empty text show as a dash."""
    if value is None or value == "":
        return f'<span class="none">{NONE}</span>'
    return html.escape(cut(_text(value), limit))


def _ticks(top: float) -> list[float]:
    """Round axis values from 0 to top: steps of 1, 2 or 5 times a power of ten, about five of them."""
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [round(i * step, 9) for i in range(int(top // step) + 1)]


def bandwidth_svg(points: list[Bandwidth], width: int = 860) -> str:
    """Horizontal bars of measured bus bandwidth per node/pair run, with the floor (dashed) and
    the reference (solid) each run was judged against."""
    if not points:
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="30" role="img">'
            f'<text x="4" y="20">{NO_BANDWIDTH}</text></svg>'
        )
    label_w, right, row, top = 300, 90, 24, 28
    scale_max = max(max(p.measured, p.reference or 0.0, p.floor or 0.0) for p in points) * 1.05 or 1.0
    plot_w = width - label_w - right
    height = top + row * len(points) + 24

    def x(value: float) -> float:
        return label_w + plot_w * value / scale_max

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="NCCL bus bandwidth against expectation" font-family="sans-serif" font-size="12">',
        "<title>NCCL bus bandwidth (GB/s) per run: bar measured, dashed line floor, solid line reference</title>",
        f'<text x="{label_w}" y="16">GB/s (bar: measured; dashed: floor; solid: reference)</text>',
    ]
    for value in _ticks(scale_max):
        parts.append(
            f'<line x1="{x(value):.1f}" y1="{top - 4}" x2="{x(value):.1f}" y2="{height - 20}" stroke="#eee"/>'
            f'<text x="{x(value):.1f}" y="{height - 6}" text-anchor="middle" fill="#666">{value:g}</text>'
        )
    for index, point in enumerate(points):
        y = top + index * row
        name = point.host if point.scope == "node" else "+".join(point.hosts)
        label = f"{name} {point.label.split(':')[0]} ({point.scope})"
        colour = COLOURS.get(point.status, "#757575")
        parts.append(
            f'<g class="bar {html.escape(point.status)}"><title>{html.escape(label)}: {point.measured:.1f} GB/s'
            + "".join(
                f", {name} {value:.1f}"
                for name, value in (("floor", point.floor), ("reference", point.reference))
                if value is not None
            )
            + f" ({html.escape(point.status)})</title>"
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{html.escape(label)}</text>'
            f'<rect x="{label_w}" y="{y + 4}" width="{max(x(point.measured) - label_w, 1):.1f}" height="{row - 8}" '
            f'fill="{colour}"/>'
            f'<text x="{x(point.measured) + 4:.1f}" y="{y + 15}">{point.measured:.1f}</text>'
        )
        if point.floor is not None:
            parts.append(
                f'<line x1="{x(point.floor):.1f}" y1="{y + 1}" x2="{x(point.floor):.1f}" y2="{y + row - 1}" '
                'stroke="#000" stroke-width="2" stroke-dasharray="3,2"/>'
            )
        if point.reference is not None:
            parts.append(
                f'<line x1="{x(point.reference):.1f}" y1="{y + 1}" x2="{x(point.reference):.1f}" '
                f'y2="{y + row - 1}" stroke="#000" stroke-width="2"/>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def versions(run: Run) -> dict[str, str]:
    """The versions the header shows: clusterforge and Ansible on this controller, then any the
    run recorded in _run.json ("versions": {name: version})."""
    from importlib import metadata

    from clusterforge import __version__

    found = {"clusterforge": __version__}
    with contextlib.suppress(metadata.PackageNotFoundError):
        found["ansible-core"] = metadata.version("ansible-core")
    recorded = run.run.get("versions")
    if isinstance(recorded, dict):
        found.update({str(k): _text(v) for k, v in recorded.items()})
    return found


def _started(run_id: str) -> str | None:
    """The start time a default run id (validate.yml's UTC time stamp, 20250102T000000Z) gives."""
    try:
        return datetime.strptime(run_id, "%Y%m%dT%H%M%SZ").strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


def header(run: Run) -> dict[str, Any]:
    """Cluster name, topology file, times and versions: from the topology given to the report,
    else what _run.json recorded (cluster, topology, started)."""
    cabling = run.cabling
    return {
        "cluster": (cabling.cluster if cabling else None) or run.run.get("cluster"),
        "topology": (cabling.topology if cabling else None) or run.run.get("topology"),
        "run_id": run.run_id,
        "started": run.run.get("started") or _started(run.run_id),
        "results": run.source,
        "versions": versions(run),
    }


def hca_locations(run: Run, check: Check) -> list[str]:
    """For a failing or warning InfiniBand check: each port it names, with its rail, leaf and
    leaf port from the cabling plan ("mlx5_3/1: rail 4, compute-su1-r4-leaf1 port 2")."""
    if run.cabling is None or not check.check.startswith("ib.") or check.status not in ("fail", "warn"):
        return []
    measured = check.measured
    if check.check == "ib.present" and isinstance(check.expected, list):
        have = measured if isinstance(measured, list) else []
        named = [str(d) for d in check.expected if d not in have]
    elif isinstance(measured, dict):
        named = [key for key in measured if key in check.message]
    else:
        return []
    found = []
    for device in named:
        port = run.cabling.port(check.host, device)
        found.append(f"{device}: {port.describe()}" if port else f"{device}: not in the cabling plan")
    return found


def pairs_ran(run: Run) -> bool:
    """Whether any NCCL run across nodes (a pair or a group) ran."""
    planned = (run.run.get("pairs") or {}).get("pairs")
    return bool(planned or run.run.get("failed_pairs") or (run.run.get("bisection") or {}).get("rounds")) or any(
        check.scope in ("pair", "group") for node in run.nodes for check in node.checks
    )


def _pair_rails(run: Run, pair: list[str]) -> str:
    """A failed pair's cables rail by rail: where each of its nodes plugs in, and whether the two
    share the leaf (then the leaf or the cables are suspect, else the path through the spines)."""
    if run.cabling is None:
        return ""
    rails: dict[Any, list[tuple[str, Any]]] = {}
    for host in pair:
        for port in run.cabling.rails(host):
            rails.setdefault(port.rail, []).append((host, port))
    if not rails:
        return f"<p>{cell(' + '.join(pair))}: not in the cabling plan.</p>"
    rows = []
    for rail, ends in sorted(rails.items(), key=lambda item: (item[0] is None, item[0] or 0)):
        leaves = {port.leaf for _, port in ends}
        path = "same leaf" if len(leaves) == 1 and len(ends) > 1 else "through the spines"
        rows.append(
            f"<tr><td>{cell(rail)}</td>"
            + "".join(
                f"<td>{cell(host)} {cell(port.device)} &rarr; {cell(port.leaf)} port {port.leaf_port}</td>"
                for host, port in ends
            )
            + f"<td>{path}</td></tr>"
        )
    head = "".join(f"<th>{cell(host)}</th>" for host in pair)
    return (
        f'<table class="pair-rails"><caption>{cell(" + ".join(pair))} on the cabling plan</caption>'
        f"<tr><th>rail</th>{head}<th>path</th></tr>{''.join(rows)}</table>"
    )


def _bisection(run: Run, doc: dict[str, Any]) -> str:
    verdict = run.verdict
    failed_pairs = doc["failed_pairs"]
    rounds = doc["bisection"].get("rounds") or []
    if not pairs_ran(run):
        return f'<p id="pairs">{NO_PAIRS}</p>'
    if not (failed_pairs or rounds):
        ran = len((run.run.get("pairs") or {}).get("pairs") or [])
        return f'<p id="pairs">{f"{ran} NCCL pairs ran" if ran else "NCCL runs across nodes ran"}; none failed.</p>'

    unresolved = verdict.get("unresolved") or []

    def names(values: Any) -> str:
        return cell(", ".join(values or []) or "none")

    return (
        '<ul id="pairs">'
        f"<li>failed pairs: {cell(', '.join('+'.join(p) for p in failed_pairs) or 'none')}</li>"
        + (
            f"<li>failed run across {len(run.run.get('group') or [])} nodes bisected in {len(rounds)} rounds</li>"
            if rounds
            else ""
        )
        + f"<li>culprits: {cell(', '.join(verdict.get('culprits') or []) or 'none named')}</li>"
        f"<li>cleared: {names(verdict.get('cleared'))}</li>"
        f"<li>failed between cleared nodes (cable or switch path): "
        f"{cell(', '.join('+'.join(g) for g in verdict.get('unresolved') or []) or 'none')}</li>"
        f"<li>not probed (no good node): {names(verdict.get('untested'))}</li></ul>"
        + "".join(_pair_rails(run, list(p)) for p in list(dict.fromkeys(map(tuple, [*failed_pairs, *unresolved])))[:20])
    )


def _meta(run: Run, generated: str) -> str:
    head = header(run)
    items = [
        ("cluster", head["cluster"]),
        ("topology", home(head["topology"]) if head["topology"] else None),
        ("run", head["run_id"]),
        ("started", head["started"]),
        ("generated", generated),
        ("results", home(head["results"])),
        ("versions", ", ".join(f"{name} {version}" for name, version in head["versions"].items())),
    ]
    return '<dl class="meta">' + "".join(f"<dt>{name}</dt><dd>{cell(value)}</dd>" for name, value in items) + "</dl>"


def _skipped(node: Node) -> str:
    """The node's skipped checks, apart from its failing ones: each reason once, with its checks."""
    reasons: dict[str, list[str]] = {}
    for check in node.checks:
        if check.status == "skipped":
            reasons.setdefault(check.message or "skipped", []).append(check.check)
    if not reasons:
        return '<span class="none">none</span>'
    return "<br>".join(f"{cell(reason, 200)}: {cell(', '.join(names), 300)}" for reason, names in reasons.items())


def _rail_tables(doc: dict[str, Any]) -> str:
    """GPUDirect readiness per node and rail: each readiness check's verdict, the rail's, and the
    GPU-NIC pair a failure affects (clusterforge.validation.rails)."""
    tables = []
    head = "".join(f"<th>{html.escape(title)}</th>" for title in rails.COLUMNS.values())
    for node in doc["nodes"]:
        found = node["gpudirect_rails"]
        if not found:
            continue
        lines = "".join(
            f'<tr class="rail {html.escape(row["status"])}"><td>{cell(row["rail"])}</td>'
            f"<td>{cell(row['pair'], 160)}</td>"
            + "".join(
                f'<td title="{html.escape(str(item["why"])[:300])}">{_badge(item["status"])}{_origin(item["origin"])}'
                f'<br><span class="msg">{cell(item["why"], 160)}</span></td>'
                for item in row["checks"].values()
            )
            + f"<td>{_badge(row['status'])}{_origin(row['origin'])}</td>"
            f'<td class="msg">{cell(row["affects"] or "none", 400)}</td></tr>'
            for row in found
        )
        tables.append(
            f'<table class="rails" id="rails-{html.escape(node["host"])}"><caption>{cell(node["host"], 120)}</caption>'
            f"<tr><th>rail</th><th>GPU-NIC pair</th>{head}<th>ready</th><th>affected pair</th></tr>{lines}</table>"
        )
    return "".join(tables) or '<p id="rails">No GPUDirect readiness checks ran.</p>'


def html_page(run: Run) -> str:
    doc = run_document(run)
    summary = doc["summary"]
    esc = html.escape
    rows = []
    for node in run.nodes:
        bad = [c for c in node.checks if c.status in ("fail", "warn") and c.counted]
        notes = "<br>".join(
            f"{_badge(c.status)} {cell(c.check, 80)}: {cell(c.summary, 120)} &mdash; {cell(c.message, 300)}"
            + "".join(f"<br>&nbsp;&nbsp;{cell(place, 160)}" for place in hca_locations(run, c)[:8])
            for c in bad[:6]
        )
        if len(bad) > 6:
            notes += f"<br>and {len(bad) - 6} more (see Checks per node)"
        if not bad:
            notes = '<span class="none">none</span>'
        if node.unreachable is not None:
            notes = f"{_badge(UNREACHABLE)} {cell(node.unreachable, 300)}" + (f"<br>{notes}" if notes else "")
        counts = node.counts
        rows.append(
            f'<tr class="node {esc(node.status)}" id="node-{esc(node.host)}"><td>{cell(node.host, 120)}</td>'
            f"<td>{cell(node.node_type, 80)}</td><td>{_badge(node.status)}{_origin(node.origin)}</td>"
            + "".join(f"<td>{counts[s]}</td>" for s in ("pass", "warn", "fail", "skipped"))
            + f'<td class="msg">{notes}</td><td class="msg">{_skipped(node)}</td></tr>'
        )
    details = []
    # The first screen shows what was checked: every node's checks when there are few nodes, else
    # those of the nodes that failed (or could not be reached).
    few = len(run.nodes) <= OPEN_ALL_UP_TO
    for node in run.nodes:
        lines = "".join(
            f'<tr class="check {esc(c.status)}"><td>{cell(c.module, 80)}</td><td>{cell(c.check, 120)}</td>'
            f"<td>{_badge(c.status)}"
            + ("" if c.counted else " (cleared)")
            + _origin(c.origin)
            + f'</td><td class="measured">{cell(c.summary, 160)}</td>'
            f'<td class="msg">{cell(c.expected, 200)}</td>'
            f'<td class="msg">{cell(c.message, 600)}</td>'
            f'<td class="raw">{cell(c.measured, 400)}</td></tr>'
            for c in node.checks
        )
        opened = " open" if few or node.status in (verdicts.FAIL, UNREACHABLE) else ""
        details.append(
            f"<details{opened}><summary>{cell(node.host, 120)} {_badge(node.status)}{_origin(node.origin)}"
            "</summary><table><tr>"
            "<th>module</th><th>check</th><th>status</th><th>measured</th><th>expected</th><th>message</th>"
            "<th>raw value</th></tr>"
            f"{lines}</table></details>"
        )
    by_status = ", ".join(f"{n} {s}" for s, n in summary["nodes_by_status"].items() if n)
    title = " ".join(str(part) for part in ("clusterforge validation", header(run)["cluster"]) if part)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        # The tab names the run; on the page the run id is shown once, in the header below.
        f"<title>{cell(f'{title} {run.run_id}', 200)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{cell(title, 200)} {_badge(run.status)}{_origin(run.origin)}</h1>"
        f"{_meta(run, doc['generated'])}"
        f"<p>{summary['nodes']} nodes: {cell(by_status)}.</p>"
        '<h2>Nodes</h2><table id="nodes"><tr><th>host</th><th>node type</th><th>status</th><th>pass</th>'
        f"<th>warn</th><th>fail</th><th>skipped</th><th>failing or warning checks</th><th>skipped checks</th></tr>"
        f"{''.join(rows)}</table>"
        f'<h2>NCCL bus bandwidth</h2><div id="bandwidth">{bandwidth_svg(run.bandwidth)}</div>'
        f"<h2>NCCL pairs and bisection</h2>{_bisection(run, doc)}"
        f"<h2>GPUDirect readiness per rail</h2>{_rail_tables(doc)}"
        f"<h2>Checks per node</h2>{''.join(details)}</body></html>\n"
    )


def write_report(run: Run, outdir: str | Path, *, force: bool = False) -> dict[str, Path]:
    """report.json, junit.xml and report.html in outdir (created), written by clusterforge.safe_write:
    files there that clusterforge did not write are refused unless force."""
    names = {"json": "report.json", "junit": "junit.xml", "html": "report.html"}
    texts = {
        names["json"]: json.dumps(run_document(run), indent=2, default=str) + "\n",
        names["junit"]: junit_xml(run),
        names["html"]: html_page(run),
    }
    write_tree(outdir, texts, force=force)
    return {kind: Path(outdir) / name for kind, name in names.items()}
