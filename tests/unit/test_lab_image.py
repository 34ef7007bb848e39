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
