"""clusterforge.safe_read: regular files and streams, never more than the limit."""

from __future__ import annotations

import io

import pytest

from clusterforge import safe_read
from clusterforge.errors import UsageError


def test_a_stream_over_the_limit_is_refused():
    assert safe_read.read_stream_text(io.BytesIO(b"0123456789"), 10) == "0123456789"
    with pytest.raises(UsageError, match="standard input: larger than 10 bytes"):
        safe_read.read_stream_text(io.BytesIO(b"0123456789a"), 10)


def test_a_link_is_followed_only_when_asked(tmp_path):
    (tmp_path / "real.txt").write_bytes(b"caf\xc3\xa9 \xff\r\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    assert safe_read.read_text(tmp_path / "link.txt", 100) == "caf\u00e9 \ufffd\r\n"  # line ends kept
    with pytest.raises(UsageError, match=r"link\.txt: a symbolic link; expected a regular file"):
        safe_read.read_text(tmp_path / "link.txt", 100, follow_symlinks=False)
    with pytest.raises(UsageError, match=r"cannot read .*missing\.txt: No such file"):
        safe_read.read_text(tmp_path / "missing.txt", 100)
