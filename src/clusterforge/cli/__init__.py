"""clusterforge: provision GPU training clusters with Ansible, on a local container lab
or a real cluster."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.markup import escape

from clusterforge import __version__
from clusterforge.cli import check as check_cli
from clusterforge.cli import lab as lab_cli
from clusterforge.cli import run as run_cli
from clusterforge.cli import topology as topology_cli
from clusterforge.errors import EXIT_INTERRUPTED, EXIT_USAGE, ClusterforgeError

err_console = Console(stderr=True)


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on bad arguments; clusterforge documents 4 for that."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clusterforge", description=__doc__)
    parser.add_argument("--version", action="version", version=f"clusterforge {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    for group in (lab_cli, topology_cli, run_cli, check_cli):
        group.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "lab":
            return lab_cli.run(args)
        if args.command == "topology":
            return topology_cli.run(args)
        if args.command in check_cli.COMMANDS:
            return check_cli.run(args)
        return run_cli.run(args)
    except ClusterforgeError as exc:
        # The message quotes input (patterns, names, paths): escaped, Rich shows it as it is.
        err_console.print(f"[bold red]clusterforge: error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("clusterforge: interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
