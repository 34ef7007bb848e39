#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: cabling_check
short_description: Compare the InfiniBand fabric seen by ibnetdiscover with the cabling plan
description:
  - "Runs C(ibnetdiscover -p) (ports report) on a node with an HCA in the fabric and compares it
    with the planned links of C(cabling/cabling.csv) from C(clusterforge topology render):
    every planned link must be up between the planned ports (not down, not miscabled), and every
    connected link must run at the planned speed and width."
  - "In the plan a host port is written as its HCA device (C(dgx001,mlx5_0)); ibnetdiscover names
    it by its node description, C(dgx001 mlx5_0) (rdma-ndd), port O(hca_port). Switches carry the
    topology's names once the node-name-map (C(cabling/<fabric>.node-name-map), GUIDs filled in)
    is passed as O(node_name_map)."
  - Read-only; changes nothing, so it runs the same in check mode.
  - "No RDMA device on this node is C(skipped: no hardware), no ibnetdiscover
    C(skipped: ibnetdiscover not found). The module fails the host only when a check is C(fail)."
  - 'Replay mode: with O(replay_dir) (file C(ibnetdiscover-p.txt)) or O(replay)
    (C({"ibnetdiscover -p": path})) the recorded output is judged; without it the node has no hardware.'
extends_documentation_fragment:
  - node_check
options:
  plan:
    description: The cabling plan, the text of C(cabling.csv).
    type: str
  plan_path:
    description: The cabling plan as a file on the node (used when O(plan) is not given).
    type: path
  fabric:
    description: Fabric whose rows are judged; needed when the plan holds several fabrics.
    type: str
  speed:
    description:
      - Speed every connected link must run at (C(NDR), C(HDR), ...); by default derived from the
        plan's C(speed_gbps) for 4x links (400 NDR, 200 HDR, 100 EDR, 800 XDR).
    type: str
  width:
    description: Link width every connected link must run at; unset, C(4x) (the judge's default).
    type: str
  hca_port:
    description: Port number of a host HCA in the fabric.
    type: int
    default: 1
  node_name_map:
    description: Node-name-map file on the node, passed to ibnetdiscover.
    type: path
  timeout:
    description: Seconds ibnetdiscover may run (through C(timeout) when present); 0 for no limit.
    type: int
    default: 600
  ibnetdiscover:
    description: Name or path of ibnetdiscover.
    type: str
    default: ibnetdiscover
  sysfs_root:
    description: The RDMA sysfs tree probed for an HCA.
    type: path
    default: /sys/class/infiniband
  replay_dir:
    description: Read the recorded ibnetdiscover output from this directory on the node.
    type: path
  replay:
    description: 'Recorded output, C({"ibnetdiscover -p": path}).'
    type: dict
    default: {}
seealso:
  - module: ib_check
"""

EXAMPLES = r"""
- name: Check the compute fabric's cabling from the first head node
  cabling_check:
    plan: "{{ lookup('ansible.builtin.file', 'rendered/cabling/cabling.csv') }}"
    fabric: compute
    node_name_map: /etc/clusterforge/compute.node-name-map
"""

RETURN = r"""
status:
  description: Overall verdict; C(skipped) when every check was skipped.
  returned: always
  type: str
checks:
  description: "C(cabling.speed) and C(cabling.links): check, status, measured, expected, message."
  returned: always
  type: list
  elements: dict
  sample:
    - check: cabling.links
      status: fail
      measured: {"dgx001 mlx5_0/1 - superpod-su1-r1-leaf1/1": "port down (4x ???, no peer)"}
      expected: 1024
      message: 1 of 1024 planned links wrong
counts:
  description: Checks per status.
  returned: always
  type: dict
planned_links:
  description: Links of the plan judged.
  returned: always
  type: int
fabric_ports:
  description: Port lines ibnetdiscover reported.
  returned: when its output was read
  type: int
source:
  description: C(live) or C(replay).
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cabling_judge import judge_cabling
from ansible.module_utils.cabling_plan import plan_expectation
from ansible.module_utils.check_module import Tools, check_module, first_line, run_check_module
from ansible.module_utils.ibnetdiscover import parse_ibnetdiscover_ports
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, failed_run, result, skipped

KEY = "ibnetdiscover -p"
REPLAY_FILES = {KEY: ("ibnetdiscover-p.txt",)}


# Options that are cabling_judge.CABLING_KEYS, by the key they give; links come from the plan.
EXPECTATION_OPTIONS = {"speed": "speed", "width": "width"}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            plan=dict(type="str"),
            plan_path=dict(type="path"),
            fabric=dict(type="str"),
            speed=dict(type="str"),
            width=dict(type="str"),
            hca_port=dict(type="int", default=1),
            node_name_map=dict(type="path"),
            timeout=dict(type="int", default=600),
            ibnetdiscover=dict(type="str", default="ibnetdiscover"),
            sysfs_root=dict(type="path", default="/sys/class/infiniband"),
        ),
    )


def _has_hca(root: str) -> bool:
    try:
        return bool(os.listdir(root))
    except OSError:
        return False


def run_checks(module) -> tuple:
    params = module.params
    tools = Tools(module, REPLAY_FILES, params["replay_dir"], params["replay"], params["timeout"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "planned_links": 0}
    if not tools.replaying and not _has_hca(params["sysfs_root"]):
        return [skipped("cabling.links", NO_HARDWARE)], extra
    text = params["plan"]
    if text is None and params["plan_path"]:
        try:
            with open(params["plan_path"], encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            module.fail_json(msg=f"cannot read the cabling plan {params['plan_path']}: {exc}")
    try:
        expected, note = plan_expectation(text or "", params["fabric"], params["hca_port"])
    except ParseError as exc:
        module.fail_json(msg=f"cabling plan: {exc}")
    extra["planned_links"] = len(expected["links"])
    # Given options override what the plan says.
    expected.update({key: params[option] for option, key in EXPECTATION_OPTIONS.items() if params[option] is not None})
    if note and params["speed"] is None:
        tools.notes.append(note)

    argv = [params["ibnetdiscover"], "-p"]
    if params["node_name_map"]:
        argv += ["--node-name-map", params["node_name_map"]]
    outcome = tools.run(KEY, argv)
    if outcome is None:
        reason = NO_HARDWARE if tools.replaying else f"skipped: {params['ibnetdiscover']} not found"
        return [skipped("cabling.links", reason)], extra
    if outcome.rc != 0:
        message = f"ibnetdiscover -p exited {outcome.rc}: {first_line(outcome.stderr, outcome.stdout)}"
        extra.update(rc=outcome.rc, stdout=outcome.stdout[-20000:], stderr=outcome.stderr[-20000:])
        return [result("cabling.discover", FAIL, outcome.rc, 0, message)], extra
    try:
        ports = parse_ibnetdiscover_ports(outcome.stdout, source=KEY if outcome.source == "live" else outcome.source)
    except ToolFailed as exc:
        return [failed_run("cabling.discover", exc)], extra
    except ParseError as exc:
        return [result("cabling.output", FAIL, None, "ibnetdiscover -p ports report", str(exc))], extra
    extra["fabric_ports"] = len(ports)
    return judge_cabling(ports, expected), extra


def main():
    run_check_module(build_module(), "cabling_check", run_checks)


if __name__ == "__main__":
    main()
