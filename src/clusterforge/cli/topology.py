"""`clusterforge topology`: show, validate, render and draw a topology file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from clusterforge.cli.tables import print_table
from clusterforge.errors import UsageError
from clusterforge.topology import ClusterPlan, TopologyError, load

console = Console()
err_console = Console(stderr=True)  # warnings: `show --json` keeps stdout for the JSON


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    topology = subparsers.add_parser("topology", help="check a topology file and render what derives from it")
    # Subcommands use the same parser class as their parent (clusterforge's exits 4 on bad arguments).
    commands = topology.add_subparsers(dest="topology_command", required=True, parser_class=type(topology))
    show = commands.add_parser("show", help="hosts, GPUs, switches, links and cables, as tables or JSON")
    show.add_argument("--json", action="store_true", help="print the summary as stable JSON")
    commands.add_parser("validate", help="check the file; exit 4 with every problem if it is invalid")
    render = commands.add_parser("render", help="write Slurm, NCCL, Kubernetes, cabling, BOM and inventory files")
    render.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUTDIR",
        help="directory (created; a file clusterforge did not write is never replaced)",
    )
    render.add_argument("--force", action="store_true", help="replace same-named files clusterforge did not write")
    draw = commands.add_parser("draw", help="draw the fabrics as SVG")
    draw.add_argument("-o", "--output", default="fabric.svg", metavar="SVG", help="file to write (default fabric.svg)")
    draw.add_argument("--fabric", help="fabric to draw (default: the fabric that carries GPU traffic)")
    for command in commands.choices.values():
        command.add_argument("file", metavar="FILE", help="topology file (*.topology.yml)")
    return topology


def run(args: argparse.Namespace) -> int:
    # validate needs no links: every size check is made without them (fabric.generate).
    plan = _load(args.file, links=args.topology_command != "validate")
    for line in plan.warning_lines():
        err_console.print(f"warning: {line}", highlight=False, soft_wrap=True, markup=False)
    handler = {"show": _show, "validate": _validate, "render": _render, "draw": _draw}[args.topology_command]
    return handler(plan, args)


def _load(path: str, links: bool) -> ClusterPlan:
    try:
        return load(path, links=links)
    except TopologyError as exc:
        raise UsageError(str(exc)) from None


def _rendered(plan: ClusterPlan) -> dict[str, str]:
    """Every output in memory: some problems (a label Kubernetes refuses, a price for an
    unknown cable tier) only show when rendering."""
    from clusterforge.topology.render import files
    from clusterforge.topology.render.bom import BomError
    from clusterforge.topology.render.k8s_labels import LabelError

    try:
        return files(plan)
    except (BomError, LabelError) as exc:
        raise UsageError(f"{plan.path}: {exc}") from None


def _validate(plan: ClusterPlan, args: argparse.Namespace) -> int:
    # The schema covers every input; Kubernetes label syntax is the one rule it cannot see
    # (labels combine names), so check the labels too. Rendering the rest would take seconds
    # at 100,000 GPUs and find nothing more.
    from clusterforge.topology.render.k8s_labels import LabelError, labels

    try:
        labels(plan)
    except LabelError as exc:
        raise UsageError(f"{plan.path}: {exc}") from None
    node_types = plan.topology.node_types
    gpus = sum(gpu.count for gpu in (node_types[h.node_type].gpu for h in plan.hosts) if gpu)
    console.print(f"ok: {len(plan.hosts)} hosts, {gpus} GPUs, {plan.switch_count()} switches", highlight=False)
    return 0


def _show(plan: ClusterPlan, args: argparse.Namespace) -> int:
    from clusterforge.topology.render.bom import BomError
    from clusterforge.topology.render.summary import summarise

    try:
        summary = summarise(plan)
    except BomError as exc:
        raise UsageError(f"{plan.path}: {exc}") from None
    if args.json:
        # Plain stdout: rich would wrap and colour what a script parses.
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
        return 0
    print_table(
        console,
        _count_table(
            f"cluster {summary['cluster']}", ("role", "hosts"), summary["hosts"]["by_role"], summary["hosts"]["total"]
        ),
    )
    print_table(
        console, _count_table("GPUs", ("model", "count"), summary["gpus"]["by_model"], summary["gpus"]["total"])
    )
    domains = summary["nvlink"]
    if domains is not None:
        print_table(console, _nvlink_table(domains))
    fabrics = Table(title="fabrics")
    for column in ("fabric", "kind", "switches", "links", "cables"):
        fabrics.add_column(column)
    for name, fabric in summary["fabrics"].items():
        links = _counts(fabric["links"])
        if "global_ports" in fabric:
            links += "\nglobal ports: {used} of {available} used".format(**fabric["global_ports"])
        fabrics.add_row(
            escape(name),
            escape(f"{fabric['purpose']}, {fabric['link_layer']}, {fabric['topology']}, {fabric['switch_model']}"),
            "\n".join(filter(None, (_counts(fabric["switches"]), _core_reach(fabric.get("cores_per_spine"))))),
            links,
            _counts(fabric["cables"]),
        )
    print_table(console, fabrics)
    cost = summary["bom"]
    console.print(
        f"switches: {summary['switches']}  power: {cost['power_kw']:,.1f} kW  cost: ${cost['price_usd']:,.0f} "
        "(bill of materials: clusterforge topology render)",
        highlight=False,
        soft_wrap=True,  # one line, whatever the width: a pipe or a log wraps it if it must
    )
    return 0


def _nvlink_table(domains: dict) -> Table:
    """The NVLink domains: what the racks hold, their wiring and one rack's draw."""
    table = Table(title="NVLink domains")
    table.add_column("item")
    table.add_column("count", justify="right")
    rows = (
        ("domains", f"{domains['domains']} of {domains['gpus_per_domain']} GPUs"),
        ("racks", f"{domains['racks']} ({domains['cooling']}-cooled, {domains['rack_kw']:.1f} kW each)"),
        ("NVLink switch trays", domains["switch_trays"]),
        ("NVLink cable cartridges", domains["cable_cartridges"]),
        ("NVLink links (GPU to switch chip)", domains["links"]),
    )
    for name, value in rows:
        table.add_row(name, "-" if value is None else str(value))
    return table


def _counts(counts: dict[str, int]) -> str:
    return escape("\n".join(f"{name}: {count}" for name, count in counts.items())) or "-"


def _core_reach(reach: dict[str, int] | None) -> str:
    if reach is None:
        return ""
    cores = str(reach["min"]) if reach["min"] == reach["max"] else f"{reach['min']}-{reach['max']}"
    return f"cores per spine: {cores}"


def _render(plan: ClusterPlan, args: argparse.Namespace) -> int:
    from clusterforge.safe_write import write_tree

    written = write_tree(args.output, _rendered(plan), force=args.force)
    for path in written:
        console.print(str(path), markup=False, highlight=False, soft_wrap=True)
    console.print(f"{len(written)} files written to {args.output}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _draw(plan: ClusterPlan, args: argparse.Namespace) -> int:
    from clusterforge.topology.draw import pick_fabric, render_svg  # only this command needs them

    if not plan.fabrics:
        raise UsageError(f"{plan.path}: the topology has no fabrics to draw")
    if args.fabric is not None and args.fabric not in plan.fabrics:
        raise UsageError(f"no fabric {args.fabric!r} in {plan.path}; expected one of {', '.join(plan.fabrics)}")
    path = Path(args.output)
    name = pick_fabric(plan, args.fabric)
    svg = render_svg(plan, fabric=name)
    try:
        path.write_text(svg)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    # Which fabric, and its switches next to the total validate reports for all fabrics.
    others = [other for other in plan.fabrics if other != name]
    drawn = f"{name} fabric: {len(plan.fabrics[name].switches)} of the topology's {plan.switch_count()} switches"
    if others:
        drawn += f" (other fabrics: {', '.join(others)}; draw one with --fabric)"
    console.print(drawn, highlight=False, soft_wrap=True, markup=False)
    console.print(f"drawing written to {path}", highlight=False, soft_wrap=True, markup=False)
    return 0


def _count_table(title: str, columns: tuple[str, str], counts: dict, total: int) -> Table:
    """A count per name and a bold total row."""
    table = Table(title=escape(title))
    table.add_column(columns[0])
    table.add_column(columns[1], justify="right")
    for name, count in counts.items():
        table.add_row(escape(name), str(count))
    table.add_row("total", str(total), style="bold")
    return table
