"""DCGM (the lab mirror's stand-in package) on a node without GPUs: installed at converge.yml's
version, held and pinned, its host engine unit stopped and disabled."""

from __future__ import annotations

PACKAGE = "datacenter-gpu-manager"
VERSION = "1:3.3.5"  # converge.yml's dcgm_version


def test_the_stand_in_is_installed_at_the_pinned_version_and_held(host):
    status = host.check_output(
        f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}} ${{binary:Summary}}' {PACKAGE}"
    )
    assert status.startswith(f"hi {VERSION} clusterforge test stand-in")
    assert PACKAGE in host.check_output("apt-mark showhold").splitlines()


def test_the_package_is_pinned_to_that_version(host):
    pin = host.file("/etc/apt/preferences.d/clusterforge-dcgm").content_string
    assert f"Package: {PACKAGE}\nPin: version {VERSION}\nPin-Priority: 1001" in pin


def test_the_source_trusts_its_key_for_nvidia_s_repository_only(host):
    sources = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string
    assert "URIs: http://127.0.0.1:8080/compute/cuda/repos/debian12/x86_64/" in sources
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in sources


def test_the_host_engine_is_off_without_gpus(host):
    service = host.service("nvidia-dcgm")
    assert not service.is_enabled
    assert not service.is_running
    description = host.check_output("systemctl show --property=Description nvidia-dcgm.service")
    assert "clusterforge test stand-in" in description
