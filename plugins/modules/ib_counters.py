#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: ib_counters
short_description: Read a node's InfiniBand port error counters, and judge their growth since an earlier reading
description:
  - Reads the error counters of every InfiniBand port (C(symbol_error), C(link_downed),
    C(port_rcv_errors), ... from C(/sys/class/infiniband/*/ports/*/counters)).
  - Without O(before) it only reads them (the check C(ib_counters.read)); with O(before), the
    reading an earlier run returned, it judges each port with C(plugins/module_utils/ib_counter_judge.py).
    A port passes only when none of the O(counters) grew. A counter that grew, went down (reset
    during the run) or a port missing from either reading fails.
  - Read-only; changes nothing, so it runs the same in check mode.
  - "A node without InfiniBand ports is C(skipped: no hardware)."
  - "Replay mode: with O(replay_dir) the module reads C(infiniband-<phase>) (a copy of
    C(/sys/class/infiniband)) or C(perfquery-<phase>.txt) (C(perfquery -x) output of the HCA
    O(perfquery_device)), O(phase) being C(before) or C(after)."
extends_documentation_fragment:
  - node_check
options:
  before:
    description: The O(phase=before) run's RV(counters); given, the module judges this reading against it.
    type: dict
  phase:
    description: Which reading this is; names the recordings in replay mode.
    type: str
    choices: [before, after]
    default: before
  counters:
    description: Counters whose growth fails a port (sysfs names); default every error counter.
    type: list
    elements: str
  perfquery_device:
    description: HCA whose port blocks a replayed C(perfquery) output holds (perfquery prints only the LID).
    type: str
    default: ""
  sysfs_root:
    description: The RDMA sysfs tree (for tests).
    type: path
    default: /sys/class/infiniband
  replay_dir:
    description: Read the recordings from this directory on the node instead of sysfs.
    type: path
  replay:
    description: 'Recording per source, C({sysfs-before: dir, perfquery-after: file, ...}).'
    type: dict
    default: {}
seealso:
  - module: ib_check
"""

EXAMPLES = r"""
- name: Read the port error counters before the burn-in
  ib_counters:
  register: __before

- name: Judge them after it
  ib_counters:
    phase: after
    before: "{{ __before.counters }}"
"""

RETURN = r"""
status:
  description: Overall verdict; C(skipped) when the node has no InfiniBand port.
  returned: always
  type: str
checks:
  description: "One entry per port (C(ib_counters.mlx5_0/1)) with both readings per counter, or C(ib_counters.read)."
  returned: always
  type: list
  elements: dict
counters:
  description: "This reading, C({\"mlx5_0/1\": {symbol_error: 0, ...}})."
  returned: always
  type: dict
source:
  description: C(live) or C(replay).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, run_check_module
from ansible.module_utils.ib_counter_judge import WATCHED, from_sysfs, judge, parse_perfquery
from ansible.module_utils.ib_sysfs import read_ib_sysfs
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, PASS, ParseError, result, skipped


def replay_files(phase: str) -> dict:
    return {f"sysfs-{phase}": (f"infiniband-{phase}",), f"perfquery-{phase}": (f"perfquery-{phase}.txt",)}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            before=dict(type="dict"),
            phase=dict(type="str", default="before", choices=["before", "after"]),
            counters=dict(type="list", elements="str"),
            perfquery_device=dict(type="str", default=""),
            sysfs_root=dict(type="path", default="/sys/class/infiniband"),
        ),
    )


def read_counters(module, tools: Tools) -> dict:
    """This reading, {} when there is no InfiniBand port (or, replaying, no recording)."""
    phase = module.params["phase"]
    if tools.replaying:
        tree = tools.recorded_dir(f"sysfs-{phase}")
        if tree is not None:
            return from_sysfs(read_ib_sysfs(tree))
        outcome = tools.run(f"perfquery-{phase}", ["perfquery", "-x"])
        if outcome is None:
            return {}
        return parse_perfquery(outcome.stdout, module.params["perfquery_device"], source=outcome.source)
    return from_sysfs(read_ib_sysfs(module.params["sysfs_root"]))


def run_checks(module) -> tuple:
    params = module.params
    tools = Tools(module, replay_files(params["phase"]), params["replay_dir"], params["replay"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "counters": {}}
    try:
        counters = read_counters(module, tools)
    except (ParseError, OSError) as exc:
        return [result("ib_counters.output", FAIL, None, "port error counters", str(exc))], extra
    extra["counters"] = counters
    if params["before"] is None:
        if not counters:
            return [skipped("ib_counters.read", NO_HARDWARE)], extra
        return [result("ib_counters.read", PASS, len(counters), None, f"read {len(counters)} InfiniBand ports")], extra
    return judge(params["before"], counters, params["counters"] or WATCHED), extra


def main():
    run_check_module(build_module(), "ib_counters", run_checks)


if __name__ == "__main__":
    main()
