"""Tables piped or in CI: as wide as their widest cells, never a cut value."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from clusterforge.cli import lab as lab_cli
from clusterforge.cli.tables import print_table
from clusterforge.lab.cluster import NodeStatus
from tests.unit.clusterforge.topology.test_summary import SUPERPOD, parse

LONG = "clusterforge-a-lab-with-a-long-name-head01"


def _table() -> Table:
    table = Table(title="lab nodes")
    for column in ("host", "container", "image"):
        table.add_column(column)
    table.add_row("head01", LONG, "clusterforge/lab-node:trixie")
    return table


def test_off_a_terminal_the_table_takes_the_width_its_cells_need():
    out = io.StringIO()
    print_table(Console(file=out, width=40), _table())
    text = out.getvalue()
    assert LONG in text and "clusterforge/lab-node:trixie" in text and "…" not in text
    row = next(line for line in text.splitlines() if LONG in line)
    assert len(row) > 40  # wider than the 40 columns the console assumed


def test_on_a_terminal_the_table_fits_the_terminal():
    out = io.StringIO()
    print_table(Console(file=out, width=40, force_terminal=True, color_system=None), _table())
    assert all(len(line) <= 40 for line in out.getvalue().splitlines())
    assert LONG not in out.getvalue()  # folded or cut to fit, as Rich does on a terminal


def test_lab_status_piped_shows_every_value_whole(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(lab_cli, "console", Console(file=None))  # stdout, captured: not a terminal
    node = NodeStatus("head01", "head", LONG, "running", "running", "clusterforge/lab-node:trixie", "172.18.0.2")
    lab_cli._print_status([node, node])
    out = capsys.readouterr().out
    assert out.count(LONG) == 2 and "…" not in out


def test_topology_show_piped_cuts_nothing(capsys, monkeypatch):
    from clusterforge.cli import topology as topology_cli

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(topology_cli, "console", Console(file=None))
    assert topology_cli.run(parse("topology", "show", str(SUPERPOD))) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    # The fabric's kind cell whole on one line, as summarise() gives it.
    assert "│ compute, infiniband, rail_optimized_fat_tree, QM9700 │" in out
    assert "(bill of materials: clusterforge topology render)\n" in out
