#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: dcgm_diag
short_description: Run NVIDIA DCGM's active diagnostic (dcgmi diag -r N) and judge each of its tests
description:
  - Runs C(dcgmi diag -r <level>) on this node's GPUs and judges every test row of its result
    table with the judge validate uses for dcgmi (C(gpu_judge.judge_dcgmi)); Pass, Warn, Fail and
    Skip map to pass, warn, fail and skipped.
  - "Level 1 takes seconds, level 2 minutes, level 3 tens of minutes, level 4 about an hour or
    more: O(timeout) bounds the run; a run that ran past it fails C(dcgm.run)."
  - "It stresses the GPUs but changes no configuration, so it also runs in check mode."
  - "No NVIDIA GPU on the PCI bus is C(skipped: no hardware); GPUs without C(dcgmi) installed
    are C(skipped: dcgmi not found) (failed with O(require_hardware))."
  - "Replay mode: with O(replay_dir) or O(replay) the module judges C(dcgmi-diag-r<level>.txt),
    else C(dcgmi-diag.txt), instead of running anything."
extends_documentation_fragment:
  - node_check
options:
  level:
    description: The diagnostic's run level (C(-r)).
    type: int
    choices: [1, 2, 3, 4]
    default: 3
  timeout:
    description: Seconds the diagnostic may run (through C(timeout) when present); 0 for no limit.
    type: int
    default: 7200
  required_tests:
    description: Tests that must appear in the result (a test the diagnostic left out fails).
    type: list
    elements: str
    default: []
  require_hardware:
    description: Fail, instead of skip, when the node has GPUs but no dcgmi.
    type: bool
    default: false
  pci_root:
    description: PCI device tree probed for NVIDIA GPUs.
    type: path
    default: /sys/bus/pci/devices
  replay_dir:
    description: Read the recorded output from this directory on the node instead of running dcgmi.
    type: path
  replay:
    description: 'Recording per command, C({"dcgmi diag": file}).'
    type: dict
    default: {}
seealso:
  - module: gpu_check
"""

EXAMPLES = r"""
- name: DCGM level 3 diagnostic of a node under acceptance
  dcgm_diag:
    level: 3
    timeout: 3600
"""

RETURN = r"""
status:
  description: Overall verdict; C(skipped) when every check was skipped.
  returned: always
  type: str
checks:
  description: "One entry per dcgmi test (C(dcgmi.Memory), C(dcgmi.Diagnostic), ...), or C(dcgm.run)."
  returned: always
  type: list
  elements: dict
level:
  description: The run level.
  returned: always
  type: int
source:
  description: C(live) or C(replay).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, first_line, nvidia_gpus_on_pci, run_check_module
from ansible.module_utils.dcgmi import parse_dcgmi_diag
from ansible.module_utils.gpu_judge import judge_dcgmi
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, absent, failed_run, result

DIAG = "dcgmi diag"


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            level=dict(type="int", default=3, choices=[1, 2, 3, 4]),
            timeout=dict(type="int", default=7200),
            required_tests=dict(type="list", elements="str", default=[]),
            require_hardware=dict(type="bool", default=False),
            pci_root=dict(type="path", default="/sys/bus/pci/devices"),
        ),
    )


def run_checks(module) -> tuple:
    params = module.params
    level = params["level"]
    files = {DIAG: (f"dcgmi-diag-r{level}.txt", "dcgmi-diag.txt")}
    tools = Tools(module, files, params["replay_dir"], params["replay"], params["timeout"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "level": level}
    if not tools.replaying and not nvidia_gpus_on_pci(params["pci_root"]):
        return [absent("dcgm.present", NO_HARDWARE)], extra
    outcome = tools.run(DIAG, ["dcgmi", "diag", "-r", str(level)])
    if outcome is None:
        if tools.replaying:
            return [absent("dcgm.present", NO_HARDWARE)], extra
        reason = "skipped: dcgmi not found"
        return [absent("dcgm.present", reason, f"dcgmi diag -r {level}", params["require_hardware"])], extra
    try:
        diag = parse_dcgmi_diag(outcome.stdout, source=" ".join(outcome.argv))
    except ToolFailed as exc:
        return [failed_run("dcgm.run", exc, outcome.rc)], extra
    except ParseError as exc:
        message = f"{exc}; dcgmi exited {outcome.rc}: {first_line(outcome.stderr, outcome.stdout)}"
        return [result("dcgm.output", FAIL, outcome.rc, "dcgmi diag's result table", message)], extra
    results = judge_dcgmi(diag, {"required_tests": params["required_tests"]})
    if outcome.rc not in (0, None) and not any(r.status == FAIL for r in results):
        # A table without a failed row but a nonzero exit (killed by the timeout, an internal
        # error after the table) is not a passed diagnostic.
        message = f"dcgmi diag -r {level} exited {outcome.rc}: {first_line(outcome.stderr)}"
        results.append(result("dcgm.run", FAIL, outcome.rc, 0, message))
    return results, extra


def main():
    run_check_module(build_module(), "dcgm_diag", run_checks)


if __name__ == "__main__":
    main()
