"""Write a set of files into an output directory the user named, without harming what is there.

- Only files clusterforge wrote there before, unchanged since, are replaced: MARKER in the
  directory lists them with their SHA-256. Any other file in the way (a user's, or one edited
  since) is refused, naming it, unless ``force``; files not in the way stay untouched.
- Every file is written to a fresh temporary beside it (O_CREAT|O_EXCL|O_NOFOLLOW under a random
  name, so a symbolic link planted at a predictable name is never followed) and renamed into place
  only once all of them are written: an error leaves no half-written tree, no temporary and no
  directory it created, and a failed rename puts back the files already replaced.
- Directories are walked with O_NOFOLLOW from the output directory down, so a symbolic link inside
  it cannot send a file elsewhere.

Errors are UsageError naming the path and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from clusterforge.errors import UsageError
from clusterforge.safe_read import MiB, read_bytes

MARKER = ".clusterforge-output.json"
MARKER_SCHEMA = "clusterforge.output/1"
MARKER_MAX_BYTES = 16 * MiB  # a path and a digest per file written
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def write_tree(outdir: str | os.PathLike[str], files: dict[str, str], *, force: bool = False) -> list[Path]:
    """Write {relative path: text} under outdir (created if missing); the paths written."""
    if not str(outdir).strip():
        # Path("") is the current directory: an empty -o (an unset shell variable) would scatter
        # the files wherever the command happens to run.
        raise UsageError("the output directory is empty: name a directory (use . for the current one)")
    outdir = Path(outdir)
    encoded = {_relative(name): _encode(outdir / name, text) for name, text in files.items()}
    listed = _check_targets(outdir, list(encoded), force)
    listed.update({str(relative): _digest(data) for relative, data in encoded.items()})
    with _Transaction(outdir) as tx:
        for relative, data in encoded.items():
            tx.stage(relative, data)
        tx.stage(PurePosixPath(MARKER), _marker(listed))
        tx.commit()
    return [outdir / relative for relative in encoded]


def _relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or any(part in ("", ".", "..") for part in path.parts):
        raise UsageError(f"refusing to write {name!r}: expected a relative path inside the output directory")
    if str(path) == MARKER:
        raise UsageError(f"refusing to write {name!r}: clusterforge keeps its list of written files there")
    return path


def _encode(path: Path, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"cannot write {path}: {exc.reason} in {exc.object[exc.start : exc.end]!a}") from None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _listed(outdir: Path) -> dict[str, str]:
    """{relative path: sha256} of the files MARKER says clusterforge wrote in outdir ({} without one)."""
    marker = outdir / MARKER
    if not os.path.lexists(marker):
        return {}
    try:
        data = json.loads(read_bytes(marker, MARKER_MAX_BYTES, follow_symlinks=False))
    except (ValueError, RecursionError):
        data = None
    files = data.get("files") if isinstance(data, dict) and data.get("schema") == MARKER_SCHEMA else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise UsageError(f"{marker}: not clusterforge's list of written files; remove it or pass --force")
    return files


def _marker(files: dict[str, str]) -> bytes:
    document = {"schema": MARKER_SCHEMA, "written_by": "clusterforge", "files": dict(sorted(files.items()))}
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def _check_targets(outdir: Path, relatives: list[PurePosixPath], force: bool) -> dict[str, str]:
    """Refuse, before anything is written, paths that are not ours to replace: a file MARKER does
    not list, or one changed since (a user's edit). With force only links and directories in the
    way are refused. What MARKER lists now."""
    if os.path.lexists(outdir) and not outdir.is_dir():
        raise UsageError(f"{outdir}: exists and is not a directory; expected an output directory")
    try:
        listed = _listed(outdir)
    except UsageError:
        if not force:
            raise
        listed = {}
    refused = []
    for relative in relatives:
        for parent in list(reversed(relative.parents))[1:]:
            _require_directory(outdir / parent)
        target = outdir / relative
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(mode):
            raise UsageError(f"{target}: a directory is in the way of a file clusterforge writes")
        if force:
            continue
        if str(relative) not in listed or not stat.S_ISREG(mode):
            refused.append(f"{target} (not written by clusterforge)")
        elif _file_digest(target) != listed[str(relative)]:
            refused.append(f"{target} (changed since clusterforge wrote it)")
    if refused:
        raise UsageError(
            f"refusing to replace {len(refused)} file(s): {', '.join(refused[:5])}{' ...' if len(refused) > 5 else ''}"
            f"; {outdir / MARKER} lists what clusterforge wrote there; move them away or pass --force"
        )
    return listed


def _file_digest(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _require_directory(path: Path) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise UsageError(f"{path}: a symbolic link; expected a directory (clusterforge does not write through links)")
    if not stat.S_ISDIR(mode):
        raise UsageError(f"{path}: exists and is not a directory")


@dataclass
class _Staged:
    parent: int  # fd of the directory
    temporary: str
    name: str
    relative: PurePosixPath
    backup: str | None = None  # a hard link to the file it replaces, until the commit is done


@dataclass
class _Transaction:
    """Temporaries written beside their targets and renamed into place by commit(). A failure
    before commit() removes every temporary and directory made; a rename that fails puts back
    the files already replaced, so the directory is as it was."""

    outdir: Path
    _dirs: dict[PurePosixPath, int] = field(default_factory=dict)  # relative directory -> open fd
    _made_dirs: list[tuple[int, str]] = field(default_factory=list)  # (parent fd, name) created by us
    _made_outdir: list[Path] = field(default_factory=list)
    _staged: list[_Staged] = field(default_factory=list)
    _committed: bool = False

    def __enter__(self) -> _Transaction:
        missing = [p for p in (self.outdir, *self.outdir.parents) if not os.path.lexists(p)]
        for path in reversed(missing):
            self._call(path, os.mkdir, path, 0o755)
            self._made_outdir.append(path)
        self._dirs[PurePosixPath()] = self._call(self.outdir, os.open, self.outdir, os.O_RDONLY | os.O_DIRECTORY)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._committed:
            self._undo()
        for fd in self._dirs.values():
            os.close(fd)

    def stage(self, relative: PurePosixPath, data: bytes) -> None:
        parent = self._directory(relative.parent)
        target = self.outdir / relative
        temporary, fd = self._fresh(target, "partial", lambda name: os.open(name, _FILE_FLAGS, 0o644, dir_fd=parent))
        self._staged.append(_Staged(parent, temporary, relative.name, relative))
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        except OSError as exc:
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None

    def commit(self) -> None:
        for entry in self._staged:
            target = self.outdir / entry.relative
            if os.path.lexists(target):
                entry.backup, _ = self._fresh(target, "old", lambda name, e=entry: self._link(e, name))
        done: list[_Staged] = []
        try:
            # The marker (staged last) goes first, so a file renamed into place is always listed.
            for entry in [self._staged[-1], *self._staged[:-1]]:
                self._call(
                    self.outdir / entry.relative,
                    os.replace,
                    entry.temporary,
                    entry.name,
                    src_dir_fd=entry.parent,
                    dst_dir_fd=entry.parent,
                )
                done.append(entry)
        except UsageError:
            for entry in reversed(done):
                with suppress(OSError):
                    if entry.backup:
                        os.replace(entry.backup, entry.name, src_dir_fd=entry.parent, dst_dir_fd=entry.parent)
                        entry.backup = None
                    else:
                        os.unlink(entry.name, dir_fd=entry.parent)
            raise
        self._committed = True
        self._drop_backups()

    @staticmethod
    def _link(entry: _Staged, name: str) -> None:
        os.link(entry.name, name, src_dir_fd=entry.parent, dst_dir_fd=entry.parent, follow_symlinks=False)

    @staticmethod
    def _fresh(target: Path, kind: str, create: Callable[[str], Any]) -> tuple[str, Any]:
        """create(name) at a new random name beside target; never reuses a name someone holds."""
        while True:
            name = f".{target.name}.{secrets.token_hex(6)}.{kind}"
            try:
                return name, create(name)
            except FileExistsError:
                continue
            except OSError as exc:
                raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None

    def _directory(self, relative: PurePosixPath) -> int:
        if relative in self._dirs:
            return self._dirs[relative]
        parent = self._directory(relative.parent)
        path = self.outdir / relative
        try:
            fd = os.open(relative.name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            self._call(path, os.mkdir, relative.name, 0o755, dir_fd=parent)
            self._made_dirs.append((parent, relative.name))
            fd = self._call(path, os.open, relative.name, _DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            raise UsageError(f"{path}: expected a directory, not a symbolic link or file ({exc.strerror})") from None
        self._dirs[relative] = fd
        return fd

    def _drop_backups(self) -> None:
        for entry in self._staged:
            if entry.backup:
                with suppress(OSError):
                    os.unlink(entry.backup, dir_fd=entry.parent)

    def _undo(self) -> None:
        # Cleanup after a failure: the error that caused it is the one to report, not these.
        for entry in self._staged:
            with suppress(OSError):
                os.unlink(entry.temporary, dir_fd=entry.parent)
        self._drop_backups()
        for parent, name in reversed(self._made_dirs):
            with suppress(OSError):
                os.rmdir(name, dir_fd=parent)
        for path in reversed(self._made_outdir):
            with suppress(OSError):
                os.rmdir(path)

    @staticmethod
    def _call(path: Path, function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
