"""Read an input file that may be hostile or a mistake: only a regular file, only up to a size.

A FIFO would block the reader forever and /dev/zero would fill memory, so the file is opened
without blocking and checked with fstat (no race between the check and the read), and never more
than ``limit`` bytes are read. ``follow_symlinks=False`` refuses a symbolic link itself, for files
found by listing a directory that must not lead out of it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from clusterforge.errors import UsageError

MiB = 1024 * 1024


def read_bytes(path: str | os.PathLike[str], limit: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file at path; UsageError naming the path when it is anything else
    (missing, a symbolic link when follow_symlinks is false, a directory, FIFO or device) or larger
    than limit."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_symlinks and Path(path).is_symlink():
            raise UsageError(f"{path}: a symbolic link; expected a regular file") from None
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UsageError(f"{path}: {_kind(mode)}; expected a regular file")
        data = _read_up_to(fd, limit + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UsageError(f"{path}: larger than {_size(limit)}; expected at most that")
    return data


def read_text(path: str | os.PathLike[str], limit: int, *, follow_symlinks: bool = True) -> str:
    """read_bytes as UTF-8; bytes that are not UTF-8 become U+FFFD, line ends stay as they are."""
    return read_bytes(path, limit, follow_symlinks=follow_symlinks).decode("utf-8", errors="replace")


def read_stream_text(stream, limit: int, name: str = "standard input") -> str:
    """Up to limit bytes of a binary stream (standard input) as text, like read_text."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"{name}: larger than {_size(limit)}; expected at most that")
    return data.decode("utf-8", errors="replace")


def _read_up_to(fd: int, count: int) -> bytes:
    chunks, left = [], count
    while left > 0:
        chunk = os.read(fd, min(left, MiB))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit >= MiB else f"{limit} bytes"
