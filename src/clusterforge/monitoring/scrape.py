"""Prometheus file_sd target groups generated from the Ansible inventory.

Each host of a job becomes one target group: its address and port, and the labels a rule or a
dashboard groups by, taken from what the topology inventory already gives every host:

    node       the inventory name (joins node_exporter, dcgm-exporter and textfile series)
    role       its topology role group (head, compute, login, ...)
    node_type  clusterforge_node_type (the type_<name> group variable)
    unit       clusterforge_unit (the su<N> group variable), when the host is in a unit
    leaf       its leaf groups (the switches it is cabled to, one group per unit's rail leaves on
               rail-optimised fabrics), comma-separated, when it has any

The leaf groups and role groups are named by the topology (leaf_groups()); the values come from
the host's own groups and variables, so an inventory that sets them another way works too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# Prometheus label values are free text, but a label name must match this.
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
RESERVED_LABELS = frozenset({"job", "instance", "__address__"})


def address_of(host: str, variables: Mapping[str, Any]) -> str:
    """Where Prometheus reaches the host: clusterforge_monitoring_address, else ansible_host
    (the management address, or the lab's container name on the lab's own network), else its name."""
    for key in ("clusterforge_monitoring_address", "ansible_host"):
        value = variables.get(key)
        if value not in (None, ""):
            return str(value)
    return host


def target_labels(
    host: str,
    variables: Mapping[str, Any],
    host_groups: Iterable[str],
    *,
    leaf_groups: Iterable[str] = (),
    role_groups: Iterable[str] = (),
) -> dict[str, str]:
    """The topology labels of one host (see the module's documentation)."""
    groups = list(host_groups)
    leaves = set(leaf_groups)
    roles = list(role_groups)
    labels = {"node": host}
    role = next((group for group in roles if group in groups), None)
    if role:
        labels["role"] = role
    if variables.get("clusterforge_node_type") not in (None, ""):
        labels["node_type"] = str(variables["clusterforge_node_type"])
    if variables.get("clusterforge_unit") not in (None, ""):
        labels["unit"] = str(variables["clusterforge_unit"])
    leaf = sorted(group for group in groups if group in leaves)
    if leaf:
        labels["leaf"] = ",".join(leaf)
    return labels


def target_groups(
    hosts: Iterable[str],
    hostvars: Mapping[str, Mapping[str, Any]],
    port: int,
    *,
    leaf_groups: Iterable[str] = (),
    role_groups: Iterable[str] = (),
    extra_labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """file_sd target groups, one per host, in the given order (duplicates dropped).

    hostvars[host] must hold "group_names" (Ansible's own variable) besides the host's variables.
    """
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ValueError(f"port must be an integer from 1 to 65535, got {port!r}")
    extra = dict(extra_labels or {})
    for name in extra:
        if not LABEL_NAME.match(name) or name.startswith("__") or name in RESERVED_LABELS:
            raise ValueError(f"extra label {name!r} is not a label name Prometheus allows here")
    leaves = list(leaf_groups)
    roles = list(role_groups)
    found = []
    for host in dict.fromkeys(hosts):
        if host not in hostvars:
            raise ValueError(f"{host} is not in the inventory's hostvars")
        variables = hostvars[host]
        labels = target_labels(
            host, variables, variables.get("group_names") or (), leaf_groups=leaves, role_groups=roles
        )
        address = address_of(host, variables)
        target = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        found.append({"targets": [target], "labels": {**extra, **labels}})
    return found


def topology_groups(plan: Any) -> dict[str, list[str]]:
    """{"leaf_groups": [...], "role_groups": [...]} as the topology inventory names them."""
    from clusterforge.topology import inventory

    data = inventory.build(plan)
    fabric_groups = [inventory.group_name("fabric", name) for name in inventory.leaf_group_fabrics(plan.topology)]
    leaves: list[str] = []
    stack = [kid for group in fabric_groups for kid in data.children.get(group, [])]
    while stack:
        group = stack.pop(0)
        kids = data.children.get(group)
        if kids:  # a pod: its children are leaf groups
            stack.extend(kids)
        else:
            leaves.append(group)
    return {"leaf_groups": sorted(set(leaves)), "role_groups": list(plan.topology.roles)}
