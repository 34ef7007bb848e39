"""The driver from NVIDIA's repository layout (the lab mirror's stand-ins) at converge.yml's pinned
nvidia_driver_version: installed, held, apt's candidate held back from the newer stand-in, and the
source signed-by its own keyring."""

from __future__ import annotations

import pytest

PACKAGES = ["cuda-drivers-550", "nvidia-driver-cuda"]
PINNED = "550.127.08-1"  # converge.yml's nvidia_driver_version
NEWER = "550.163.01-1"  # also in the mirror: what apt would take without the pin
REPO_URL = "http://127.0.0.1:8080/compute/cuda/repos/debian12/x86_64/"  # converge.yml's nvidia_driver_cuda_repo_url


@pytest.mark.parametrize("package", PACKAGES)
def test_the_pinned_stand_ins_are_installed_and_held(host, package):
    status = host.check_output(
        f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}} ${{binary:Summary}}' {package}"
    )
    assert status.startswith(f"hi {PINNED} clusterforge test stand-in")


def test_the_newer_version_is_in_the_repository_but_not_the_candidate(host):
    policy = host.check_output("apt-cache policy nvidia-driver-cuda")
    assert f"Candidate: {PINNED}" in policy
    assert NEWER in policy


def test_the_source_is_nvidia_s_layout_signed_by_its_own_keyring(host):
    lines = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string.splitlines()
    assert f"URIs: {REPO_URL}" in lines
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in lines
