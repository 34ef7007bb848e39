"""The cuda role on two nodes (molecule/cuda/molecule.yml): cuda-debian has Debian's real CUDA 12.4
toolkit, pinned and held, that compiles, links and runs a CUDA program; cuda-repo has the NVIDIA
repository's releases (stand-ins) side by side, pinned and held, with the default link."""

from __future__ import annotations

import re

import pytest

# Debian 13's non-free builds of CUDA 12.4.1 (cuda-debian's inputs keep the distribution source).
DEBIAN_PACKAGES = {
    "nvidia-cuda-toolkit": "12.4.131~12.4.1-2",
    "nvidia-cuda-dev": "12.4.127~12.4.1-2",
    "libcudart12": "12.4.127~12.4.1-2",
}
# A kernel for nvcc's device compilation, and host code calling the runtime, which needs no GPU to say
# its version and reports the missing device (or driver) as an error.
PROBE = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void fill(int *out) { out[threadIdx.x] = threadIdx.x; }
int main() {
  int runtime = 0, devices = -1;
  cudaError_t version = cudaRuntimeGetVersion(&runtime);
  cudaError_t count = cudaGetDeviceCount(&devices);
  std::printf("runtime=%d version_error=%d count_error=%s devices=%d\n",
              runtime, (int)version, cudaGetErrorName(count), devices);
  return version == cudaSuccess ? 0 : 1;
}
"""


@pytest.fixture
def debian(node):
    return node("cuda-debian")[0]


@pytest.fixture
def repo(node):
    return node("cuda-repo")


@pytest.mark.parametrize(("package", "version"), DEBIAN_PACKAGES.items())
def test_debian_s_toolkit_is_installed_at_the_pinned_build_and_held(debian, package, version):
    # dpkg's status "hi": wanted held, installed.
    assert (
        debian.check_output(f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}}' {package}")
        == f"hi {version}"
    )
    assert package in debian.check_output("apt-mark showhold").splitlines()


def test_the_candidate_is_pinned_from_non_free_of_a_source_of_the_role_s_own(debian):
    policy = debian.check_output("apt-cache policy nvidia-cuda-toolkit")
    assert f"Candidate: {DEBIAN_PACKAGES['nvidia-cuda-toolkit']}" in policy
    assert " 1001\n" in policy
    assert "trixie/non-free" in policy
    sources = debian.file("/etc/apt/sources.list.d/clusterforge-debian-archive.sources").content_string.splitlines()
    assert "Components: contrib non-free non-free-firmware" in sources
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in sources
    # The image's own sources.list is left as it was.
    assert (
        "deb http://deb.debian.org/debian trixie main"
        in debian.file("/etc/apt/sources.list").content_string.splitlines()
    )


def test_the_login_shell_finds_nvcc_and_cuda_home(debian):
    assert "multiarch directory" in debian.file("/etc/ld.so.conf.d/clusterforge-cuda.conf").content_string
    out = debian.check_output("bash -lc 'echo \"CUDA_HOME=$CUDA_HOME\"; command -v nvcc'")
    assert out.splitlines() == ["CUDA_HOME=/usr", "/usr/bin/nvcc"]


def test_a_cuda_program_compiles_links_and_runs_against_the_12_4_runtime_without_a_gpu(debian):
    debian.check_output("mkdir -p /tmp/verify-cuda && cat > /tmp/verify-cuda/probe.cu <<'EOF'\n" + PROBE + "\nEOF")
    # --cudart shared: the program loads libcudart.so.12 through the dynamic linker at run time.
    debian.check_output("bash -lc 'nvcc --cudart shared -o /tmp/verify-cuda/probe /tmp/verify-cuda/probe.cu'")
    ldd = debian.check_output("ldd /tmp/verify-cuda/probe")
    assert re.search(r"libcudart\.so\.12 => /(usr/)?lib/x86_64-linux-gnu/libcudart\.so\.12", ldd), ldd
    out = debian.check_output("/tmp/verify-cuda/probe")
    assert re.match(
        r"runtime=12040 version_error=0 count_error=(cudaErrorNoDevice|cudaErrorInsufficientDriver) ", out
    ), out


def test_both_releases_are_held_at_the_pinned_update_and_the_newer_is_not_the_candidate(repo):
    host, inputs = repo
    releases = inputs["cuda_nvidia_releases"]
    for release in [inputs["cuda_version"], *inputs["cuda_versions"]]:
        package = f"cuda-toolkit-{release.replace('.', '-')}"
        version = releases[release]["toolkit"]
        status = host.check_output(
            f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}} ${{binary:Summary}}' {package}"
        )
        assert status == f"hi {version} clusterforge test stand-in for {package} {version}"
        policy = host.check_output(f"apt-cache policy {package}")
        assert f"Candidate: {version}" in policy
    policy = host.check_output("apt-cache policy cuda-toolkit-12-4 cuda-toolkit-12-6")
    assert "12.4.1-1" in policy  # the newer stand-ins the pin keeps out
    assert "12.6.3-1" in policy


def test_the_default_link_is_the_default_release_and_both_are_alternatives(repo):
    host, inputs = repo
    default = inputs["cuda_default_version"]
    assert host.check_output("readlink --canonicalize /usr/local/cuda") == f"/usr/local/cuda-{default}"
    alternatives = host.check_output("update-alternatives --query cuda")
    assert "Status: manual" in alternatives
    for release in inputs["cuda_versions"]:
        assert f"Alternative: /usr/local/cuda-{release}" in alternatives


def test_the_repository_source_pin_and_environment(repo):
    host, inputs = repo
    assert (
        "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc"
        in host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string
    )
    toolkit = inputs["cuda_nvidia_releases"][inputs["cuda_version"]]["toolkit"]
    pins = host.file("/etc/apt/preferences.d/clusterforge-cuda").content_string
    assert f"Package: cuda-toolkit-12-4\nPin: version {toolkit}\nPin-Priority: 1001" in pins
    assert "/usr/local/cuda/lib64" in host.file("/etc/ld.so.conf.d/clusterforge-cuda.conf").content_string.splitlines()
    out = host.check_output('bash -lc \'echo "CUDA_HOME=$CUDA_HOME"; echo "PATH=$PATH"\'').splitlines()
    assert out[0] == "CUDA_HOME=/usr/local/cuda"
    assert out[1].startswith("PATH=/usr/local/cuda/bin:")
