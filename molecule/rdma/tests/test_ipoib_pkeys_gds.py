"""The partition child interfaces the ipoib role writes for the test topology's ipoib_pkeys (networkd
renderer), and GPUDirect Storage's nvidia-fs from the lab mirror (nvidia_peermem_gds: true). Expected
values come from files/rdma.topology.yml (read with clusterforge's loader) and molecule.yml. The
lab's kernel has neither InfiniBand nor an NVIDIA driver: no child link exists and nvidia-fs is
installed (stand-ins) but not loaded: skipped: no hardware."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.topology import load

SCENARIO = Path(__file__).resolve().parents[1]
NETWORK_DIR = "/etc/systemd/network"
PREFIX = "60-clusterforge-ipoib-"


@pytest.fixture
def rails(inputs):
    plan = load(SCENARIO / "files" / "rdma.topology.yml", links=False)
    host = plan.host(inputs["rdma_lab_topology_host"])
    fabric = plan.topology.fabrics[plan.ipoib_fabric]
    netdevs = [hca.netdev for hca in plan.topology.node_types[host.node_type].hcas if hca.fabric == plan.ipoib_fabric]
    return netdevs, fabric


def _lines(host, path):
    return host.file(path).content_string.splitlines()


def test_a_child_interface_per_rail_and_partition_full_member(host, rails):
    netdevs, fabric = rails
    assert netdevs and fabric.ipoib_pkeys == ["0x0010"]
    for netdev in netdevs:
        for key in fabric.ipoib_pkeys:
            full = int(key, 16) | 0x8000  # the IBTA full-membership bit
            child = f"{netdev}.{full:04x}"
            netdev_file = _lines(host, f"{NETWORK_DIR}/{PREFIX}{child}.netdev")
            assert [f"Name={child}", "Kind=ipoib", f"PartitionKey={full:#06x}", f"Mode={fabric.ipoib_mode}"] == [
                line for line in netdev_file if "=" in line and not line.startswith("#")
            ]
            network = _lines(host, f"{NETWORK_DIR}/{PREFIX}{child}.network")
            assert f"Name={child}" in network and f"MTUBytes={fabric.ipoib_mtu}" in network
            assert not [line for line in network if line.startswith("Address=")]
            assert f"IPoIB={child}" in _lines(host, f"{NETWORK_DIR}/{PREFIX}{netdev}.network")
            # skipped: no hardware: networkd creates the child when its parent appears; none exists here.
            assert not host.file(f"/sys/class/net/{child}").exists


def test_nvidia_fs_is_installed_from_the_mirror_at_its_pinned_version_and_held(host, inputs):
    packages = inputs["nvidia_peermem_gds_packages"]
    held = host.check_output("apt-mark showhold").split()
    for name, version in packages.items():
        package = host.package(name)
        assert package.is_installed, name
        assert package.version == version, name
        assert name in held, name
        # The mirror's stand-in, labelled as such: NVIDIA's repository is not reachable here.
        assert "clusterforge test stand-in" in host.check_output(f"dpkg-query -W -f '${{Description}}' {name}")
    preferences = host.file("/etc/apt/preferences.d/clusterforge-nvidia-fs").content_string
    for name, version in packages.items():
        assert f"Package: {name}\nPin: version {version}\n" in preferences, preferences
    sources = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string
    assert f"URIs: {inputs['nvidia_peermem_gds_repo_url']}" in sources


def test_nvidia_fs_is_not_loaded_nor_persisted_without_the_hardware(host):
    """skipped: no hardware: no RDMA device and no NVIDIA driver, so the module is neither loaded nor
    listed for boot (verify-ipoib-netplan.yml checks the reason the run gives)."""
    assert not host.file("/sys/class/infiniband").exists or host.check_output("ls /sys/class/infiniband") == ""
    assert not host.file("/etc/modules-load.d/clusterforge-nvidia-fs.conf").exists
    assert not host.file("/sys/module/nvidia_fs").exists
