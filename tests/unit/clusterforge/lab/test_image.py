from __future__ import annotations

import pytest

from clusterforge.errors import UsageError
from clusterforge.lab import image


def test_image_carries_systemd_and_python():
    assert {"python3", "systemd", "systemd-sysv"} <= set(image.packages())


def test_content_digest_differs_per_release_and_is_stable():
    assert image.content_digest("trixie") == image.content_digest("trixie")
    assert image.content_digest("trixie") != image.content_digest("bookworm")


def test_dockerfile_and_debootstrap_builds_install_the_same_unit():
    dockerfile = (image._image_files() / "Dockerfile").read_text()
    assert image.NETNS_UNIT in dockerfile
    assert "packages.txt" in dockerfile


def test_unknown_builder_is_refused():
    with pytest.raises(UsageError, match="unknown image builder 'kaniko'"):
        image.ensure_image(client=None, release="trixie", builder="kaniko")


def test_apt_lists_are_dropped_and_dated_to_the_epoch(tmp_path):
    """Ansible's apt module reads the lists directory's mtime as the last update: a fresh
    image must not pass for an updated cache, or cache_valid_time skips the update."""
    lists = tmp_path / "var" / "lib" / "apt" / "lists"
    archives = tmp_path / "var" / "cache" / "apt" / "archives"
    periodic = tmp_path / "var" / "lib" / "apt" / "periodic"
    for folder in (lists / "partial", archives, periodic):
        folder.mkdir(parents=True)
    (lists / "deb.debian.org_debian_dists_trixie_InRelease").write_text("x")
    (lists / "lock").write_text("")
    (archives / "python3_3.13_amd64.deb").write_text("x")
    (periodic / "update-success-stamp").write_text("")
    image._drop_apt_lists(tmp_path)
    assert sorted(p.name for p in lists.iterdir()) == ["lock", "partial"]
    assert not list(archives.glob("*.deb")) and not list(periodic.iterdir())
    assert lists.stat().st_mtime == 0
    dockerfile = (image._image_files() / "Dockerfile").read_text()
    assert "touch -d @0 /var/lib/apt/lists" in dockerfile
