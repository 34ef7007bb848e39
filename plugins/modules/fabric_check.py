#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_check
short_description: Judge a GB200/GB300 tray's NVLink fabric attachment (the Fabric section of nvidia-smi -q)
description:
  - Runs C(nvidia-smi -q) and judges each GPU's Fabric section (C(plugins/module_utils/nvidia_fabric.py)
    parses and judges it, the same code C(clusterforge check judge nvidia-smi-fabric) uses) - the
    registration State and Status (C(Completed)/C(Success)), the domain identity (one CliqueId and
    one ClusterUUID on every GPU, none of them the all-zero UUID or clique 0, and the expected ones
    where given) and the Health Summary (drivers 570 and later).
  - "It returns the node's identity (C(identity): its CliqueId and ClusterUUID) for the controller,
    which holds every tray of an NVLink domain to one identity (playbooks/validate.yml)."
  - "It runs the full C(nvidia-smi -q): not every driver branch accepts narrowing it with
    C(-d FABRIC) (it exits 2 on some 580 drivers), and the parser reads the Fabric sections out of
    the whole output."
  - "No NVIDIA GPU on the PCI bus, or GPUs on no NVLink fabric (Fabric State N/A), is
    C(skipped: no hardware), never C(pass). A missing nvidia-smi is C(skipped) with the reason."
  - "Replay mode (tests and the lab): with O(replay_dir) or O(replay) the module reads a recorded
    C(nvidia-smi -q) output from C(nvidia-smi-fabric.txt) in O(replay_dir) and runs no tool; a
    node without that recording has no hardware. Its verdicts say C(source: replay)."
  - It changes nothing, so it also runs in check mode.
extends_documentation_fragment:
  - node_check
options:
  clique_id:
    description: The CliqueId every GPU must report (unset, any one CliqueId shared by all GPUs).
    type: int
  cluster_uuid:
    description: The ClusterUUID every GPU must report (unset, any one shared by all GPUs).
    type: str
  fabric_health:
    description: Judge the Health Summary (false skips it, for drivers that report it wrongly).
    type: bool
    default: true
  timeout:
    description: Seconds nvidia-smi may run (through C(timeout) when present); 0 for no limit.
    type: int
    default: 120
  nvidia_smi:
    description: Name or path of nvidia-smi.
    type: str
    default: nvidia-smi
  pci_root:
    description: PCI device tree probed for NVIDIA GPUs (for tests).
    type: path
    default: /sys/bus/pci/devices
  replay_dir:
    description: Read the recorded C(nvidia-smi -q) output (C(nvidia-smi-fabric.txt)) from this directory instead.
    type: path
  replay:
    description: 'Recorded output per command, C({"nvidia-smi -q": path}); takes precedence over O(replay_dir).'
    type: dict
    default: {}
seealso:
  - module: gpu_check
"""

EXAMPLES = r"""
- name: Judge this tray's NVLink fabric attachment
  fabric_check:

- name: Hold a tray to its domain's known identity
  fabric_check:
    clique_id: 32766
    cluster_uuid: 6a130f54-faaa-4b8f-847f-be44ab70f917
"""

RETURN = r"""
status:
  description: Overall verdict, the worst check; C(skipped) when nothing could be judged.
  returned: always
  type: str
  sample: fail
checks:
  description: gpu.fabric_state, gpu.fabric_domain and gpu.fabric_health (one each, over all GPUs).
  returned: always
  type: list
  elements: dict
counts:
  description: Checks per status.
  returned: always
  type: dict
  sample: {pass: 2, warn: 0, fail: 1, skipped: 0}
identity:
  description:
    - The CliqueId and ClusterUUID most of the node's fabric-attached GPUs report (lower-case
      UUID); null when none is in an NVLink domain or nothing was judged.
  returned: always
  type: dict
  sample: {clique_id: "2", cluster_uuid: dc6e40c4-d722-4357-9ba6-5291dd461278}
gpus:
  description: Each GPU's Fabric section as read (gpu, state, status, clique_id, cluster_uuid, health).
  returned: always
  type: list
  elements: dict
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
  description: Exit status of nvidia-smi when its output could not be judged.
  returned: when nvidia-smi failed
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, first_line, nvidia_gpus_on_pci, run_check_module
from ansible.module_utils.nvidia_fabric import STATE_CHECK, identity, judge_fabric, parse_fabric
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, result, skipped

QUERY = "nvidia-smi -q"
REPLAY_FILES = {QUERY: ("nvidia-smi-fabric.txt",)}
CHECKS = ("gpu.fabric_state", "gpu.fabric_domain", "gpu.fabric_health")

# Options that are nvidia_fabric.FABRIC_KEYS expectation keys, by the key they give
# (tests/unit/plugins/modules/test_expectation_options.py holds them to the judge's table).
EXPECTATION_OPTIONS = {"clique_id": "clique_id", "cluster_uuid": "cluster_uuid", "fabric_health": "fabric_health"}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            clique_id=dict(type="int"),
            cluster_uuid=dict(type="str"),
            fabric_health=dict(type="bool", default=True),
            timeout=dict(type="int", default=120),
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            pci_root=dict(type="path", default="/sys/bus/pci/devices"),
        ),
    )


def expectation(params: dict) -> dict:
    return {key: params[option] for option, key in EXPECTATION_OPTIONS.items() if params[option] is not None}


def _skipped(reason: str) -> list:
    return [skipped(check, reason) for check in CHECKS]


def run_checks(module) -> tuple:
    """(results, extra return values)."""
    params = module.params
    tools = Tools(module, REPLAY_FILES, params["replay_dir"], params["replay"], params["timeout"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "identity": None, "gpus": []}
    if not tools.replaying and not nvidia_gpus_on_pci(params["pci_root"]):
        return _skipped(NO_HARDWARE), extra
    query = tools.run(QUERY, [params["nvidia_smi"], "-q"])
    if query is None:
        return _skipped(NO_HARDWARE if tools.replaying else f"skipped: {params['nvidia_smi']} not found"), extra
    source = " ".join(query.argv) if query.source == "live" else query.source
    try:
        gpus = parse_fabric(query.stdout, source=source)
    except ParseError as exc:
        # No Fabric section: nvidia-smi failed (no driver, a wedged GPU) or printed something else.
        extra.update(rc=query.rc, stdout=query.stdout, stderr=query.stderr)
        said = f"nvidia-smi -q exited {query.rc}: {first_line(query.stderr, query.stdout)}" if query.rc else str(exc)
        return [result(STATE_CHECK, FAIL, query.rc, "the Fabric sections of nvidia-smi -q", said)], extra
    extra["gpus"] = [{key: value for key, value in gpu.items() if key != "line"} for gpu in gpus]
    extra["identity"] = identity(gpus)
    return judge_fabric(gpus, expectation(params)), extra


def main():
    run_check_module(build_module(), "fabric_check", run_checks)


if __name__ == "__main__":
    main()
