"""containerd on a node whose config.toml the site had edited (prepare.yml): containerd runs, loads the
managed settings and the site's, lists the mirrors in order, and its CRI plugin loads. Inputs:
molecule/containerd/molecule.yml."""

from __future__ import annotations

import pytest


@pytest.fixture
def loaded(containerd_loaded) -> dict:
    return containerd_loaded


def test_containerd_runs_and_starts_at_boot(host):
    service = host.service("containerd")
    assert service.is_running
    assert service.is_enabled


def test_the_managed_settings_are_loaded(loaded, inputs):
    cri = loaded["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["containerd"]["runtimes"]["runc"]["runtime_type"] == "io.containerd.runc.v2"
    assert cri["sandbox_image"] == inputs["containerd_sandbox_image"]
    assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert loaded["grpc"]["max_recv_message_size"] == inputs["containerd_config"]["grpc"]["max_recv_message_size"]


def test_the_site_s_own_settings_survived(loaded):
    # prepare.yml's config.toml: the nvidia runtime, CDI, the CNI directory and the OOM score.
    cri = loaded["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert cri["containerd"]["runtimes"]["nvidia"]["runtime_type"] == "io.containerd.runc.v2"
    assert cri["enable_cdi"] is True
    assert cri["cni"]["bin_dir"] == "/usr/lib/cni"
    assert loaded["oom_score"] == -999


def test_the_mirrors_are_listed_in_order_before_the_registry(host, inputs):
    hosts_toml = host.file("/etc/containerd/certs.d/docker.io/hosts.toml")
    text = hosts_toml.content_string
    assert 'server = "https://registry-1.docker.io"' in text
    positions = [text.index(f'[host."{mirror}"]') for mirror in inputs["containerd_registry_mirrors"]["docker.io"]]
    assert positions == sorted(positions)
    assert 'capabilities = ["pull", "resolve"]' in text


def test_the_cri_plugin_loaded(host):
    lines = host.check_output("ctr plugins ls").splitlines()
    cri = [line.split() for line in lines if line.split()[:2] == ["io.containerd.grpc.v1", "cri"]]
    assert len(cri) == 1
    assert cri[0][-1] == "ok"
