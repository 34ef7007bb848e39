#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_check
short_description: Check a node's NVIDIA GPUs against what the topology expects
description:
  - Runs C(nvidia-smi -q -x), C(nvidia-smi topo -m) and reads the kernel log (C(journalctl -k),
    else C(dmesg)) for Xid/SXid events and GPUs the driver lost (fallen off the bus, RmInitAdapter
    failed; logged with or without an Xid), then judges GPU count, model, driver and CUDA version,
    PCIe link, ECC errors, row remapping, retired pages, clock slowdown (throttle) reasons,
    temperature, persistence mode, fabric registration, NVLinks per GPU and Xids.
  - "GPU-NIC affinity (C(gpu.nic_affinity)): with O(hca_gpus), each HCA must be PIX or PXB to the
    GPU it serves in C(nvidia-smi topo -m); PHB, NODE or SYS sends the rail's traffic through the
    CPU (a wrong slot or rail), which warns, or fails with O(nic_affinity_severity=fail)."
  - Read-only; changes nothing, so it runs the same in check mode.
  - "Every check returns C(pass), C(warn), C(fail) or C(skipped). Absent hardware and a missing tool
    are C(skipped) with the reason (C(skipped: no hardware), C(skipped: nvidia-smi not found)),
    never C(pass). The module fails the host only when a check is C(fail)."
  - "Replay mode (tests and the lab): with O(replay_dir) or O(replay) the module reads outputs
    recorded earlier from files on the node and runs no tool. Files in O(replay_dir):
    C(nvidia-smi-q-x.xml) or C(nvidia-smi-q.txt) (C(nvidia-smi -q -x) or C(-q) output),
    C(nvidia-smi-topo-m.txt), C(kernel.log) (C(journalctl -k) or C(dmesg) output). Without the
    first one the node has no hardware."
extends_documentation_fragment:
  - node_check
options:
  expected_gpus:
    description: GPUs the node must have (C(clusterforge_expected_gpus)); omitted or 0 skips the count.
    type: int
  model:
    description: Product name every GPU must report, for example C(NVIDIA H100 80GB HBM3).
    type: str
  driver_version:
    description: Pinned driver version, for example C(535.161.08).
    type: str
  cuda_version:
    description: Pinned CUDA version the driver reports, for example C(12.2).
    type: str
  nvlink_generation:
    description:
      - NVLink generation (2 to 5). With O(nvswitch) it gives the NVLinks per GPU when
        O(nvlinks_per_gpu) is not set (V100 6, A100 12, H100 and B200 18).
    type: int
  nvlinks_per_gpu:
    description: NVLinks every GPU must have up, read from C(nvidia-smi topo -m).
    type: int
  nvswitch:
    description: The GPUs talk through NVSwitches (HGX/DGX); an unregistered fabric then fails.
    type: bool
    default: false
  under_load:
    description: The GPUs are busy; a PCIe link below its maximum then fails instead of warning.
    type: bool
    default: false
  persistence_mode:
    description: Persistence mode every GPU must have; unset, persistence mode must be enabled.
    type: bool
  ecc_mode:
    description: Require ECC to be enabled.
    type: bool
    default: false
  pcie_gen:
    description: PCIe generation the platform provides; a GPU whose link maximum is lower fails.
    type: int
  pcie_width:
    description: PCIe link width the platform provides.
    type: int
  temperature_warn_c:
    description: Warn above this GPU temperature; unset, above C(gpu_judge.TEMPERATURE_WARN_C) (85 C).
    type: int
  hca_gpus:
    description:
      - "HCA device to the index of the GPU it serves, for example C({mlx5_0: 0, mlx5_3: 1})
        (C(clusterforge_expected_hca_gpus), from the topology). Omitted or empty: no affinity check."
    type: dict
  nic_affinity_severity:
    description: Verdict on an HCA that is not PIX or PXB to its GPU.
    type: str
    choices: [warn, fail]
    default: warn
  kernel_log:
    description: Read the kernel log for Xid (GPU) and SXid (NVSwitch) events and lost GPUs.
    type: bool
    default: true
  require_hardware:
    description:
      - Fail, instead of skip, when O(expected_gpus) is above 0 and the node shows no NVIDIA GPU.
    type: bool
    default: false
  timeout:
    description:
      - Seconds each tool may run (through C(timeout) when present; a wedged GPU can hang nvidia-smi).
      - 0 for no limit.
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
    description: Read recorded outputs from this directory on the node instead of running tools.
    type: path
  replay:
    description:
      - 'Recorded output per command, C({"nvidia-smi -q -x": path, "nvidia-smi topo -m": path,
        "journalctl -k": path}); takes precedence over O(replay_dir).'
    type: dict
    default: {}
notes:
  - The thresholds (85 C, 10 retired pages, which clock event reasons and Xids fail) are documented
    in C(plugins/module_utils/gpu_judge.py) with their sources.
seealso:
  - module: ib_check
  - module: nccl_check
"""

EXAMPLES = r"""
- name: Check the GPUs of a DGX H100
  gpu_check:
    expected_gpus: 8
    model: NVIDIA H100 80GB HBM3
    nvlink_generation: 4
    nvswitch: true
    driver_version: 535.161.08

- name: Judge recorded outputs (lab, tests)
  gpu_check:
    expected_gpus: 8
    replay_dir: /var/lib/clusterforge/replay
"""

RETURN = r"""
status:
  description: Overall verdict, the worst check; C(skipped) when every check was skipped.
  returned: always
  type: str
  sample: fail
checks:
  description: One entry per check.
  returned: always
  type: list
  elements: dict
  contains:
    check: {description: Check name, for example C(gpu.throttle)., type: str}
    status: {description: "pass, warn, fail or skipped", type: str}
    measured: {description: What was measured (per GPU bus id where per GPU)., type: raw}
    expected: {description: What was expected., type: raw}
    message: {description: Why; for skipped checks the reason., type: str}
  sample:
    - check: gpu.throttle
      status: fail
      measured: {"00000000:19:00.0": ["hw_power_brake_slowdown", "hw_slowdown"]}
      expected: [applications_clocks_setting, display_clocks_setting, gpu_idle, sw_power_cap, sync_boost]
      message: "00000000:19:00.0: clocks held down by hw_power_brake_slowdown, hw_slowdown"
counts:
  description: Checks per status.
  returned: always
  type: dict
  sample: {pass: 10, warn: 1, fail: 1, skipped: 2}
gpus:
  description: What nvidia-smi reported.
  returned: when nvidia-smi output was read
  type: dict
  sample: {count: 8, driver_version: 535.161.08, cuda_version: "12.2", products: [NVIDIA H100 80GB HBM3]}
source:
  description: C(live), or C(replay) when recorded outputs were judged.
  returned: always
  type: str
notes:
  description: What could not be read (a missing topology or kernel log) and replay details.
  returned: always
  type: list
  elements: str
rc:
  description: Exit status of nvidia-smi when it failed.
  returned: when nvidia-smi failed
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, first_line, nvidia_gpus_on_pci, run_check_module
from ansible.module_utils.gpu_judge import judge_gpus
from ansible.module_utils.nic_affinity_judge import judge_nic_affinity
from ansible.module_utils.nvidia_smi import parse_query
from ansible.module_utils.nvidia_topo import parse_topo_matrix
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, absent, failed_run, result
from ansible.module_utils.xid import parse_kernel_log

QUERY = "nvidia-smi -q -x"
TOPO = "nvidia-smi topo -m"
KERNEL_LOG = "journalctl -k"
REPLAY_FILES = {
    QUERY: ("nvidia-smi-q-x.xml", "nvidia-smi-q.txt"),
    TOPO: ("nvidia-smi-topo-m.txt",),
    KERNEL_LOG: ("kernel.log", "dmesg.txt"),
}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            expected_gpus=dict(type="int"),
            model=dict(type="str"),
            driver_version=dict(type="str"),
            cuda_version=dict(type="str"),
            nvlink_generation=dict(type="int"),
            nvlinks_per_gpu=dict(type="int"),
            nvswitch=dict(type="bool", default=False),
            under_load=dict(type="bool", default=False),
            persistence_mode=dict(type="bool"),
            ecc_mode=dict(type="bool", default=False),
            pcie_gen=dict(type="int"),
            pcie_width=dict(type="int"),
            temperature_warn_c=dict(type="int"),
            hca_gpus=dict(type="dict"),
            nic_affinity_severity=dict(type="str", choices=["warn", "fail"], default="warn"),
            kernel_log=dict(type="bool", default=True),
            require_hardware=dict(type="bool", default=False),
            timeout=dict(type="int", default=120),
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            pci_root=dict(type="path", default="/sys/bus/pci/devices"),
        ),
    )


# Options that are gpu_judge expectation keys (QUERY_KEYS, TOPOLOGY_KEYS), by the key they give;
# tests/unit/plugins/modules/test_expectation_options.py holds their types to the judge's tables.
EXPECTATION_OPTIONS = {
    "expected_gpus": "gpu_count",
    "model": "product_name",
    "driver_version": "driver_version",
    "cuda_version": "cuda_version",
    "nvswitch": "nvswitch",
    "under_load": "under_load",
    "persistence_mode": "persistence_mode",
    "ecc_mode": "ecc_mode",
    "pcie_gen": "pcie_gen",
    "pcie_width": "pcie_width",
    "temperature_warn_c": "temperature_warn_c",
    "nvlinks_per_gpu": "nvlinks_per_gpu",
    "nvlink_generation": "nvlink_generation",
}


def expectation(params: dict) -> dict:
    """The gpu_judge expectation from the module's options; an option left unset takes the judge's
    default (gpu_judge states each one once), and expected_gpus 0 expects no count."""
    expected = {key: params[option] for option, key in EXPECTATION_OPTIONS.items()}
    expected["gpu_count"] = params["expected_gpus"] or None
    return {key: value for key, value in expected.items() if value is not None}


def _absent(params: dict, reason: str) -> list:
    return [absent("gpu.count", reason, params["expected_gpus"], params["require_hardware"])]


def _kernel_log(tools: Tools) -> tuple:
    """Xid events, or None when no kernel log could be read."""
    argv_tried = (
        (KERNEL_LOG, ["journalctl", "-k", "-b", "--no-pager", "-q"]),
        ("dmesg", ["dmesg"]),
    )
    for key, argv in argv_tried:
        outcome = tools.run(key, argv)
        if outcome is None:
            continue
        if outcome.rc != 0:
            tools.notes.append(f"{' '.join(argv)} exited {outcome.rc}: {first_line(outcome.stderr, outcome.stdout)}")
            continue
        return parse_kernel_log(outcome.stdout)
    tools.notes.append("kernel log not read: Xid events unknown")
    return None


def run_checks(module) -> tuple:
    """(results, extra return values)."""
    params = module.params
    tools = Tools(module, REPLAY_FILES, params["replay_dir"], params["replay"], params["timeout"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes}
    if not tools.replaying and not nvidia_gpus_on_pci(params["pci_root"]):
        return _absent(params, NO_HARDWARE), extra
    query = tools.run(QUERY, [params["nvidia_smi"], "-q", "-x"])
    if query is None:
        reason = NO_HARDWARE if tools.replaying else f"skipped: {params['nvidia_smi']} not found"
        return _absent(params, reason), extra
    if query.rc != 0:
        # GPUs on the bus but nvidia-smi cannot talk to the driver: not loaded, or a GPU is wedged.
        message = f"nvidia-smi -q -x exited {query.rc}: {first_line(query.stdout, query.stderr)}"
        extra.update(rc=query.rc, stdout=query.stdout, stderr=query.stderr)
        return [result("gpu.driver", FAIL, query.rc, 0, message)], extra
    try:
        report = parse_query(query.stdout, source=" ".join(query.argv) if query.source == "live" else query.source)
    except ToolFailed as exc:
        return [failed_run("gpu.driver", exc)], extra
    except ParseError as exc:
        return [result("gpu.output", FAIL, None, "nvidia-smi -q -x output", str(exc))], extra
    extra["gpus"] = {
        "count": report.gpu_count,
        "driver_version": report.driver_version,
        "cuda_version": report.cuda_version,
        "products": sorted({g.product_name for g in report.gpus if g.product_name}),
    }
    topology = None
    failed = []
    topo = tools.run(TOPO, [params["nvidia_smi"], "topo", "-m"])
    if topo is not None and topo.rc == 0:
        try:
            topology = parse_topo_matrix(topo.stdout)
        except ToolFailed as exc:
            failed.append(failed_run("gpu.topology", exc))
        except ParseError as exc:
            tools.notes.append(str(exc))
    elif topo is not None:
        tools.notes.append(f"nvidia-smi topo -m exited {topo.rc}: {first_line(topo.stderr, topo.stdout)}")
    events = _kernel_log(tools) if params["kernel_log"] else None
    results = failed + judge_gpus(report, expectation(params), topology=topology, xid_events=events)
    if report.gpus and params["hca_gpus"]:  # like ecc_mode, checked only when asked for
        affinity = {"hca_gpus": params["hca_gpus"], "nic_affinity_severity": params["nic_affinity_severity"]}
        try:
            results.append(judge_nic_affinity(topology, affinity))
        except ValueError as exc:
            module.fail_json(msg=f"gpu_check: {exc}")
    return results, extra


def main():
    run_check_module(build_module(), "gpu_check", run_checks)


if __name__ == "__main__":
    main()
