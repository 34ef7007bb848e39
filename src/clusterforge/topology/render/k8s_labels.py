"""Kubernetes node labels per host under the topology's `label_prefix`, for schedulers and
topology-aware placement: cluster, site, role, node type, scalable unit, and where the host
sits on the GPU fabric (ClusterPlan.gpu_fabric) (rails on a rail-optimised fabric, leaf on a plain fat tree,
spine pod on a three-tier one, group on a dragonfly; from the host's first port).

Every key and value is checked against Kubernetes' label syntax (the rules from
https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set),
so a long cluster name fails here rather than at `kubectl label`."""

from __future__ import annotations

import functools
import re

from clusterforge.topology import ClusterPlan
from clusterforge.topology.fabric import FabricPlan
from clusterforge.topology.hosts import Host
from clusterforge.topology.render.common import dump_yaml, generated_by, gpu_fabric

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
NAME_MAX = 63
PREFIX_MAX = 253
VALUE_MAX = 63


class LabelError(ValueError):
    """A label key or value that Kubernetes would refuse."""


# Most labels repeat across hosts (cluster, role, a unit's leaf): checking each distinct pair
# once keeps `topology validate` at 200,000 hosts from spending seconds on 1.4 million regexes.
@functools.lru_cache(maxsize=1 << 16)
def check_label(key: str, value: str) -> None:
    """Raise LabelError unless `key: value` is a valid Kubernetes label."""
    prefix, slash, name = key.rpartition("/")
    problems = []
    if slash and not (len(prefix) <= PREFIX_MAX and _DNS_SUBDOMAIN.fullmatch(prefix)):
        problems.append(
            f"prefix {prefix!r} must be a DNS subdomain of at most {PREFIX_MAX} characters "
            "(lower-case alphanumerics and '-', dot-separated)"
        )
    if not (len(name) <= NAME_MAX and _NAME.fullmatch(name)):
        problems.append(
            f"name {name!r} must be at most {NAME_MAX} characters of alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumeric"
        )
    if value and not (len(value) <= VALUE_MAX and _NAME.fullmatch(value)):
        problems.append(
            f"value {value!r} must be empty or at most {VALUE_MAX} characters of alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumeric"
        )
    if problems:
        raise LabelError(f"Kubernetes label {key}={value}: " + "; ".join(problems))


def _places(fabric: FabricPlan) -> dict[str, dict[str, str]]:
    """First switch of a host -> the labels it implies: the spine pod of a leaf on a
    three-tier fat tree, the group of a dragonfly router."""
    places = {leaf: {"spine-pod": f"pod{pod}"} for leaf, pod in fabric.leaf_pods.items()}
    for switch in fabric.switches:
        if switch.group is not None:
            places[switch.name] = {"dragonfly-group": f"g{switch.group:02d}"}
    return places


def host_labels(plan: ClusterPlan, host: Host, places: dict[str, dict[str, dict[str, str]]]) -> dict[str, str]:
    prefix = plan.topology.label_prefix
    found = {
        "cluster": plan.topology.cluster.name,
        "site": host.site,
        "role": host.role,
        "node-type": host.node_type,
    }
    if host.unit:
        found["unit"] = f"su{host.unit}"
    fabric = gpu_fabric(plan, host.name)
    if fabric is not None:
        first = fabric.attachments[host.name][0]
        found["fabric"] = fabric.name
        if fabric.spec.topology == "rail_optimized_fat_tree":
            found["rails"] = str(fabric.spec.rails)
        elif fabric.spec.topology == "fat_tree":
            found["leaf"] = first
        found.update(places[fabric.name].get(first, {}))
    labels = {f"{prefix}/{key}": value for key, value in found.items()}
    for key, value in labels.items():
        check_label(key, value)
    return labels


def labels(plan: ClusterPlan) -> dict[str, dict[str, str]]:
    """host -> {label: value}, hosts in plan order."""
    places = {name: _places(fabric) for name, fabric in plan.fabrics.items()}
    return {host.name: host_labels(plan, host, places) for host in plan.hosts}


def labels_yaml(plan: ClusterPlan) -> str:
    header = f"# Kubernetes node labels per host, {generated_by(plan)}\n"
    return header + dump_yaml(labels(plan))


def files(plan: ClusterPlan) -> dict[str, str]:
    return {"kubernetes/node-labels.yml": labels_yaml(plan)}
