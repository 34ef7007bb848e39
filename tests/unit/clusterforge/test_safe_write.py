"""clusterforge.safe_write: all files or none, only over files clusterforge wrote."""

from __future__ import annotations

import errno
import json
import os

import pytest

from clusterforge import safe_write
from clusterforge.errors import UsageError

FILES = {"a.txt": "a\n", "deep/er/b.txt": "b\n", "deep/c.txt": "c\n"}


def contents(path) -> dict:
    """Every path under path: its bytes, or None for a directory."""
    return {p: None if p.is_dir() else p.read_bytes() for p in path.rglob("*")}


def test_writes_every_file_and_lists_it_with_its_digest(tmp_path):
    out = tmp_path / "new" / "out"
    written = safe_write.write_tree(out, FILES)
    assert [p.read_text() for p in written] == list(FILES.values())
    marker = json.loads((out / safe_write.MARKER).read_text())
    assert marker["written_by"] == "clusterforge"
    assert sorted(marker["files"]) == sorted(FILES)
    assert marker["files"]["a.txt"] == safe_write._digest(b"a\n")
    assert not list(out.rglob("*.partial"))


def test_a_failure_while_writing_leaves_nothing_behind(tmp_path, monkeypatch):
    """The third temporary cannot be written (a full disk): no file, temporary or directory stays."""
    out = tmp_path / "out"
    real_fdopen, opened = os.fdopen, []

    def full_disk(fd, *args, **kwargs):
        opened.append(fd)
        if len(opened) == 3:
            os.close(fd)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(safe_write.os, "fdopen", full_disk)
    with pytest.raises(UsageError, match=r"cannot write .*deep/c\.txt: No space left on device"):
        safe_write.write_tree(out, FILES)
    assert not out.exists()


def test_a_failed_rename_puts_the_replaced_files_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    safe_write.write_tree(out, FILES)
    before = contents(out)  # the marker included
    real_replace = os.replace

    def fail_on_b(src, dst, **kwargs):
        if dst == "b.txt" and src.endswith(".partial"):
            raise OSError(errno.EIO, "Input/output error")
        return real_replace(src, dst, **kwargs)

    # The marker and a.txt are renamed into place before b.txt's rename fails.
    monkeypatch.setattr(safe_write.os, "replace", fail_on_b)
    with pytest.raises(UsageError, match=r"deep/er/b\.txt: Input/output error"):
        safe_write.write_tree(out, {**{name: text.upper() for name, text in FILES.items()}, "new.txt": "new\n"})
    assert contents(out) == before


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "a/../../b", "", safe_write.MARKER])
def test_paths_outside_the_directory_are_refused(tmp_path, name):
    with pytest.raises(UsageError, match="refusing to write"):
        safe_write.write_tree(tmp_path / "out", {name: "x"})
    assert not (tmp_path / "out").exists() and not (tmp_path / "escape.txt").exists()


def test_force_replaces_foreign_files_but_never_writes_through_a_link(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("mine\n")
    with pytest.raises(UsageError, match="not written by clusterforge"):
        safe_write.write_tree(out, FILES)
    safe_write.write_tree(out, FILES, force=True)
    assert (out / "a.txt").read_text() == "a\n"
    (tmp_path / "elsewhere").mkdir()
    (out / "deep" / "er" / "b.txt").unlink()
    (out / "deep" / "er").rmdir()
    (out / "deep" / "er").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="a symbolic link; expected a directory"):
        safe_write.write_tree(out, FILES, force=True)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_text_utf8_cannot_hold_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(UsageError, match=r"cannot write .*b\.txt: surrogates not allowed"):
        safe_write.write_tree(tmp_path / "out", {"a.txt": "a\n", "b.txt": "\ud800"})
    assert not (tmp_path / "out").exists()
