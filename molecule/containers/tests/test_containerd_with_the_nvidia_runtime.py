"""The containers stage on a Kubernetes GPU node without a GPU: containerd loads both roles' settings,
the pinned toolkit is installed, Docker is not, and no CDI spec is made. Inputs:
molecule/containers/molecule.yml."""

from __future__ import annotations

# The toolkit's pinned version (nvidia_container_toolkit_version's default; the scenario keeps it).
TOOLKIT_VERSION = "1.17.8-1"


def test_containerd_loads_runc_with_systemd_cgroups_and_the_nvidia_runtime(containerd_loaded):
    cri = containerd_loaded["plugins"]["io.containerd.grpc.v1.cri"]
    runtimes = cri["containerd"]["runtimes"]
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True
    assert runtimes["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert runtimes["nvidia"]["options"]["SystemdCgroup"] is True
    assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert cri["containerd"]["default_runtime_name"] == "runc"


def test_the_engine_the_inventory_names_and_the_pinned_toolkit_are_installed(host, inputs):
    assert inputs["clusterforge_container_engine"] == "containerd"
    assert host.package("containerd").is_installed
    toolkit = host.package("nvidia-container-toolkit")
    assert toolkit.is_installed
    assert toolkit.version == TOOLKIT_VERSION
    assert not host.package("docker.io").is_installed


def test_no_cdi_spec_is_made_on_a_node_without_a_gpu(host):
    assert not host.file("/etc/cdi/nvidia.yaml").exists
