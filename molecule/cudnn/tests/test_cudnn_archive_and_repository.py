"""cuDNN on two nodes (converge.yml): cudnn-archive has NVIDIA's real 9.10.2 libraries from the archive
under a versioned prefix, found by ld.so and answering their version; cudnn-repository has NVIDIA's
repository layout (stand-ins) pinned and held, and not Debian's nvidia-cudnn."""

from __future__ import annotations

import pytest

PREFIX = "/opt/cudnn/9.10.2.21-cuda12"  # cuDNN 9.10.2.21 for CUDA 12, the role's pinned default
# cudnnGetVersion() and CUDNN_VERSION of 9.10.2: 9 * 10000 + 10 * 100 + 2.
VERSION_CODE = "91002"
CUDA_HEADERS = "/opt/clusterforge-test/cuda-12.4/include"  # prepare.yml's
PACKAGES = ["libcudnn9-cuda-12", "libcudnn9-dev-cuda-12", "libcudnn9-headers-cuda-12"]
PINNED = "9.10.2.21-1"
NEWER = "9.11.0.98-1"  # also in the mirror
PROBE = r"""#include <stdio.h>
#include <cudnn.h>
int main(void) {
  printf("%zu %d\n", cudnnGetVersion(), CUDNN_VERSION);
  return 0;
}
"""


@pytest.fixture
def archive(node):
    return node("cudnn-archive")[0]


@pytest.fixture
def repository(node):
    return node("cudnn-repository")[0]


def test_ld_so_finds_libcudnn_under_the_versioned_prefix(archive):
    cache = archive.check_output("ldconfig -p")
    assert f"libcudnn.so.9 (libc6,x86-64) => {PREFIX}/lib/libcudnn.so.9" in cache
    assert f"libcudnn_graph.so.9 (libc6,x86-64) => {PREFIX}/lib/" in cache
    assert f"{PREFIX}/lib" in archive.file("/etc/ld.so.conf.d/clusterforge-cudnn.conf").content_string.splitlines()
    links = archive.check_output(f"readlink {PREFIX}/lib/libcudnn.so {PREFIX}/lib/libcudnn.so.9").splitlines()
    assert links == ["libcudnn.so.9", "libcudnn.so.9.10.2"]


def test_the_library_and_the_header_both_say_the_pinned_version(archive):
    archive.check_output("mkdir -p /tmp/verify-cudnn && cat > /tmp/verify-cudnn/version.c <<'EOF'\n" + PROBE + "EOF")
    archive.check_output(
        f"gcc -Wall -Werror -I{PREFIX}/include -I{CUDA_HEADERS} -o /tmp/verify-cudnn/version"
        f" /tmp/verify-cudnn/version.c -L{PREFIX}/lib -lcudnn"
    )
    # No LD_LIBRARY_PATH and no rpath: ld.so finds libcudnn through the role's ld.so.conf.d file.
    assert archive.check_output("/tmp/verify-cudnn/version") == f"{VERSION_CODE} {VERSION_CODE}"


@pytest.mark.parametrize("package", PACKAGES)
def test_the_pinned_stand_ins_are_installed_and_held(repository, package):
    status = repository.check_output(
        f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}} ${{binary:Summary}}' {package}"
    )
    assert status.startswith(f"hi {PINNED} clusterforge test stand-in")


def test_the_newer_version_is_not_the_candidate_and_the_source_is_signed_by_its_keyring(repository):
    policy = repository.check_output("apt-cache policy libcudnn9-dev-cuda-12")
    assert f"Candidate: {PINNED}" in policy
    assert NEWER in policy
    lines = repository.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string.splitlines()
    assert "URIs: http://127.0.0.1:8080/compute/cuda/repos/debian12/x86_64/" in lines
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in lines


def test_debian_s_nvidia_cudnn_is_not_installed(repository):
    assert not repository.package("nvidia-cudnn").is_installed
