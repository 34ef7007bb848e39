# Copyright: clusterforge contributors
# Apache License 2.0
"""Node labels, taints and advertised GPUs through the Kubernetes Python client: what the
k8s_node_metadata and k8s_gpu_wait modules do, written against a CoreV1Api object so that the
unit tests can drive it with the real client over a fake API server (a mocked transport)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"


def _taint(taint: Any) -> dict[str, str | None]:
    if isinstance(taint, Mapping):
        return {"key": taint["key"], "value": taint.get("value"), "effect": taint["effect"]}
    return {"key": taint.key, "value": taint.value, "effect": taint.effect}


def metadata_patch(node: Any, labels: Mapping[str, Any], taints: list[Mapping[str, Any]]) -> dict | None:
    """The patch that gives `node` these labels (a value of None removes the label) and taints
    (added, or their value replaced, by key and effect; other taints stay); None when the node
    already has them all."""
    current = node.metadata.labels or {}
    label_patch = {
        key: None if value is None else str(value)
        for key, value in labels.items()
        if ((key in current) if value is None else current.get(key) != str(value))
    }
    have = [_taint(t) for t in node.spec.taints or []]
    want = [_taint(t) for t in taints]
    wanted_keys = {(t["key"], t["effect"]) for t in want}
    merged = [t for t in have if (t["key"], t["effect"]) not in wanted_keys] + want
    patch: dict[str, Any] = {}
    if label_patch:
        patch["metadata"] = {"labels": label_patch}
    if sorted(map(repr, merged)) != sorted(map(repr, have)):
        patch["spec"] = {"taints": merged}
    return patch or None


def apply_metadata(api: Any, nodes: Mapping[str, Mapping[str, Any]], check_mode: bool = False) -> dict[str, Any]:
    """Patch every node of `nodes` ({name: {labels, taints}}) that differs; returns the names
    changed and those the API server does not know (not registered: nothing is sent for them)."""
    registered = {node.metadata.name: node for node in api.list_node().items}
    changed, missing = [], []
    for name, wanted in nodes.items():
        node = registered.get(name)
        if node is None:
            missing.append(name)
            continue
        patch = metadata_patch(node, wanted.get("labels") or {}, wanted.get("taints") or [])
        if patch is None:
            continue
        changed.append(name)
        if not check_mode:
            api.patch_node(name, patch)
    return {"changed_nodes": changed, "missing_nodes": missing}


def gpu_shortfall(api: Any, expected: Mapping[str, int], resource: str = GPU_RESOURCE) -> dict[str, str]:
    """Node -> what is wrong, for every node of `expected` that does not advertise exactly its
    expected count of `resource` as allocatable."""
    nodes = {node.metadata.name: node for node in api.list_node().items}
    found = {}
    for name, count in expected.items():
        node = nodes.get(name)
        if node is None:
            found[name] = "not registered"
            continue
        allocatable = (node.status.allocatable or {}) if node.status else {}
        have = allocatable.get(resource)
        if have is None or int(have) != int(count):
            found[name] = f"advertises {'no ' + resource if have is None else have}, expected {count}"
    return found


def wait_for_gpus(
    api: Any,
    expected: Mapping[str, int],
    timeout: float,
    interval: float,
    resource: str = GPU_RESOURCE,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[dict[str, str], int]:
    """Poll until every node advertises its expected count or `timeout` seconds pass; returns
    the last shortfall (empty: all there) and how many times the nodes were read."""
    deadline = clock() + timeout
    polls = 0
    while True:
        polls += 1
        shortfall = gpu_shortfall(api, expected, resource)
        if not shortfall or clock() + interval > deadline:
            return shortfall, polls
        sleep(interval)


def shortfall_message(shortfall: Mapping[str, str], resource: str, timeout: float) -> str:
    described = "; ".join(f"{name}: {why}" for name, why in sorted(shortfall.items()))
    return (
        f"{len(shortfall)} node(s) do not advertise their expected {resource} after {timeout:g}s: {described} "
        "(a node's expected count is its topology's GPUs times the time-slicing replicas)"
    )
