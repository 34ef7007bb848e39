"""The NVIDIA Container Toolkit (the lab mirror's stand-ins) with both engines (converge.yml:
nvidia_container_toolkit_engines docker and containerd, default runtime on): the pinned packages held,
the flat repository with its own keyring, the nvidia runtime merged into the site's daemon.json and
config.toml and loaded by dockerd as its default, and no CDI spec without a GPU."""

from __future__ import annotations

import json

import pytest

PACKAGES = [
    "nvidia-container-toolkit",
    "nvidia-container-toolkit-base",
    "libnvidia-container-tools",
    "libnvidia-container1",
]
PINNED = "1.17.8-1"  # the role's pinned default, which the scenario keeps
NEWER = "1.17.9-1"  # also in the mirror
REPO_URL = "http://127.0.0.1:8080/libnvidia-container/stable/deb/$(ARCH)"  # converge.yml's
RUNTIME = "/usr/bin/nvidia-container-runtime"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_installed_at_the_pinned_version_and_held(host, package):
    status = host.check_output(f"dpkg-query --show --showformat '${{Version}} ${{binary:Summary}}' {package}")
    assert status.startswith(f"{PINNED} clusterforge test stand-in")
    assert package in host.check_output("apt-mark showhold").splitlines()


def test_the_candidate_is_the_pin_below_the_newer_version_in_the_mirror(host):
    policy = host.check_output("apt-cache policy nvidia-container-toolkit")
    assert f"Candidate: {PINNED}" in policy
    assert NEWER in policy


def test_the_flat_repository_is_trusted_with_its_own_keyring_only(host):
    lines = host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.sources").content_string.splitlines()
    assert f"URIs: {REPO_URL}" in lines
    assert "Suites: /" in lines
    assert "Signed-By: /etc/apt/keyrings/nvidia-container-toolkit.asc" in lines


def test_the_runtime_is_merged_into_daemon_json_beside_the_site_s(host):
    daemon = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert daemon["runtimes"]["nvidia"] == {"args": [], "path": RUNTIME}
    assert daemon["runtimes"]["custom"] == {"path": "/usr/local/bin/custom-runtime"}  # prepare.yml's
    assert daemon["storage-driver"] == "vfs"
    assert daemon["default-runtime"] == "nvidia"


def test_dockerd_loaded_the_nvidia_runtime_as_its_default(host):
    info = json.loads(host.check_output("docker info --format '{{json .}}'"))
    assert info["Runtimes"]["nvidia"]["path"] == RUNTIME
    assert "custom" in info["Runtimes"]
    assert info["DefaultRuntime"] == "nvidia"


def test_the_runtime_is_merged_into_config_toml_as_nvidia_ctk_writes_it(host):
    parse = "import json, tomllib; print(json.dumps(tomllib.load(open('/etc/containerd/config.toml', 'rb'))))"
    cri = json.loads(host.check_output(f'python3 -c "{parse}"'))["plugins"]["io.containerd.grpc.v1.cri"]
    nvidia = cri["containerd"]["runtimes"]["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["options"] == {"BinaryName": RUNTIME, "SystemdCgroup": True}
    assert nvidia["privileged_without_host_devices"] is False
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10"


def test_no_cdi_spec_is_made_without_a_gpu(host):
    assert not host.file("/etc/cdi/nvidia.yaml").exists
