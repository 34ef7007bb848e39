"""One command at a time on a lab's state directory, whichever checkout it runs from.

`lab up` rewrites the lab's inventory, host_vars and known_hosts; two at once (two checkouts,
two shells) would leave one's files describing the other's nodes. The lock is fcntl's, on a
file in the lab's directory, so it goes when its process goes, even killed; the file says who
holds it so that the refusal can name them."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from clusterforge.errors import UsageError

LOCK_FILE = ".lock"


@contextlib.contextmanager
def held(lab_dir: Path, lab_name: str, command: str, checkout: str) -> Iterator[None]:
    """Hold the lab's lock while the block runs; refuse at once if another process holds it."""
    lab_dir.mkdir(parents=True, exist_ok=True)
    path = lab_dir / LOCK_FILE
    # O_CREAT without O_TRUNC: the holder's record stays readable until this process holds the lock.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(_refusal(lab_name, handle.read())) from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "command": command, "checkout": checkout}))
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()  # released: no stale holder to name


def _refusal(lab_name: str, record: str) -> str:
    try:
        holder = json.loads(record)
        who = f"`clusterforge lab {holder['command']}` from the checkout {holder['checkout']} (pid {holder['pid']})"
    except (ValueError, TypeError, KeyError):
        who = "another clusterforge command"
    return (
        f"lab {lab_name!r} is busy: {who} is changing it. Wait for it to finish, "
        f"or give this checkout a lab of its own with --name"
    )
