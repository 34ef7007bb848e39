# Copyright: clusterforge contributors
# Apache License 2.0
"""Filters of the monitoring roles: Prometheus targets from the inventory, and the validation's
verdicts as node_exporter textfile metrics (clusterforge.monitoring)."""

from __future__ import annotations

import os
from functools import lru_cache

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_monitoring_targets
short_description: Prometheus file_sd target groups for inventory hosts, with topology labels
description:
  - One target group per host, its address (clusterforge_monitoring_address, else ansible_host, else
    its name) and port, labelled node, role, node_type, unit and leaf from the host's groups and
    variables; the topology file names which groups are roles and leaves (see clusterforge.monitoring.scrape).
positional: _input, hostvars, port
options:
  _input:
    description: The host names to scrape.
    type: list
    required: true
  hostvars:
    description: Ansible's hostvars.
    type: dict
    required: true
  port:
    description: The exporter's port.
    type: int
    required: true
  topology_file:
    description: The topology file (clusterforge_topology_file); without it no role or leaf label.
    type: path
  extra_labels:
    description: Labels every target gets (the host labels win).
    type: dict
"""

EXAMPLES = r"""
- name: Show node_exporter's targets
  ansible.builtin.debug:
    msg: >-
      {{ groups['all'] | clusterforge_monitoring_targets(hostvars, 9100, topology_file=clusterforge_topology_file) }}
"""

RETURN = r"""
_value:
  description: "[{targets: [address:port], labels: {...}}] in host order."
  type: list
"""


def _import():
    try:
        from clusterforge.monitoring import scrape, textfile
        from clusterforge.topology import TopologyError, load
    except ImportError as exc:
        raise AnsibleFilterError(f"the clusterforge monitoring filters need the clusterforge package: {exc}") from None
    return scrape, textfile, TopologyError, load


@lru_cache(maxsize=4)
def _groups(path: str, mtime: float):
    scrape, _, topology_error, load = _import()
    try:
        return scrape.topology_groups(load(path, links=False))
    except topology_error as exc:
        raise AnsibleFilterError(f"clusterforge_monitoring_targets: {exc}") from None


# The host variables the targets read (clusterforge.monitoring.scrape).
_HOST_KEYS = ("clusterforge_monitoring_address", "ansible_host", "clusterforge_node_type", "clusterforge_unit")


def monitoring_targets(hosts, hostvars, port, topology_file=None, extra_labels=None):
    scrape, _, _, _ = _import()
    named = {"leaf_groups": [], "role_groups": []}
    if topology_file:
        try:
            mtime = os.path.getmtime(topology_file)
        except (OSError, TypeError) as exc:
            raise AnsibleFilterError(
                f"clusterforge_monitoring_targets: cannot read the topology file {topology_file!r}: {exc}"
            ) from None
        named = _groups(str(topology_file), mtime)
    hosts = list(hosts or ())
    variables = {}
    for host in hosts:
        if host not in hostvars:
            raise AnsibleFilterError(f"clusterforge_monitoring_targets: {host} is not in the inventory")
        found = hostvars[host]
        variables[host] = {key: found.get(key) for key in _HOST_KEYS}
        variables[host]["group_names"] = list(found.get("group_names") or ())
    try:
        return scrape.target_groups(hosts, variables, int(port), extra_labels=extra_labels, **named)
    except ValueError as exc:
        raise AnsibleFilterError(f"clusterforge_monitoring_targets: {exc}") from None


def validation_textfile(records, host_status, timestamp):
    _, textfile, _, _ = _import()
    return textfile.render(list(records or ()), str(host_status), float(timestamp))


class FilterModule:
    def filters(self):
        return {
            "clusterforge_monitoring_targets": monitoring_targets,
            "clusterforge_validation_textfile": validation_textfile,
        }
