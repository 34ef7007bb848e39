"""k8s_node_metadata and k8s_gpu_wait end to end (arguments, exit and failure) with the real
Kubernetes client over the FAKE API SERVER of tests/unit/plugins/module_utils/test_k8s_nodes.py:
the kubeconfig loader is replaced by one that returns a client wired to it. No real API server."""

from __future__ import annotations

import pytest
from kubernetes import config

from tests.unit.plugins.module_utils.test_k8s_nodes import FakeApiServer, api_for


@pytest.fixture
def server(monkeypatch):
    fake = FakeApiServer(
        {"gpu001": {"allocatable": {"nvidia.com/gpu": "8"}}, "gpu002": {"allocatable": {"nvidia.com/gpu": "4"}}}
    )
    seen = []

    def new_client_from_config(config_file=None, **_):
        seen.append(config_file)
        return api_for(fake).api_client

    monkeypatch.setattr(config, "new_client_from_config", new_client_from_config)
    fake.kubeconfigs = seen
    return fake


def test_node_metadata_labels_once_then_reports_no_change(node, run, server):
    args = {
        "kubeconfig": "/etc/kubernetes/admin.conf",
        "nodes": {"gpu001": {"labels": {"nvidia.com/gpu.present": "true"}}},
    }
    first = run("k8s_node_metadata", args)
    assert not first.failed and first.result["changed"] is True and first.result["changed_nodes"] == ["gpu001"]
    assert server.nodes["gpu001"]["metadata"]["labels"] == {"nvidia.com/gpu.present": "true"}
    again = run("k8s_node_metadata", args)
    assert again.result["changed"] is False
    assert server.kubeconfigs == ["/etc/kubernetes/admin.conf"] * 2


def test_node_metadata_fails_naming_unregistered_nodes(node, run, server):
    outcome = run("k8s_node_metadata", {"kubeconfig": "/k", "nodes": {"gpu009": {"labels": {"a": "b"}}}})
    assert outcome.failed and "gpu009" in outcome.result["msg"]


def test_gpu_wait_passes_when_every_node_advertises_its_count(node, run, server):
    outcome = run("k8s_gpu_wait", {"kubeconfig": "/k", "expected": {"gpu001": 8, "gpu002": 4}, "timeout": 0})
    assert not outcome.failed and outcome.result == {"changed": False, "polls": 1}


def test_gpu_wait_fails_naming_the_short_node(node, run, server):
    outcome = run("k8s_gpu_wait", {"kubeconfig": "/k", "expected": {"gpu001": 8, "gpu002": 8}, "timeout": 0})
    assert outcome.failed
    assert "gpu002: advertises 4, expected 8" in outcome.result["msg"] and "gpu001" not in outcome.result["msg"]
    assert outcome.result["shortfall"] == {"gpu002": "advertises 4, expected 8"}
