"""clusterforge lab: the local container lab (the embedded default)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.table import Table

from clusterforge.cli.tables import print_table
from clusterforge.errors import UsageError
from clusterforge.lab import spec
from clusterforge.lab.debootstrap import PER_PACKAGE, Step
from clusterforge.paths import project_dir
from clusterforge.topology import TopologyError, load

console = Console()


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    lab = subparsers.add_parser("lab", help="the local container lab (the embedded default)")
    lab_commands = lab.add_subparsers(dest="lab_command", required=True, parser_class=type(lab))
    lab_up = lab_commands.add_parser("up", help="build the image once, start the lab nodes")
    lab_up.add_argument(
        "--size",
        help=f"compute nodes: {', '.join(f'{k} ({v})' for k, v in spec.SIZES.items())}; "
        f"default {spec.DEFAULT_SIZE} for the built-in lab topology",
    )
    lab_up.add_argument("--topology", help="the lab's topology file (default inventories/lab/lab.topology.yml)")
    lab_up.add_argument(
        "--connection",
        default=spec.DEFAULT_CONNECTION,
        choices=spec.CONNECTIONS,
        help="how Ansible reaches the nodes: ssh (a sudoer with the lab's key, as on a real cluster; "
        "the default) or docker (docker exec as root)",
    )
    _add_image_options(lab_up)
    lab_image = lab_commands.add_parser("image", help="build the lab node image only")
    _add_image_options(lab_image)
    lab_image.add_argument("--rebuild", action="store_true", help="build even if cached")
    lab_commands.add_parser("status", help="show the lab nodes")
    lab_commands.add_parser("down", help="remove the lab nodes and their network")
    for sub in lab_commands.choices.values():
        sub.add_argument("--name", default="lab", help="lab name, for several labs (default lab)")

    return lab


def _add_image_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--os",
        dest="release",
        default=spec.DEFAULT_RELEASE,
        help=f"Debian release: {', '.join(spec.DEBIAN_RELEASES)} (default {spec.DEFAULT_RELEASE})",
    )
    parser.add_argument(
        "--builder",
        default="auto",
        choices=spec.BUILDERS,
        help="image build: Dockerfile if a registry answers, else debootstrap",
    )
    parser.add_argument("--mirror", help="Debian mirror for debootstrap")


def run(args: argparse.Namespace) -> int:
    from clusterforge.lab import cluster, engine, image  # Docker SDK only when a lab command runs

    if args.lab_command == "up":
        if args.size is not None:
            spec.check_size(args.size)  # reject a bad size before touching Docker
        if args.topology:
            source, size = Path(args.topology), args.size
        else:
            source = project_dir() / "inventories" / "lab" / "lab.topology.yml"
            size = args.size or spec.DEFAULT_SIZE
        if not source.is_file():
            raise UsageError(f"lab topology not found: {source}")
        with _locked(args):
            try:
                # Validate before touching Docker: the file as given first, so that errors name it
                # and its lines, then (prepare) the lab's sized copy.
                load(source, links=False)
                cluster.prepare(source, size, args.name, args.connection)
            except TopologyError as exc:
                raise UsageError(str(exc)) from None
            client = engine.connect()
            with _image_steps() as on_step:
                path = cluster.up(
                    client,
                    source,
                    size=size,
                    release=args.release,
                    lab_name=args.name,
                    builder=args.builder,
                    mirror=args.mirror,
                    connection=args.connection,
                    log=_log,
                    on_step=on_step,
                    checkout=_checkout(),
                )
            _print_status(cluster.status(client, args.name))
        _log(f"inventory: {path}")
    elif args.lab_command == "image":
        spec.check_release(args.release)
        with _image_steps() as on_step:
            tag = image.ensure_image(
                engine.connect(),
                args.release,
                builder=args.builder,
                mirror=args.mirror,
                rebuild=args.rebuild,
                log=_log,
                on_step=on_step,
            )
        _log(f"image: {tag}")
    elif args.lab_command == "status":
        nodes = cluster.status(engine.connect(), args.name)
        if not nodes:
            _log(f"lab {args.name!r} is not up (clusterforge lab up)")
            return 1
        _print_status(nodes)
        _log(f"inventory: {cluster.inventory_path(args.name)}")
    else:
        with _locked(args):
            removed = cluster.down(engine.connect(), args.name, log=_log)
        _log(f"lab {args.name!r}: {removed} node(s) removed")
    return 0


def _checkout() -> str:
    """The checkout this command runs from, as the lab's lock and labels name it."""
    try:
        return str(project_dir())
    except UsageError:
        return "(no checkout: an installed clusterforge)"


def _locked(args: argparse.Namespace):
    from clusterforge.lab import cluster, lock

    spec.check_lab_name(args.name)  # before the name becomes a directory
    return lock.held(cluster.lab_dir(args.name), args.name, args.lab_command, _checkout())


@contextlib.contextmanager
def _image_steps() -> Iterator[Callable[[Step], None] | None]:
    """On a terminal, debootstrap's steps as progress bars (its totals are known); elsewhere None:
    the build logs each stage as a line (debootstrap.StageLog)."""
    if not console.is_terminal:
        yield None
        return
    with Progress(*_bar_columns(), console=console) as progress:
        yield _BarSteps(progress)


def _bar_columns():
    # markup=False: package names and mirror URLs are shown as they are.
    return TextColumn("{task.description}", markup=False), BarColumn(), TaskProgressColumn()


class _BarSteps:
    """A bar per progress step of debootstrap; its messages printed above the bars, the ones it
    gives per package shown in the current bar as they pass."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.stage: str | None = None
        self.task = None
        self.text = ""

    def __call__(self, step: Step) -> None:
        if step.kind == "P":
            if step.name != self.stage or self.task is None:
                if self.task is not None:
                    self.progress.update(self.task, completed=self.progress.tasks[self.task].total)
                self.stage, self.text = step.name, step.text
                self.task = self.progress.add_task(step.text, total=step.end or None)
            # The most reached: debootstrap names a finished download once more at 0.
            done = max(step.now or 0, self.progress.tasks[self.task].completed)
            self.progress.update(self.task, completed=done, total=step.end or None)
        elif step.name in PER_PACKAGE and self.task is not None:
            self.progress.update(self.task, description=f"{self.text}: {step.text}")
        else:
            prefix = {"W": "warning: ", "E": "error: "}.get(step.kind, "")
            self.progress.console.print(f"debootstrap: {prefix}{step.text}", markup=False, highlight=False)


def _log(message: str) -> None:
    # Plain text: paths, lab and host names are not Rich markup.
    console.print(message, soft_wrap=True, markup=False)


def _print_status(nodes) -> None:
    table = Table(title="lab nodes")
    for column in ("host", "group", "container", "state", "systemd", "address", "image"):
        table.add_column(column)
    for node in nodes:
        table.add_row(
            *(
                escape(str(value))
                for value in (node.host, node.group, node.container, node.state, node.systemd, node.address, node.image)
            )
        )
    print_table(console, table)
