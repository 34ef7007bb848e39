#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: dcgm_check
short_description: Run NVIDIA DCGM's active diagnostic (dcgmi diag) on a node and judge it
description:
  - Runs C(dcgmi diag -r LEVEL) against the node's nv-hostengine and judges every test of its
    result table (C(plugins/module_utils/dcgmi.py) parses it, C(gpu_judge.judge_dcgmi) judges it,
    the same judge C(clusterforge check judge dcgmi) uses). Level 1 (deployment checks, seconds)
    suits a Slurm prolog; levels 2 to 4 run minutes to hours and belong on idle nodes.
  - "Absent hardware and a missing tool are C(skipped) with the reason (C(skipped: no hardware),
    C(skipped: dcgmi not found)), never C(pass). The module fails the host only when a test is
    C(Fail) or the diagnostic could not complete."
  - "Replay mode (tests and the lab): with O(replay_dir) or O(replay) the module reads a recorded
    C(dcgmi diag) output from C(dcgmi-diag-r<level>.txt), else C(dcgmi-diag.txt), in O(replay_dir) and
    runs no tool; without it the node has no hardware."
  - "A result table without a failed test but a non-zero exit (killed by O(timeout), an internal
    error after the table) fails C(dcgmi.run): it is not a passed diagnostic."
  - "It stresses the GPUs but changes no configuration, so it also runs in check mode. The Slurm
    prolog runs level 1, the burn-in (playbooks/acceptance.yml) level 3 or 4."
extends_documentation_fragment:
  - node_check
options:
  level:
    description: The diagnostic's run level (C(-r)); 1 takes seconds, 3 about half an hour, 4 hours.
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  required_tests:
    description: Tests that must appear in the result table (a test that did not run fails).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds dcgmi may run (through C(timeout) when present); 0 for no limit.
    type: int
    default: 120
  require_hardware:
    description: Fail, instead of skip, when the node has GPUs but no dcgmi.
    type: bool
    default: false
  dcgmi:
    description: Name or path of dcgmi.
    type: str
    default: dcgmi
  pci_root:
    description: PCI device tree probed for NVIDIA GPUs (for tests).
    type: path
    default: /sys/bus/pci/devices
  replay_dir:
    description:
      - Read the recorded output (C(dcgmi-diag-r<level>.txt) or C(dcgmi-diag.txt)) from this directory
        instead of running dcgmi.
    type: path
  replay:
    description: 'Recorded output per command, C({"dcgmi diag": path}); takes precedence over O(replay_dir).'
    type: dict
    default: {}
seealso:
  - module: gpu_check
"""

EXAMPLES = r"""
- name: DCGM's quick deployment diagnostic
  dcgm_check:
    level: 1

- name: Judge a recorded dcgmi diag output (lab, tests)
  dcgm_check:
    replay_dir: /var/lib/clusterforge/replay
"""

RETURN = r"""
status:
  description: Overall verdict, the worst test; C(skipped) when nothing could run.
  returned: always
  type: str
  sample: fail
checks:
  description: One entry per dcgmi test (C(dcgmi.<test name>)).
  returned: always
  type: list
  elements: dict
  sample:
    - check: dcgmi.Persistence Mode
      status: fail
      measured: Fail
      expected: Pass
      message: Fail
counts:
  description: Checks per status.
  returned: always
  type: dict
  sample: {pass: 4, warn: 0, fail: 5, skipped: 0}
source:
  description: C(live), or C(replay) when a recorded output was judged.
  returned: always
  type: str
notes:
  description: What could not be read and replay details.
  returned: always
  type: list
  elements: str
rc:
  description: Exit status of dcgmi when its output could not be judged.
  returned: when dcgmi failed
  type: int
level:
  description: The run level judged.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, first_line, nvidia_gpus_on_pci, run_check_module
from ansible.module_utils.dcgmi import parse_dcgmi_diag
from ansible.module_utils.gpu_judge import judge_dcgmi
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, failed_run, result, skipped

DIAG = "dcgmi diag"


def replay_files(level: int) -> dict:
    """The recordings of a level's run: its own first, then a recording of any level."""
    return {DIAG: (f"dcgmi-diag-r{level}.txt", "dcgmi-diag.txt")}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            level=dict(type="int", choices=[1, 2, 3, 4], default=1),
            required_tests=dict(type="list", elements="str", default=[]),
            timeout=dict(type="int", default=120),
            require_hardware=dict(type="bool", default=False),
            dcgmi=dict(type="str", default="dcgmi"),
            pci_root=dict(type="path", default="/sys/bus/pci/devices"),
        ),
    )


# Options that are gpu_judge.DCGMI_KEYS expectation keys, by the key they give
# (tests/unit/plugins/modules/test_expectation_options.py holds them to the judge's table).
EXPECTATION_OPTIONS = {"required_tests": "required_tests"}


def expectation(params: dict) -> dict:
    return {key: params[option] for option, key in EXPECTATION_OPTIONS.items()}


def run_checks(module) -> tuple:
    """(results, extra return values)."""
    params = module.params
    level = params["level"]
    tools = Tools(module, replay_files(level), params["replay_dir"], params["replay"], params["timeout"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "level": level}
    if not tools.replaying and not nvidia_gpus_on_pci(params["pci_root"]):
        return [skipped("dcgmi", NO_HARDWARE)], extra
    diag = tools.run(DIAG, [params["dcgmi"], "diag", "-r", str(level)])
    if diag is None:
        if tools.replaying:
            return [skipped("dcgmi", NO_HARDWARE)], extra
        reason = f"skipped: {params['dcgmi']} not found (DCGM is not installed)"
        if params["require_hardware"]:
            return [result("dcgmi", FAIL, None, f"dcgmi diag -r {level}", reason.replace("skipped: ", ""))], extra
        return [skipped("dcgmi", reason)], extra
    source = " ".join(diag.argv) if diag.source == "live" else diag.source
    # dcgmi exits non-zero when a test fails, with the table on stdout: judge the table whatever
    # the exit status, and report the exit status only when there is no table to judge.
    try:
        parsed = parse_dcgmi_diag(diag.stdout, source=source)
    except ToolFailed as exc:
        extra["rc"] = diag.rc
        return [failed_run("dcgmi.run", exc, diag.rc)], extra
    except ParseError as exc:
        extra.update(rc=diag.rc, stdout=diag.stdout, stderr=diag.stderr)
        said = f"dcgmi diag exited {diag.rc}: {first_line(diag.stderr, diag.stdout)}" if diag.rc else str(exc)
        return [result("dcgmi.run", FAIL, diag.rc, "a dcgmi diag result table", said)], extra
    results = judge_dcgmi(parsed, expectation(params))
    if diag.rc not in (0, None) and not any(r.status == FAIL for r in results):
        # A table without a failed row but a non-zero exit (the time limit, an internal error
        # after the table) is not a passed diagnostic.
        results.append(
            result("dcgmi.run", FAIL, diag.rc, 0, f"dcgmi diag -r {level} exited {diag.rc}: {first_line(diag.stderr)}")
        )
    return results, extra


def main():
    run_check_module(build_module(), "dcgm_check", run_checks)


if __name__ == "__main__":
    main()
