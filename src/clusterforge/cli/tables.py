"""Tables on a terminal and elsewhere (a pipe, a CI log, a file)."""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

# Wider than any table clusterforge prints: only the measuring uses it.
_UNBOUNDED = 1_000_000


def print_table(console: Console, table: Table) -> None:
    """On a terminal the table fits its width. Anywhere else no terminal width applies (Rich
    assumes 80 columns), so the table is printed as wide as its widest cells: a value piped to a
    file or a CI log is never cut (`clusterfor…`) nor folded."""
    if console.is_terminal:
        console.print(table)
        return
    needed = Measurement.get(console, console.options.update(max_width=_UNBOUNDED), table).maximum
    wide = Console(
        file=console.file,
        width=max(needed, console.width),
        color_system=None,
        highlight=False,
        emoji=False,
    )
    wide.print(table)
