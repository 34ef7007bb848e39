# Copyright: clusterforge contributors
# Apache License 2.0
"""Filters of the burn-in acceptance playbook (playbooks/acceptance.yml): which nodes run NCCL
together (the GPU nodes of one leaf), and the table of steps and verdicts per node."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_acceptance_leaf_groups
short_description: The nodes of a burn-in grouped by their leaf switch, for the NCCL run across each leaf
description:
  - Groups the hosts by the first leaf each GPU host hangs off on the NCCL fabric (the
    C(placements) of C(clusterforge_validation_plan)), in the order the hosts are given; a host
    without a placement (no topology, no GPU, no leaf) is a group of its own. The first host of a
    group launches the group's run.
  - "Sibling filter: C(clusterforge_acceptance_steps) (one line per host naming each step (its
    module) and its verdict, from C({host: records}))."
positional: _input, hosts
options:
  _input:
    description: "C({host: {leaves: [...], pod: ...}}), the plan's placements ({} without a topology)."
    type: dict
    required: true
  hosts:
    description: The hosts of the burn-in (ansible_play_hosts).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Group the nodes by leaf
  ansible.builtin.set_fact:
    __groups: "{{ __validate_plan.placements | default({}) | clusterforge_acceptance_leaf_groups(ansible_play_hosts) }}"
"""

RETURN = r"""
_value:
  description: "One entry per group: {leaf: name or null, hosts: [first host first, ...]}."
  type: list
  elements: dict
"""


def leaf_groups(placements, hosts):
    if not isinstance(placements, Mapping):
        raise AnsibleFilterError(
            f"clusterforge_acceptance_leaf_groups: expected the plan's placements, got {placements!r:.80}"
        )
    groups: dict[str, list[str]] = {}
    found = []
    for host in hosts:
        leaves = (placements.get(host) or {}).get("leaves") or []
        if not leaves:
            found.append({"leaf": None, "hosts": [host]})
            continue
        if leaves[0] not in groups:
            groups[leaves[0]] = []
            found.append({"leaf": leaves[0], "hosts": groups[leaves[0]]})
        groups[leaves[0]].append(host)
    return found


def steps(records_by_host):
    """One line per host, "node01: dcgm_check skipped, training_burnin pass, ...", from {host: records}
    (one record per step run), with the verdict rule of the report (host_verdict.record_status)."""
    try:
        from clusterforge.validation.host_verdict import record_status, verdicts
    except ImportError as exc:
        raise AnsibleFilterError(f"clusterforge_acceptance_steps needs the clusterforge package: {exc}") from None

    def step(record):
        replayed = verdicts.origin(record.get("source")) == verdicts.REPLAYED
        return f"{record.get('module')} {record_status(record)}{' (replayed)' if replayed else ''}"

    return [
        f"{host}: " + (", ".join(step(record) for record in records or []) or "no step ran")
        for host, records in (records_by_host or {}).items()
    ]


class FilterModule:
    def filters(self):
        return {"clusterforge_acceptance_leaf_groups": leaf_groups, "clusterforge_acceptance_steps": steps}
