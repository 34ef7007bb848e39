"""NCCL from Debian 13 contrib pinned and held, answering its version, and nccl-tests (the lab mirror's
stand-in archive, converge.yml's nccl_tests_version standin-1) built under its versioned prefix with the
stable link pointing at it."""

from __future__ import annotations

import pytest

VERSION = "2.22.3-1-1"  # Debian 13 contrib's libnccl2, the role's pin there
# NCCL_VERSION_CODE of 2.22.3: 2 * 10000 + 22 * 100 + 3.
VERSION_CODE = "22203"
CUDA_STANDIN = "/opt/clusterforge-standin/cuda-standin"  # converge.yml's nccl_tests_cuda_home
PREFIX = "/opt/nccl-tests/standin-1"
BINARIES = [
    "all_reduce_perf",
    "all_gather_perf",
    "broadcast_perf",
    "reduce_scatter_perf",
    "reduce_perf",
    "alltoall_perf",
    "sendrecv_perf",
]
PROBE = r"""#include <stdio.h>
#include <nccl.h>
int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return 1;
  printf("%d %d\n", version, NCCL_VERSION_CODE);
  return 0;
}
"""


@pytest.mark.parametrize("package", ["libnccl2", "libnccl-dev"])
def test_nccl_is_installed_at_the_pinned_version_and_held(host, package):
    # dpkg's status "hi": wanted held, installed.
    assert host.check_output(
        f"dpkg-query --show --showformat '${{Version}} ${{db:Status-Abbrev}}' {package}"
    ).split() == [VERSION, "hi"]
    assert package in host.check_output("apt-mark showhold").splitlines()


def test_the_pin_and_contrib_from_a_signed_source_of_the_role_s_own(host):
    policy = host.check_output("apt-cache policy libnccl2")
    assert f"Candidate: {VERSION}" in policy
    assert " 1001\n" in policy
    assert "trixie/contrib" in policy
    source = host.file("/etc/apt/sources.list.d/clusterforge-debian-archive.sources").content_string.splitlines()
    assert "Components: contrib non-free non-free-firmware" in source
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in source
    assert host.file("/etc/apt/sources.list").content_string.strip() == "deb http://deb.debian.org/debian trixie main"


def test_the_library_and_the_header_both_say_the_pinned_version(host):
    host.check_output("mkdir -p /tmp/verify-nccl && cat > /tmp/verify-nccl/version.c <<'EOF'\n" + PROBE + "EOF")
    # nccl.h includes cuda_runtime.h: the stand-in headers stand for the CUDA toolkit.
    host.check_output(
        f"gcc -Wall -Werror -I{CUDA_STANDIN}/include -o /tmp/verify-nccl/version /tmp/verify-nccl/version.c -lnccl"
    )
    assert host.check_output("/tmp/verify-nccl/version") == f"{VERSION_CODE} {VERSION_CODE}"


@pytest.mark.parametrize("binary", BINARIES)
def test_every_benchmark_is_built_and_executable(host, binary):
    built = host.file(f"{PREFIX}/build/{binary}")
    assert built.is_file
    assert built.mode & 0o100


def test_the_stable_link_points_at_this_version(host):
    link = host.file("/opt/nccl-tests/build")
    assert link.is_symlink
    assert link.linked_to == f"{PREFIX}/build"


# The stand-in calls ncclGetVersion and exits 2: proof it was linked against the real libnccl.
def test_a_built_benchmark_is_the_stand_in_linked_against_nccl_2_22_3(host):
    run = host.run("/opt/nccl-tests/build/all_reduce_perf")
    assert run.rc == 2
    assert "clusterforge test stand-in" in run.stdout
    assert f"NCCL version code {VERSION_CODE}" in run.stdout
