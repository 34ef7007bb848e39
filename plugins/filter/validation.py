# Copyright: clusterforge contributors
# Apache License 2.0
"""Filters of the validation playbook: NCCL pairs from the topology, the bisection step, the cabling plan.

The logic is in clusterforge.validation (pure functions with unit tests); these are thin adapters.
"""

from __future__ import annotations

import os
from functools import lru_cache

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_validation_plan
short_description: What the validation playbook derives from the topology
description:
  - Loads the topology file once per process and returns the NCCL fabric, the GPU hosts (limited
    to O(hosts)), their leaves and pods on it, the NCCL node pairs in rounds (pairs span leaves,
    spines and pods where the fabric allows; see clusterforge.validation.pairs) and the host and
    fabric for the cabling check.
  - "Sibling filters in this file: C(clusterforge_validation_led_by) (the pair of a round this host
    leads, or none),
    C(clusterforge_validation_probes) (bisection runs: each node of a failed pair with a good
    node), C(clusterforge_validation_culprits) (culprits, cleared, unresolved, untested),
    C(clusterforge_validation_bisect) (one round of the bisection of a failed group run: the
    outcomes of the last round in, the next round's runs out),
    C(clusterforge_validation_with_bisection) (a verdict with the bisection's findings added) and
    C(clusterforge_cabling_csv) (the cabling plan CSV, as C(clusterforge topology render) writes it),
    C(clusterforge_validation_records) (a registered check result trimmed for the report),
    C(clusterforge_validation_busbw_floor) (the all-reduce floor the multi-node NCCL runs were held to),
    C(clusterforge_validation_one_nvlink_domain) (whether a run's hosts are trays of one NVLink domain),
    C(clusterforge_validation_unreachable) (why a host became unreachable, from its registered results) and
    C(clusterforge_validation_host_verdict) (a host's status and failures from its records after the
    bisection, by the rule the report applies)."
positional: _input, hosts
options:
  _input:
    description: Path of the topology file (clusterforge_topology_file).
    type: path
    required: true
  hosts:
    description: Hosts to plan for (for example ansible_play_hosts); default every host.
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Plan the NCCL pairs among the reachable hosts
  ansible.builtin.set_fact:
    __plan: "{{ clusterforge_topology_file | clusterforge_validation_plan(ansible_play_hosts) }}"
"""

RETURN = r"""
_value:
  description: nccl_fabric, gpu_hosts, placements, pairs (rounds, pairs, crossings, unpaired), cabling (host, fabric).
  type: dict
"""


def _import():
    try:
        from clusterforge.topology import TopologyError, load
        from clusterforge.validation import pairs, plan
    except ImportError as exc:
        raise AnsibleFilterError(f"the clusterforge validation filters need the clusterforge package: {exc}") from None
    return TopologyError, load, pairs, plan


@lru_cache(maxsize=4)
def _plan(path: str, mtime: float, links: bool):
    topology_error, load, _, _ = _import()
    try:
        return load(path, links=links)
    except topology_error as exc:
        raise AnsibleFilterError(f"clusterforge validation: {exc}") from None


def _load(topology_file, links: bool = False):
    try:
        mtime = os.path.getmtime(topology_file)
    except (OSError, TypeError) as exc:
        raise AnsibleFilterError(
            f"clusterforge validation: cannot read the topology file {topology_file!r}: {exc}"
        ) from None
    return _plan(str(topology_file), mtime, links)


def validation_plan(topology_file, hosts=None):
    _, _, _, plan = _import()
    return plan.validation_plan(_load(topology_file), list(hosts) if hosts is not None else None)


def led_by(round_pairs, host):
    """The pair of this round whose first node is `host`, or None."""
    for pair in round_pairs or ():
        if pair and pair[0] == host:
            return list(pair)
    return None


def probe_rounds(failed_pairs, good_hosts, topology_file=None):
    _, _, pairs, plan = _import()
    placements = {}
    if topology_file:
        placements = {p.host: p for p in plan.placements(_load(topology_file))}
    rounds = pairs.probes([tuple(p) for p in failed_pairs or ()], list(good_hosts or ()), placements)
    return [[list(pair) for pair in round_] for round_ in rounds]


def culprits(failed_pairs, probe_results):
    """probe_results: {suspect: passed}, or the nccl_check records of the probe runs (the suspect
    leads its run, so it is the first of the record's hosts; all its runs must pass)."""
    _, _, pairs, _ = _import()
    if isinstance(probe_results, dict):
        results = {str(host): bool(passed) for host, passed in probe_results.items()}
    else:
        results = {}
        for record in probe_results or ():
            hosts = record.get("hosts") or []
            if hosts:
                ok = record.get("status") != "fail"
                results[hosts[0]] = results.get(hosts[0], True) and ok
    return pairs.culprits([tuple(p) for p in failed_pairs or ()], results).as_dict()


def bisection(state, records=None, good=None):
    """One round of a bisection (clusterforge.validation.pairs.Bisection), as plain data.

    state: the failed group (a list of hosts; empty when its run passed) to start, else the dict
    this filter returned last. records: the nccl_check records holding the outcomes of the runs it
    planned then (state["next"]); a run passes when none of its records failed. good: nodes known
    to be good, partners for single nodes. Returns the state with "next" (the runs of the next
    round, [] when done) and "depth" (rounds still needed at most)."""
    _, _, pairs, _ = _import()
    if isinstance(state, dict):
        found = pairs.Bisection.from_dict(state)
        if records is not None:
            planned = [list(run) for run in state.get("next") or ()]
            passed = {}
            for record in records or ():
                hosts = list(record.get("hosts") or ())
                if hosts in planned:
                    passed[hosts[0]] = passed.get(hosts[0], True) and record.get("status") != "fail"
            found.record(passed)
    else:
        found = pairs.Bisection.of_failed([str(host) for host in state or ()])
    depth = found.depth
    runs = found.next_round([str(host) for host in good or ()]) if found.open else []
    return {**found.as_dict(), "next": runs, "depth": depth}


def with_bisection(verdict, state):
    """The pairs' verdict with the group bisection's culprits, cleared nodes and unresolved groups."""
    _, _, pairs, _ = _import()
    return pairs.with_bisection(dict(verdict or {}), state)


RECORD_KEYS = (
    "status",
    "checks",
    "counts",
    "label",
    "hosts",
    "busbw",
    "bandwidth_gbps",
    "device",
    "source",
    "notes",
    "msg",
    "rc",
    "gpus",
    "ports",
    "job",  # training_check: the acceptance job's record (ranks, hosts, the killed rank, the reference loss)
    "busbw_floor_gbps",  # training_check: the all-reduce floor the job was held to (from the NCCL runs)
    "nics",  # gpudirect_check: {RDMA device: PCI address}, which places its PCI pairs on the rails
    "use_cuda",  # ib_bandwidth_check: the GPU whose memory a GPUDirect run used (null: host memory)
)


def records(registered, module, **extra):
    """A registered check result (or a looped one) trimmed to what the report needs, one record per
    module run; tasks skipped by their condition leave no record. A run that crashed before judging
    anything (no status) becomes status fail with its message."""
    if not registered:
        return []
    found = []
    for item in _items(registered):
        if not isinstance(item, dict) or (item.get("skipped") and "checks" not in item) or item.get("unreachable"):
            continue  # an unreachable run judged nothing: the host's record says it (unreachable_message)
        record = {"module": module, **extra}
        record.update({key: item[key] for key in RECORD_KEYS if key in item})
        if "status" not in record:
            record["status"] = "fail"
            record["error"] = item.get("msg") or "the module returned no verdict"
        found.append(record)
    return found


def one_nvlink_domain(hosts, hostvars):
    """Whether every host of an NCCL run is a tray of the same multi-node NVLink domain
    (clusterforge_nvlink_domain, from the topology inventory): such a run crosses trays over
    NVLink, and nccl_check judges it against NVLink rather than the scale-out rails."""
    domains = {(hostvars[host] or {}).get("clusterforge_nvlink_domain") for host in hosts or ()}
    return len(domains) == 1 and None not in domains


def busbw_floor(run_records):
    """The all-reduce bus bandwidth floor (GB/s) the multi-node nccl-tests runs were held to (their
    records, nccl_check's busbw.floor; the lowest when several): the floor the acceptance job's own
    all-reduce is held to. None when no all_reduce run has one (no GPU nodes, no run)."""
    floors = [
        record["busbw"]["floor"]
        for record in run_records or ()
        if isinstance(record, dict)
        and str(record.get("label") or "").split(":")[0] == "all_reduce"
        and isinstance(record.get("busbw"), dict)
        and isinstance(record["busbw"].get("floor"), (int, float))
    ]
    return min(floors) if floors else None


def _items(registered):
    """The module runs of a registered result: its loop items, or itself."""
    if isinstance(registered, dict) and "results" in registered:
        return registered["results"] or []
    return [registered]


def unreachable_message(registered_results):
    """Why a host left the run unreachable: the message of the first of its registered results
    (looped or not) that could not reach it; None when none did."""
    for registered in registered_results or ():
        for item in [*_items(registered or {}), registered]:  # a loop that lost the host says it on an item
            if isinstance(item, dict) and item.get("unreachable"):
                return str(item.get("msg") or "unreachable")
    return None


def host_verdict(host_records, host, cleared=None):
    """{"status", "failures"} of a host from its records (see clusterforge.validation.host_verdict)."""
    try:
        from clusterforge.validation.host_verdict import host_verdict as verdict
    except ImportError as exc:
        raise AnsibleFilterError(
            f"clusterforge_validation_host_verdict needs the clusterforge package: {exc}"
        ) from None
    return verdict(str(host), list(host_records or ()), list(cleared or ()))


def cabling_csv(topology_file):
    try:
        from clusterforge.topology.render.cabling import cabling_csv as render
    except ImportError as exc:
        raise AnsibleFilterError(f"clusterforge_cabling_csv needs the clusterforge package: {exc}") from None
    return render(_load(topology_file, links=True))


class FilterModule:
    def filters(self):
        return {
            "clusterforge_validation_plan": validation_plan,
            "clusterforge_validation_led_by": led_by,
            "clusterforge_validation_probes": probe_rounds,
            "clusterforge_validation_culprits": culprits,
            "clusterforge_validation_bisect": bisection,
            "clusterforge_validation_with_bisection": with_bisection,
            "clusterforge_cabling_csv": cabling_csv,
            "clusterforge_validation_records": records,
            "clusterforge_validation_busbw_floor": busbw_floor,
            "clusterforge_validation_one_nvlink_domain": one_nvlink_domain,
            "clusterforge_validation_host_verdict": host_verdict,
            "clusterforge_validation_unreachable": unreachable_message,
        }
