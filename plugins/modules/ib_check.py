#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: ib_check
short_description: Check a node's InfiniBand/RoCE HCAs against the expected devices and rates
description:
  - Reads the RDMA sysfs tree (C(/sys/class/infiniband), no tool needed, error counters included)
    or the output of C(ibstat) or C(ibv_devinfo -v), and judges per expected HCA port presence,
    state (Active), physical state (LinkUp), rate, link layer, firmware (one version, or the
    pinned one) and error counters.
  - Read-only; changes nothing, so it runs the same in check mode.
  - "Absent hardware is C(skipped: no hardware), a missing tool C(skipped: ibstat not found), never
    C(pass). The module fails the host only when a check is C(fail)."
  - "Replay mode: with O(replay_dir) or O(replay) the module reads recordings instead: a directory
    C(infiniband) (a copy of C(/sys/class/infiniband)), else C(ibstat.txt), else
    C(ibv_devinfo.txt). Without any of them the node has no hardware."
extends_documentation_fragment:
  - node_check
options:
  expected_hcas:
    description:
      - "HCAs that must be present, as C({device: rate in Gb/s}) (C(clusterforge_expected_hca_rates))
        or C({device: {rate: Gb/s, link_layer: InfiniBand}}). Only these are judged; a device
        written C(mlx4_0/1) means that port only."
    type: dict
    default: {}
  link_layers:
    description: "Expected link layer per device, C({mlx5_0: infiniband}); either spelling case."
    type: dict
    default: {}
  link_layer:
    description:
      - Without O(expected_hcas), judge only the ports of this link layer.
      - With it, the link layer of the expected devices that O(expected_hcas) and O(link_layers) give none.
    type: str
  firmware:
    description: Pinned firmware version every judged HCA must run.
    type: str
  counter_limits:
    description: "C({counter: maximum}) above which a port fails; any nonzero error counter warns."
    type: dict
    default: {}
  source:
    description: Where port data comes from; C(auto) reads sysfs.
    type: str
    choices: [auto, sysfs, ibstat, ibv_devinfo]
    default: auto
  timeout:
    description: Seconds ibstat or ibv_devinfo may run (through C(timeout) when present); 0 for no limit.
    type: int
    default: 60
  sysfs_root:
    description: The RDMA sysfs tree (for tests).
    type: path
    default: /sys/class/infiniband
  pci_root:
    description: PCI device tree probed for Mellanox/NVIDIA network functions.
    type: path
    default: /sys/bus/pci/devices
  require_hardware:
    description: Fail, instead of skip, when HCAs are expected and the node has no RDMA device.
    type: bool
    default: false
  replay_dir:
    description: Read recorded outputs from this directory on the node instead of sysfs and tools.
    type: path
  replay:
    description: 'Recording per source, C({sysfs: dir, ibstat: file, "ibv_devinfo -v": file}).'
    type: dict
    default: {}
seealso:
  - module: gpu_check
  - module: cabling_check
"""

EXAMPLES = r"""
- name: Check the eight NDR rails of a DGX H100
  ib_check:
    expected_hcas: "{{ clusterforge_expected_hca_rates }}"
    link_layers: {mlx5_0: infiniband}
"""

RETURN = r"""
status:
  description: Overall verdict; C(skipped) when every check was skipped.
  returned: always
  type: str
checks:
  description: "One entry per check: check, status, measured, expected, message (see gpu_check)."
  returned: always
  type: list
  elements: dict
  sample:
    - check: ib.rate
      status: fail
      measured: {"mlx5_0/1": 200.0}
      expected: {mlx5_0: 400}
      message: "mlx5_0/1: 200 Gb/s below 400"
counts:
  description: Checks per status.
  returned: always
  type: dict
ports:
  description: Every port read, judged or not.
  returned: always
  type: list
  elements: dict
  sample: [{device: mlx5_0, port: 1, state: ACTIVE, phys_state: LinkUp, rate: 400.0, link_layer: InfiniBand}]
source:
  description: C(sysfs), C(ibstat), C(ibv_devinfo) or C(replay:<that>).
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, first_line, mellanox_hcas_on_pci, run_check_module
from ansible.module_utils.ib_judge import judge_ib_ports, ports_from_ibstat, ports_from_ibv_devinfo, ports_from_sysfs
from ansible.module_utils.ib_sysfs import read_ib_sysfs
from ansible.module_utils.ibstat import parse_ibstat
from ansible.module_utils.ibv_devinfo import parse_ibv_devinfo
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, absent, failed_run, result

SYSFS = "sysfs"
IBSTAT = "ibstat"
IBV_DEVINFO = "ibv_devinfo -v"
REPLAY_FILES = {SYSFS: ("infiniband",), IBSTAT: ("ibstat.txt",), IBV_DEVINFO: ("ibv_devinfo.txt",)}


# Options that are ib_judge.SYSFS_PORT_KEYS as they are, by the key they give; expected_hcas and
# link_layers give devices, rate and link_layer per device (expectation()).
EXPECTATION_OPTIONS = {"link_layer": "link_layer", "firmware": "firmware", "counter_limits": "counter_limits"}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            expected_hcas=dict(type="dict", default={}),
            link_layers=dict(type="dict", default={}),
            link_layer=dict(type="str"),
            firmware=dict(type="str"),
            counter_limits=dict(type="dict", default={}),
            source=dict(type="str", default="auto", choices=["auto", "sysfs", "ibstat", "ibv_devinfo"]),
            timeout=dict(type="int", default=60),
            sysfs_root=dict(type="path", default="/sys/class/infiniband"),
            pci_root=dict(type="path", default="/sys/bus/pci/devices"),
            require_hardware=dict(type="bool", default=False),
        ),
    )


def expectation(params: dict) -> dict:
    """The ib_judge expectation from the module's options: the expected HCAs with a rate and link
    layer per device (an O(expected_hcas) entry, else O(link_layers), else O(link_layer))."""
    rates, layers = {}, {}
    for device, want in (params["expected_hcas"] or {}).items():
        if isinstance(want, dict):
            rates[device] = want.get("rate", want.get("rate_gbps"))
            layers[device] = want.get("link_layer")
        else:
            rates[device] = want
        if layers.get(device) is None:
            layers[device] = (params["link_layers"] or {}).get(device, params["link_layer"])
    expected = {
        "devices": sorted(rates),
        "rate": {device: rate for device, rate in rates.items() if rate not in (None, "")},
        "link_layer": layers or params["link_layer"],
        "firmware": params["firmware"],
        "counter_limits": params["counter_limits"] or {},
    }
    return {key: value for key, value in expected.items() if value}


def read_ports(module, tools: Tools) -> tuple:
    """(ports, source name, failed command outcome or None); ports None (and the skip reason as
    source) when there is nothing to read."""
    params = module.params
    source = params["source"]
    if tools.replaying:
        tree = tools.recorded_dir(SYSFS)
        if tree is not None and source in ("auto", "sysfs"):
            return ports_from_sysfs(read_ib_sysfs(tree)), "replay:sysfs", None
        for key, name, parse, convert in (
            (IBSTAT, "ibstat", parse_ibstat, ports_from_ibstat),
            (IBV_DEVINFO, "ibv_devinfo", parse_ibv_devinfo, ports_from_ibv_devinfo),
        ):
            if source in ("auto", name):
                outcome = tools.run(key, [name])
                if outcome is not None:
                    return convert(parse(outcome.stdout, source=outcome.source)), "replay:" + name, None
        return None, NO_HARDWARE, None
    devices = read_ib_sysfs(params["sysfs_root"]) if os.path.isdir(params["sysfs_root"]) else ()
    if not devices:
        if mellanox_hcas_on_pci(params["pci_root"]):
            return (), "sysfs", None  # HCAs on the bus but no RDMA device: the driver is not loaded
        return None, NO_HARDWARE, None
    if source in ("auto", "sysfs"):
        return ports_from_sysfs(devices), "sysfs", None
    argv = ["ibstat"] if source == "ibstat" else ["ibv_devinfo", "-v"]
    outcome = tools.run(IBSTAT if source == "ibstat" else IBV_DEVINFO, argv)
    if outcome is None:
        return None, f"skipped: {argv[0]} not found", None
    parse, convert = (
        (parse_ibstat, ports_from_ibstat) if source == "ibstat" else (parse_ibv_devinfo, ports_from_ibv_devinfo)
    )
    # ibstat exits 255 with an ibpanic line when a device vanishes while it lists them: an error.
    failed = outcome if outcome.rc != 0 else None
    return convert(parse(outcome.stdout, source=" ".join(outcome.argv))), source, failed


def run_checks(module) -> tuple:
    params = module.params
    tools = Tools(module, REPLAY_FILES, params["replay_dir"], params["replay"], params["timeout"])
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "ports": []}
    expected = expectation(params)
    try:
        ports, source, failed = read_ports(module, tools)
    except ToolFailed as exc:
        return [failed_run("ib.command", exc)], extra
    except ParseError as exc:
        return [result("ib.output", FAIL, None, "port listing", str(exc))], extra
    if ports is None:
        return [absent("ib.present", source, expected.get("devices"), params["require_hardware"])], extra
    extra["source"] = source
    extra["ports"] = [
        {
            "device": p.device,
            "port": p.port,
            "state": p.state,
            "phys_state": p.phys_state,
            "rate": p.rate,
            "link_layer": p.link_layer,
            "firmware": p.firmware,
        }
        for p in ports
    ]
    results = judge_ib_ports(ports, expected)
    if failed is not None:
        message = f"{' '.join(failed.argv)} exited {failed.rc}: {first_line(failed.stderr, failed.stdout)}"
        results.append(result("ib.command", FAIL, failed.rc, 0, message))
        extra.update(rc=failed.rc, stdout=failed.stdout, stderr=failed.stderr)
    return results, extra


def main():
    run_check_module(build_module(), "ib_check", run_checks)


if __name__ == "__main__":
    main()
