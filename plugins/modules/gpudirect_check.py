#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: gpudirect_check
short_description: Check a GPU node's GPUDirect RDMA readiness (ACS, NIC firmware, peer memory, IOMMU)
description:
  - "Judges the settings that cost multi-node NCCL half its bandwidth without an error anywhere:
    C(pcie.acs) (C(lspci -vvv) and C(lspci -tv): ACS redirection on a PCIe switch port between a
    GPU and the NIC of its rail), C(rdma.mlxconfig) (C(mlxconfig -d <pci> q) per RDMA device:
    ADVANCED_PCI_SETTINGS, MAX_ACC_OUT_READ, ATS_ENABLED and any setting O(mlxconfig) names),
    C(gpudirect.peermem) (C(lsmod): nvidia_peermem loaded), C(gpudirect.peermem_log) (the kernel
    log: the module failing to load), C(gpudirect.iommu) (C(/proc/cmdline) and C(/sys/class/iommu):
    off or passthrough) and C(gpudirect.numa_balancing) (C(kernel.numa_balancing) 0)."
  - The judges are those of C(clusterforge check judge) (kinds lspci-acs, mlxconfig, lsmod,
    peermem-log, kernel-cmdline), so a node and the controller never disagree on one output.
  - "Read-only (setting firmware or kernel parameters is another task); it runs the same in check mode."
  - "A node without NVIDIA GPUs or without RDMA devices is C(skipped: no hardware) (C(fail) with
    O(require_hardware)); a missing tool (mlxconfig comes with NVIDIA's MFT or Debian's mstflint
    as mstconfig) is C(skipped: <tool> not found), never C(pass)."
  - "Replay mode: with O(replay_dir) or O(replay) the module judges recordings: C(lspci.txt),
    C(mlxconfig.txt), C(lsmod.txt), C(kernel_log.txt), C(cmdline.txt), C(numa_balancing.txt)."
extends_documentation_fragment:
  - node_check
options:
  acs_pairs:
    description:
      - "NIC PCI address -> GPU PCI address of each rail, C({'0000:45:00.0': '0000:4a:00.0'})."
      - Unset, every NIC paired with every GPU under a common PCIe switch.
    type: dict
  mlxconfig:
    description:
      - "Firmware setting -> value (or list of values) it must have, laid over the GPUDirect
        defaults (ADVANCED_PCI_SETTINGS=True, MAX_ACC_OUT_READ 0 or 44, ATS_ENABLED=False); a
        setting set to null drops a default. The fabric's link type goes here (C(LINK_TYPE_P1: IB))."
    type: dict
  gpudirect_via:
    description: How GPU memory is registered with the NIC; C(dmabuf) needs no nvidia_peermem.
    type: str
    choices: [peermem, dmabuf]
  iommu_modes:
    description: IOMMU modes that pass; unset, C(off) and C(passthrough).
    type: list
    elements: str
  devices:
    description: RDMA devices whose firmware settings are read; unset, every device in O(sysfs_root).
    type: list
    elements: str
  require_hardware:
    description: Fail, instead of skipping, on a node without GPUs or RDMA devices.
    type: bool
    default: false
  timeout:
    description: Seconds each tool may run (through C(timeout) when present); 0 for no limit.
    type: int
    default: 60
  sysfs_root:
    description: The RDMA sysfs tree.
    type: path
    default: /sys/class/infiniband
  pci_root:
    description: The PCI sysfs tree, probed for NVIDIA GPUs.
    type: path
    default: /sys/bus/pci/devices
  cmdline_path:
    description: The kernel command line.
    type: path
    default: /proc/cmdline
  iommu_root:
    description: The IOMMU class directory (its entries, C(dmar0) or C(ivhd0), mean DMA remapping is on).
    type: path
    default: /sys/class/iommu
  numa_balancing_path:
    description: The kernel.numa_balancing sysctl file.
    type: path
    default: /proc/sys/kernel/numa_balancing
  replay_dir:
    description: Read recorded outputs from this directory on the node instead of its tools and files.
    type: path
  replay:
    description: "Recording per source, C({lspci: file, mlxconfig: file, lsmod: file, kernel_log: file})."
    type: dict
    default: {}
seealso:
  - module: gpu_check
  - module: ib_bandwidth_check
"""

EXAMPLES = r"""
- name: GPUDirect readiness of an InfiniBand GPU node
  gpudirect_check:
    mlxconfig:
      LINK_TYPE_P1: IB
"""

RETURN = r"""
status:
  description: Overall verdict; C(skipped) when every check was skipped.
  returned: always
  type: str
checks:
  description: >-
    pcie.acs, rdma.mlxconfig, gpudirect.peermem, gpudirect.peermem_log, gpudirect.iommu and
    gpudirect.numa_balancing, each with check, status, measured, expected, message.
  returned: always
  type: list
  elements: dict
  sample:
    - check: pcie.acs
      status: fail
      measured: {"0000:45:00.0-0000:4a:00.0": {"ports": ["0000:44:00.0", "0000:44:01.0"]}}
      expected: {"redirect": "off (SrcValid-, ReqRedir-, CmpltRedir-)"}
      message: >-
        ACS redirects GPUDirect traffic through the root complex: NIC 0000:45:00.0 - GPU 0000:4a:00.0
        at port 0000:44:01.0 (SrcValid+ ReqRedir+ CmpltRedir+)
counts:
  description: Checks per status.
  returned: always
  type: dict
nics:
  description: >-
    RDMA device -> PCI address of the devices read (the report places the PCI pairs of C(pcie.acs)
    and the NICs of C(rdma.mlxconfig) on the topology's rails with it); empty in replay mode.
  returned: always
  type: dict
  sample: {"mlx5_0": "0000:45:00.0"}
source:
  description: C(live) or C(replay).
  returned: always
  type: str
"""

import os

from ansible.module_utils.acs_judge import judge_acs
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import (
    Tools,
    check_module,
    mellanox_hcas_on_pci,
    nvidia_gpus_on_pci,
    run_check_module,
)
from ansible.module_utils.gpudirect_host import (
    iommu_mode,
    judge_iommu,
    judge_numa_balancing,
    judge_peermem,
    judge_peermem_log,
    parse_lsmod,
    parse_peermem_log,
)
from ansible.module_utils.lspci import parse_lspci
from ansible.module_utils.mlxconfig import parse_mlxconfig
from ansible.module_utils.mlxconfig_judge import judge_mlxconfig
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, absent, failed_run, result, skipped

# Options that are judge keys (acs_judge.ACS_KEYS, mlxconfig_judge.MLXCONFIG_KEYS, gpudirect_host's tables).
EXPECTATION_OPTIONS = {
    "acs_pairs": "acs_pairs",
    "mlxconfig": "mlxconfig",
    "gpudirect_via": "gpudirect_via",
    "iommu_modes": "iommu_modes",
}
REPLAY_FILES = {
    "lspci": ("lspci.txt",),
    "mlxconfig": ("mlxconfig.txt",),
    "lsmod": ("lsmod.txt",),
    "kernel_log": ("kernel_log.txt",),
    "cmdline": ("cmdline.txt",),
    "numa_balancing": ("numa_balancing.txt",),
}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            acs_pairs=dict(type="dict"),
            mlxconfig=dict(type="dict"),
            gpudirect_via=dict(type="str", choices=["peermem", "dmabuf"]),
            iommu_modes=dict(type="list", elements="str"),
            devices=dict(type="list", elements="str"),
            require_hardware=dict(type="bool", default=False),
            timeout=dict(type="int", default=60),
            sysfs_root=dict(type="path", default="/sys/class/infiniband"),
            pci_root=dict(type="path", default="/sys/bus/pci/devices"),
            cmdline_path=dict(type="path", default="/proc/cmdline"),
            iommu_root=dict(type="path", default="/sys/class/iommu"),
            numa_balancing_path=dict(type="path", default="/proc/sys/kernel/numa_balancing"),
        ),
    )


def expectation(params: dict) -> dict:
    return {key: params[option] for option, key in EXPECTATION_OPTIONS.items() if params[option] is not None}


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _rdma_devices(params: dict) -> dict:
    """{RDMA device: PCI address} of the devices to read (the sysfs device link's name)."""
    root = params["sysfs_root"]
    names = params["devices"] or (sorted(os.listdir(root)) if os.path.isdir(root) else [])
    return {name: os.path.basename(os.path.realpath(os.path.join(root, name, "device"))) for name in names}


def _judged(check: str, tools: Tools, key: str, argv: list, parse, judge) -> object:
    """One tool's output parsed and judged; a missing tool skips, its own failure fails."""
    outcome = tools.run(key, argv)
    if outcome is None:
        return skipped(check, f"skipped: no recording of {key}" if tools.replaying else f"skipped: {argv[0]} not found")
    try:
        return judge(parse(outcome.stdout, source=" ".join(argv)))
    except ToolFailed as exc:
        return failed_run(check, exc, outcome.rc)
    except ParseError as exc:
        return result(check, FAIL, outcome.rc, f"{argv[0]} output", f"{exc} ({outcome.stderr.strip()[:200]})")


def _acs(tools: Tools, expected: dict) -> object:
    if tools.replaying:
        return _judged("pcie.acs", tools, "lspci", ["lspci", "-vvv"], parse_lspci, lambda t: judge_acs(t, expected))
    detail, tree = tools.run("lspci", ["lspci", "-vvv"]), tools.run("lspci", ["lspci", "-tv"])
    if detail is None or tree is None:
        return skipped("pcie.acs", "skipped: lspci not found")
    try:
        # The blocks carry ACS; the tree fills in bridges whose blocks lack a Bus: line.
        return judge_acs(parse_lspci(detail.stdout + "\n" + tree.stdout, source="lspci -vvv; lspci -tv"), expected)
    except ParseError as exc:
        return result("pcie.acs", FAIL, None, "lspci output", str(exc))


def _mlxconfig(tools: Tools, params: dict, expected: dict) -> object:
    if tools.replaying:
        parse, judge = parse_mlxconfig, lambda devices: judge_mlxconfig(devices, expected)
        return _judged("rdma.mlxconfig", tools, "mlxconfig", ["mlxconfig", "q"], parse, judge)
    program = next((name for name in ("mlxconfig", "mstconfig") if tools.find(name)), None)
    if program is None:
        return skipped("rdma.mlxconfig", "skipped: mlxconfig not found (NVIDIA MFT, or mstflint's mstconfig)")
    devices = []
    for name, pci in _rdma_devices(params).items():
        outcome = tools.run("mlxconfig", [program, "-d", pci, "q"])
        if outcome is None:
            return skipped("rdma.mlxconfig", f"skipped: {program} not found")
        try:
            devices += parse_mlxconfig(outcome.stdout, source=f"mlxconfig -d {pci} q ({name})")
        except ToolFailed as exc:
            return failed_run("rdma.mlxconfig", exc, outcome.rc)
        except ParseError as exc:
            return result(
                "rdma.mlxconfig", FAIL, outcome.rc, "mlxconfig output", f"{exc} ({outcome.stderr.strip()[:200]})"
            )
    return judge_mlxconfig(tuple(devices), expected)


def _kernel_log(tools: Tools) -> object:
    outcome = tools.run("kernel_log", ["journalctl", "-k", "-b", "--no-pager"])
    if outcome is None or (outcome.rc != 0 and not tools.replaying):
        outcome = tools.run("kernel_log", ["dmesg"])
    if outcome is None:
        reason = "no recording of kernel_log" if tools.replaying else "neither journalctl nor dmesg found"
        return skipped("gpudirect.peermem_log", f"skipped: {reason}")
    return judge_peermem_log(parse_peermem_log(outcome.stdout), {})


def _host_files(tools: Tools, params: dict, expected: dict) -> list:
    if tools.replaying:
        cmdline = tools.recording("cmdline")
        numa = tools.recording("numa_balancing")
        text = _read(cmdline) if cmdline else None
        iommu = judge_iommu(iommu_mode(text), expected) if text else skipped("gpudirect.iommu", "no recording")
        return [iommu, judge_numa_balancing(_read(numa) if numa else None)]
    text = _read(params["cmdline_path"])
    entries = sorted(os.listdir(params["iommu_root"])) if os.path.isdir(params["iommu_root"]) else []
    iommu = judge_iommu(iommu_mode(text, entries), expected) if text else skipped("gpudirect.iommu", "no cmdline")
    return [iommu, judge_numa_balancing(_read(params["numa_balancing_path"]))]


def run_checks(module) -> tuple:
    params = module.params
    tools = Tools(module, REPLAY_FILES, params["replay_dir"], params["replay"], params["timeout"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "nics": {}}
    expected = expectation(params)
    if tools.replaying and not any(tools.recording(key) for key in REPLAY_FILES):
        return [absent("gpudirect.present", NO_HARDWARE, expected or None, params["require_hardware"])], extra
    if not tools.replaying:
        rdma = os.path.isdir(params["sysfs_root"]) and os.listdir(params["sysfs_root"])
        gpus = nvidia_gpus_on_pci(params["pci_root"])
        if not gpus or not (rdma or mellanox_hcas_on_pci(params["pci_root"])):
            return [absent("gpudirect.present", NO_HARDWARE, expected or None, params["require_hardware"])], extra
    extra["nics"] = _rdma_devices(params)
    results = [_acs(tools, expected), _mlxconfig(tools, params, expected)]
    lsmod = _judged("gpudirect.peermem", tools, "lsmod", ["lsmod"], parse_lsmod, lambda m: judge_peermem(m, expected))
    results += [lsmod, _kernel_log(tools), *_host_files(tools, params, expected)]
    return results, extra


def main():
    run_check_module(build_module(), "gpudirect_check", run_checks)


if __name__ == "__main__":
    main()
