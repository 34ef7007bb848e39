"""k8s_nodes (the k8s_node_metadata and k8s_gpu_wait modules' logic) run with the real
Kubernetes Python client against a FAKE API SERVER: the client's HTTP transport (its urllib3
pool manager) is replaced by FakeApiServer, which keeps Node objects in a dict and answers
GET /api/v1/nodes and PATCH /api/v1/nodes/<name> (strategic merge of labels, taints replaced)
as the API server does. No real API server is involved."""

from __future__ import annotations

import json
import re

from ansible.module_utils.k8s_nodes import (
    apply_metadata,
    gpu_shortfall,
    metadata_patch,
    shortfall_message,
    wait_for_gpus,
)
from kubernetes import client

from . import samples  # noqa: F401 (puts plugins/module_utils into ansible.module_utils)


class FakeResponse:
    def __init__(self, status: int, body: dict):
        self.status = status
        self.reason = "OK" if status < 400 else "Not Found"
        self.data = json.dumps(body).encode()
        self.headers = {"Content-Type": "application/json"}


class FakeApiServer:
    """Stands in for urllib3.PoolManager under kubernetes.client.rest.RESTClientObject."""

    def __init__(self, nodes: dict[str, dict]):
        self.nodes = {
            name: {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": dict(spec.get("labels", {}))},
                "spec": {"taints": list(spec.get("taints", []))} if spec.get("taints") else {},
                "status": {"allocatable": dict(spec.get("allocatable", {}))},
            }
            for name, spec in nodes.items()
        }
        self.requests: list[tuple[str, str, dict | None]] = []
        self.on_list = None  # called before each list: nodes arriving late

    def request(self, method, url, body=None, headers=None, **_):
        path = re.sub(r"^https?://[^/]+", "", url).split("?")[0]
        payload = json.loads(body) if body else None
        self.requests.append((method, path, payload))
        if method == "GET" and path == "/api/v1/nodes":
            if self.on_list:
                self.on_list(self)
            return FakeResponse(
                200, {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": list(self.nodes.values())}
            )
        match = re.fullmatch(r"/api/v1/nodes/([^/]+)", path)
        if method == "PATCH" and match:
            node = self.nodes.get(match.group(1))
            if node is None:
                return FakeResponse(404, {"kind": "Status", "code": 404})
            assert headers["Content-Type"] == "application/strategic-merge-patch+json"
            labels = node["metadata"]["labels"]
            for key, value in payload.get("metadata", {}).get("labels", {}).items():
                if value is None:
                    labels.pop(key, None)
                else:
                    labels[key] = value
            if "taints" in payload.get("spec", {}):
                node["spec"]["taints"] = payload["spec"]["taints"]
            return FakeResponse(200, node)
        return FakeResponse(404, {"kind": "Status", "code": 404})


def api_for(server: FakeApiServer) -> client.CoreV1Api:
    configuration = client.Configuration()
    configuration.host = "https://fake-api-server.invalid:6443"
    api_client = client.ApiClient(configuration)
    api_client.rest_client.pool_manager = server
    return client.CoreV1Api(api_client)


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_labels_and_taints_are_patched_only_where_they_differ():
    server = FakeApiServer(
        {
            "gpu001": {"labels": {"kubernetes.io/hostname": "gpu001", "old": "x"}},
            "gpu002": {"labels": {"clusterforge.io/unit": "su1"}, "taints": [GPU_TAINT]},
        }
    )
    wanted = {
        "gpu001": {"labels": {"clusterforge.io/unit": "su1", "old": None}, "taints": [GPU_TAINT]},
        "gpu002": {"labels": {"clusterforge.io/unit": "su1"}, "taints": [GPU_TAINT]},
    }
    result = apply_metadata(api_for(server), wanted)
    assert result == {"changed_nodes": ["gpu001"], "missing_nodes": []}
    assert server.nodes["gpu001"]["metadata"]["labels"] == {
        "kubernetes.io/hostname": "gpu001",
        "clusterforge.io/unit": "su1",
    }
    assert server.nodes["gpu001"]["spec"]["taints"] == [GPU_TAINT]
    assert [r[0] for r in server.requests] == ["GET", "PATCH"]
    # A second run: nothing differs, nothing is sent but the read.
    server.requests.clear()
    assert apply_metadata(api_for(server), wanted)["changed_nodes"] == []
    assert [r[0] for r in server.requests] == ["GET"]


def test_other_taints_stay_and_a_taint_value_is_replaced():
    kubelet_taint = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    server = FakeApiServer({"n1": {"taints": [kubelet_taint, {**GPU_TAINT, "value": "old"}]}})
    apply_metadata(api_for(server), {"n1": {"labels": {}, "taints": [GPU_TAINT]}})
    taints = server.nodes["n1"]["spec"]["taints"]
    assert {"key": "node.kubernetes.io/not-ready", "value": None, "effect": "NoSchedule"} in taints
    assert GPU_TAINT in taints and len(taints) == 2


def test_check_mode_reports_but_sends_no_patch():
    server = FakeApiServer({"n1": {}})
    result = apply_metadata(api_for(server), {"n1": {"labels": {"a": "b"}}}, check_mode=True)
    assert result["changed_nodes"] == ["n1"]
    assert [r[0] for r in server.requests] == ["GET"]
    assert server.nodes["n1"]["metadata"]["labels"] == {}


def test_unregistered_nodes_are_named_and_not_patched():
    server = FakeApiServer({"n1": {}})
    result = apply_metadata(api_for(server), {"n1": {"labels": {"a": "b"}}, "n9": {"labels": {"a": "b"}}})
    assert result == {"changed_nodes": ["n1"], "missing_nodes": ["n9"]}


def test_a_patch_removing_an_absent_label_is_not_sent():
    server = FakeApiServer({"n1": {"labels": {"a": "1"}}})
    node = api_for(server).list_node().items[0]
    assert metadata_patch(node, {"gone": None, "a": 1}, []) is None


def test_every_gpu_node_advertising_its_count_passes_at_the_first_read():
    server = FakeApiServer(
        {"gpu001": {"allocatable": {"nvidia.com/gpu": "8"}}, "gpu002": {"allocatable": {"nvidia.com/gpu": "32"}}}
    )
    shortfall, polls = wait_for_gpus(
        api_for(server), {"gpu001": 8, "gpu002": 32}, timeout=60, interval=5, sleep=_no_sleep
    )
    assert (shortfall, polls) == ({}, 1)


def test_the_shortfall_names_each_node_and_what_it_advertises():
    server = FakeApiServer(
        {
            "gpu001": {"allocatable": {"nvidia.com/gpu": "8"}},
            "gpu002": {"allocatable": {"nvidia.com/gpu": "4"}},
            "gpu003": {"allocatable": {"cpu": "128"}},
        }
    )
    found = gpu_shortfall(api_for(server), {"gpu001": 8, "gpu002": 8, "gpu003": 8, "gpu004": 8})
    assert found == {
        "gpu002": "advertises 4, expected 8",
        "gpu003": "advertises no nvidia.com/gpu, expected 8",
        "gpu004": "not registered",
    }
    message = shortfall_message(found, "nvidia.com/gpu", 600)
    assert message.startswith("3 node(s) do not advertise their expected nvidia.com/gpu after 600s: gpu002")
    assert "gpu003" in message and "gpu004: not registered" in message and "gpu001" not in message


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def _no_sleep(_seconds):
    raise AssertionError("slept although every node was there")


def test_the_wait_gives_up_at_the_timeout_naming_the_node():
    server = FakeApiServer({"gpu001": {"allocatable": {"nvidia.com/gpu": "0"}}})
    clock = Clock()
    shortfall, polls = wait_for_gpus(
        api_for(server), {"gpu001": 8}, timeout=30, interval=10, sleep=clock.sleep, clock=clock
    )
    assert shortfall == {"gpu001": "advertises 0, expected 8"}
    assert polls == 4 and clock.now == 30


def test_the_wait_ends_when_the_device_plugin_registers_late():
    server = FakeApiServer({"gpu001": {}})
    clock = Clock()

    def plugin_starts(fake):
        if clock.now >= 20:
            fake.nodes["gpu001"]["status"]["allocatable"]["nvidia.com/gpu"] = "8"

    server.on_list = plugin_starts
    shortfall, polls = wait_for_gpus(
        api_for(server), {"gpu001": 8}, timeout=600, interval=10, sleep=clock.sleep, clock=clock
    )
    assert (shortfall, polls, clock.now) == ({}, 3, 20)


def test_time_sliced_gpus_count_once_per_replica():
    server = FakeApiServer({"gpu001": {"allocatable": {"nvidia.com/gpu": "32"}}})
    assert gpu_shortfall(api_for(server), {"gpu001": 8 * 4}) == {}
    assert gpu_shortfall(api_for(server), {"gpu001": 8}) == {"gpu001": "advertises 32, expected 8"}
