"""What the fake scheduler tools share: one call at a time reads, changes and writes a JSON file of
node states, and every call is logged (one JSON list a line) for the tests to read."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

# handle(nodes, argv) -> exit code, or None when the call is refused without touching the state
Handler = Callable[[dict, list[str]], "int | None"]


def serve(argv: list[str], state_variable: str, log_variable: str, handle: Handler) -> int:
    state_file = Path(os.environ[state_variable])
    # Ansible runs the hosts in parallel: one call at a time reads and writes the state file.
    with Path(f"{state_file}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with Path(os.environ[log_variable]).open("a") as log:
            log.write(json.dumps(argv) + "\n")
        nodes = json.loads(state_file.read_text())
        code = handle(nodes, argv)
        if code is None:
            return 2
        state_file.write_text(json.dumps(nodes))
        return code
