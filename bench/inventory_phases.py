"""`ansible-inventory` with its phases timed, for the scale benchmark.

    python bench/inventory_phases.py PHASES.json ansible-inventory-arguments...

Runs ansible-inventory's own entry point in this process and writes the seconds spent in
parsing the inventory sources (the only phase an inventory plugin or the yaml plugin
controls), in merging each host's variables, and in encoding the JSON output, so the
benchmark can show which part of `--list` is the same work on every route."""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

from ansible.cli import inventory as inventory_cli
from ansible.inventory.manager import InventoryManager

PHASES: dict[str, float] = {}


def _timed(function, phase: str):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            PHASES[phase] = round(PHASES.get(phase, 0.0) + time.perf_counter() - start, 2)

    return wrapper


def main() -> int:
    target, arguments = Path(sys.argv[1]), sys.argv[2:]
    start = time.perf_counter()
    InventoryManager.parse_sources = _timed(InventoryManager.parse_sources, "parse_sources_s")
    inventory_cli.InventoryCLI.json_inventory = _timed(inventory_cli.InventoryCLI.json_inventory, "host_vars_s")
    inventory_cli.InventoryCLI.dump = staticmethod(_timed(inventory_cli.InventoryCLI.dump, "json_s"))
    sys.argv = ["ansible-inventory", *arguments]
    try:
        inventory_cli.main()
    except SystemExit as done:
        code = done.code or 0
    else:
        code = 0
    PHASES["total_s"] = round(time.perf_counter() - start, 2)
    target.write_text(json.dumps(PHASES) + "\n")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
