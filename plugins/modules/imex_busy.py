#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: imex_busy
short_description: Tell whether a job runs on a compute tray, before IMEX is restarted under it
description:
  - "Restarting nvidia-imex drops the memory imports of the jobs that use it. This asks the two
    places that know whether one runs, and changes nothing:"
  - "Slurm, where C(squeue) is installed: C(squeue --all --nodelist <node> --states=RUNNING,COMPLETING
    --format=%i|%u|%a|%q|%T); any row is a job that holds the tray."
  - "The GPUs, where the driver is loaded and C(nvidia-smi) is installed:
    C(nvidia-smi --query-compute-apps=gpu_uuid,name --format=csv); any row is a compute process."
  - "A node Slurm does not know (C(squeue: error: Invalid node name ...)) has no Slurm job."
  - "A tool that exists but fails (squeue cannot reach slurmctld, nvidia-smi cannot reach the
    driver) cannot say the tray is idle: the tray counts as busy and C(reasons) says why."
  - "Where neither tool can be asked, nothing can see a job: the tray counts as idle and C(asked) is
    empty (the caller says so)."
options:
  node:
    description: The tray's Slurm node name.
    type: str
    required: true
  driver_loaded:
    description: Whether the NVIDIA kernel driver is loaded (nvidia-smi is asked only then).
    type: bool
    required: true
  squeue:
    description: The squeue program (a name searched in PATH, or a path).
    type: str
    default: squeue
  nvidia_smi:
    description: The nvidia-smi program (a name searched in PATH, or a path).
    type: str
    default: nvidia-smi
"""

EXAMPLES = r"""
- name: Ask whether a job runs on the tray
  imex_busy:
    node: "{{ inventory_hostname }}"
    driver_loaded: true
  register: busy
"""

RETURN = r"""
busy:
  description: True where a job or compute process holds the tray, or a tool that exists failed.
  returned: always
  type: bool
reasons:
  description: Why it is busy (jobs, processes, failed tools); empty when idle.
  returned: always
  type: list
asked:
  description: The tools asked (squeue, nvidia-smi); empty where neither could be.
  returned: always
  type: list
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.imex_node import BUSY_STATES, COMPUTE_APPS_QUERY, busy_reasons, parse_compute_apps
from ansible.module_utils.sacctmgr import SQUEUE_FORMAT, parse_squeue
from ansible.module_utils.verdicts import ParseError, ToolFailed

C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
# A Slurm node name (a host name); it becomes one argv word.
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
UNKNOWN_NODE = re.compile(r"^squeue: error: Invalid node name ", re.M)


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            node=dict(type="str", required=True),
            driver_loaded=dict(type="bool", required=True),
            squeue=dict(type="str", default="squeue"),
            nvidia_smi=dict(type="str", default="nvidia-smi"),
        ),
        supports_check_mode=True,
    )


def squeue_argv(program: str, node: str) -> list:
    return [program, "--all", "--nodelist", node, f"--states={','.join(BUSY_STATES)}", f"--format={SQUEUE_FORMAT}"]


def compute_apps_argv(program: str) -> list:
    return [program, COMPUTE_APPS_QUERY, "--format=csv"]


def find(module, program: str) -> str | None:
    if os.path.isabs(program):
        return program if os.access(program, os.X_OK) else None
    return module.get_bin_path(program)


def read_output(rc: int, out: str, err: str, parse, what: str) -> tuple:
    """(rows, failure): the parsed rows, or None and why the tool could not tell. squeue's refusal of
    a node Slurm does not know ("squeue: error: Invalid node name <node>", exit 1, Slurm 24.11) is no
    failure: no job can run on a node that is not Slurm's."""
    if what == "squeue" and rc != 0 and UNKNOWN_NODE.search(err or out):
        return [], None
    if rc != 0:
        detail = (err or out).strip().splitlines()
        return None, f"{what} exited {rc}: {detail[0][:200] if detail else 'no output'}"
    try:
        return parse(out), None
    except (ParseError, ToolFailed) as exc:
        return None, f"{what}: {exc}"


def ask(module, argv: list, parse, what: str) -> tuple:
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    return read_output(rc, out, err, parse, what)


def main() -> None:
    module = build_module()
    params = module.params
    node = params["node"]
    if not NODE_NAME.match(node):
        module.fail_json(msg=f"node: expected a Slurm node name (a host name), got {node!r}")
    asked, failures = [], []
    jobs = apps = None
    squeue = find(module, params["squeue"])
    if squeue:
        asked.append("squeue")
        jobs, failure = ask(module, squeue_argv(squeue, node), parse_squeue, "squeue")
        failures += [failure] if failure else []
    nvidia_smi = find(module, params["nvidia_smi"]) if params["driver_loaded"] else None
    if nvidia_smi:
        asked.append("nvidia-smi")
        apps, failure = ask(module, compute_apps_argv(nvidia_smi), parse_compute_apps, "nvidia-smi")
        failures += [failure] if failure else []
    reasons = busy_reasons(jobs, apps) + [f"cannot tell whether a job runs: {failure}" for failure in failures]
    module.exit_json(changed=False, busy=bool(reasons), reasons=reasons, asked=asked)


if __name__ == "__main__":
    main()
