"""`clusterforge report` and `clusterforge check judge`: validation results on the controller.

    clusterforge report RESULTS_DIR -o OUTDIR | clusterforge report --latest  [--topology FILE]
        turn a run directory of playbooks/validate.yml into report.json, junit.xml and report.html;
        --latest: the newest `clusterforge run` with validation results, written to its report/
    clusterforge check judge KIND FILE [--expect KEY=VALUE ...] [--plan CSV] [--json]
        parse a saved command output with the node checks' parser and judge it, as the modules do;
        --expect takes the keys KIND's judge reads (its table in plugins/module_utils), typed by it

Wiring (cli/__init__.py): ``add_parser(commands)`` adds both commands; main() dispatches
the commands in ``COMMANDS`` to ``run(args)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from clusterforge.cli.tables import print_table
from clusterforge.errors import EXIT_HOSTS_FAILED, EXIT_OK, UsageError
from clusterforge.safe_read import MiB, read_stream_text, read_text
from clusterforge.text import plain
from clusterforge.validation import judges
from clusterforge.validation.summary import summarize

console = Console()
COMMANDS = ("check", "report")

# A saved command output: ibnetdiscover of a fabric of thousands of nodes is a few MiB.
MAX_INPUT_BYTES = 64 * MiB


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    report = subparsers.add_parser("report", help="JSON, JUnit XML and HTML from a validation run's results")
    report.add_argument(
        "results",
        nargs="?",
        metavar="RESULTS_DIR",
        help="results of playbooks/validate.yml, or the run directory of the `clusterforge run` that wrote them",
    )
    report.add_argument("--latest", action="store_true", help="the newest `clusterforge run` with validation results")
    report.add_argument(
        "-o",
        "--output",
        metavar="OUTDIR",
        help="directory to write to (default: report/ in the `clusterforge run` directory holding the results)",
    )
    report.add_argument("--force", action="store_true", help="replace same-named files clusterforge did not write")
    report.add_argument(
        "--topology",
        metavar="FILE",
        help="the cluster's topology file: its name in the header, failing HCAs and pairs on the cabling plan",
    )
    check = subparsers.add_parser("check", help="judge saved command outputs as the node checks do")
    commands = check.add_subparsers(dest="check_command", required=True, parser_class=type(check))
    judge = commands.add_parser(
        "judge",
        help="parse FILE as KIND output and judge it against --expect",
        epilog=keys_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = sorted([*judges.KINDS, *judges.ALIASES])
    judge.add_argument("kind", choices=kinds, metavar="KIND", help=", ".join(sorted(judges.KINDS)))
    judge.add_argument(
        "file", metavar="FILE", help="the saved output ('-' for standard input); for ib-sysfs a directory"
    )
    judge.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="expectation (repeatable) of a key KIND reads (listed below), e.g. nvidia-smi-topo gpu_count=8, "
        "ibstat rate=400 devices=mlx5_0,mlx5_1; any other key is an error",
    )
    judge.add_argument("--plan", metavar="CSV", help="ibnetdiscover: the cabling plan (cabling/cabling.csv)")
    judge.add_argument("--fabric", help="ibnetdiscover: the plan's fabric to judge")
    judge.add_argument("--json", action="store_true", help="print the verdict as JSON")
    return check


def run(args: argparse.Namespace) -> int:
    if args.command == "report":
        return _report(args)
    return _judge(args)


def _report(args: argparse.Namespace) -> int:
    from clusterforge.runner import runs
    from clusterforge.validation.report import load_run, write_report

    if args.latest == bool(args.results):
        raise UsageError("expected RESULTS_DIR or --latest (one of them)")
    run_dir, results = runs.latest_validation() if args.latest else runs.resolve_results(args.results)
    run_ = load_run(results, topology=args.topology)
    if args.output is None and run_dir is None:
        raise UsageError(f"{results}: not in a `clusterforge run` directory; name the output directory with -o OUTDIR")
    if args.output is not None and not args.output.strip():
        raise UsageError("-o: the output directory is empty: name a directory (use . for the current one)")
    output = Path(args.output) if args.output is not None else runs.default_report_dir(run_dir)
    # The report's JSON beside the results would be read as a result by the next report.
    if output.resolve().is_relative_to(results.resolve()):
        raise UsageError(f"-o {output}: the report would be written into the results directory it reads ({results})")
    written = write_report(run_, output, force=args.force)
    # markup=False: paths, run ids and host text are data, never Rich markup.
    for path in written.values():
        console.print(str(path), markup=False, highlight=False, soft_wrap=True)
    console.print(f"run {run_.run_id}: {run_.status} ({len(run_.nodes)} nodes)", markup=False, highlight=False)
    return EXIT_OK


def keys_text() -> str:
    """The expectation keys of every kind, for --help."""
    lines = ["expectation keys per KIND (str as written, list comma-separated or JSON, dict JSON):"]
    for name, spec in sorted(judges.KINDS.items()):
        table = spec.key_table
        keys = ", ".join(f"{key} ({' or '.join(k.types)})" for key, k in table.items()) or "none"
        lines.append(f"  {name}: {keys}")
    return "\n".join(lines)


def _read(path: str) -> str:
    """A saved output: a regular file of at most MAX_INPUT_BYTES (a FIFO or device would hang or
    fill memory), or standard input for '-'."""
    if path == "-":
        return read_stream_text(sys.stdin.buffer, MAX_INPUT_BYTES)
    return read_text(path, MAX_INPUT_BYTES)


def _judge(args: argparse.Namespace) -> int:
    kind, spec = judges.kind_of(args.kind)
    expected = judges.expectation_from_text(kind, args.expect)
    if kind == "ibnetdiscover" and args.plan:
        planned, note = judges.plan_expectation(_read(args.plan), args.fabric, source=args.plan)
        if note:
            sys.stderr.write(f"note: {note}\n")
        # --expect overrides what the plan says.
        expected = {**planned, **expected}
    if spec.directory:
        results = judges.judge_directory(kind, args.file, expected)
    else:
        results = judges.judge_text(kind, _read(args.file), expected, source=str(Path(args.file).name))
    status = judges.overall(results)
    if args.json:
        checks = [{**r.as_dict(), "summary": summarize(r.check, r.measured)} for r in results]
        document = {"kind": kind, "file": args.file, "status": status, "checks": checks}
        # allow_nan=False: NaN and Infinity are not JSON, and a consumer's parser would reject them.
        sys.stdout.write(json.dumps(document, indent=2, default=str, allow_nan=False) + "\n")
    else:
        # Text(plain()): what the file and the judges say is shown as it is, never read as Rich
        # markup, and without the escape sequences a tool or a file name may carry.
        table = Table(title=Text(plain(f"{kind}: {args.file}")))
        for column in ("check", "status", "measured", "expected", "message"):
            table.add_column(column, overflow="fold")
        for r in results:
            cells = (r.check, r.status, summarize(r.check, r.measured, 80), _short(r.expected), r.message)
            table.add_row(*(Text(plain(str(cell))) for cell in cells))
        print_table(console, table)
        console.print(f"status: {status}", markup=False, highlight=False)
    return EXIT_HOSTS_FAILED if status == "fail" else EXIT_OK


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
