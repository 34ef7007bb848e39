#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: roce_qos
short_description: Set a RoCE netdev's lossless settings (DSCP trust, PFC on one priority, ECN, MTU)
description:
  - "Per interface: trust DSCP and PFC on the one lossless priority through NVIDIA's C(mlnx_qos)
    where it is installed (its C(mlnx_qos -i <netdev>) listing is the current state), else through
    the upstream kernel's DCB interface with iproute2's C(dcb) (C(dcb pfc show), C(dcb app show)
    dscp-prio: the DSCP entry is what makes upstream mlx5 trust DSCP); ECN on that priority
    (MLNX_OFED's C(ecn/roce_np|roce_rp/enable/<priority>)) and the MTU through sysfs."
  - "Changes only what differs, so a second run changes nothing; check mode reports the changes and
    makes none. Without either tool, trust and PFC are left as they are and each interface's
    C(unset) says so; absent ECN files likewise."
  - "An interface whose netdev does not exist, or whose driver has no DCB support (dcb: Operation
    not supported), is C(skipped: no hardware) (a missing netdev fails with O(require_hardware))."
  - Nothing here persists across a reboot by itself; RETURN C(commands) is the full set a boot script runs.
options:
  interfaces:
    description: "The netdevs and their settings: C({netdev, priority, dscp, ecn, mtu})."
    type: list
    elements: dict
    required: true
  mlnx_qos:
    description: The mlnx_qos program (a name searched in PATH, or a path).
    type: str
    default: mlnx_qos
  dcb:
    description: iproute2's dcb program (a name searched in PATH, or a path), used where mlnx_qos is not found.
    type: str
    default: dcb
  sysfs_root:
    description: The network class directory.
    type: path
    default: /sys/class/net
  require_hardware:
    description: Fail, instead of skipping, when a netdev does not exist.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Lossless RoCE on the rail netdevs
  roce_qos:
    interfaces:
      - {netdev: ens1f0np0, priority: 3, dscp: 26, ecn: true, mtu: 9000}
"""

RETURN = r"""
interfaces:
  description: >-
    Per netdev: status (changed, unchanged or skipped), via (the tool for trust and PFC), changes,
    and unset (what could not be set here, and why; C(skipped: no hardware: ...) where the netdev's
    driver has no DCB support).
  returned: always
  type: dict
commands:
  description: "Per netdev, the full command set: the mlnx_qos or dcb argvs and C([write, path, value]) per sysfs file."
  returned: always
  type: dict
via:
  description: C(mlnx_qos) (its path), else C(dcb) (its path), or C(sysfs) (neither found).
  returned: always
  type: str
sysfs_root:
  description: The network class directory the commands write under (O(sysfs_root)).
  returned: always
  type: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.roce_dcb import (
    NO_DCB,
    DcbParseError,
    dcb_argvs,
    dcb_changes,
    parse_app_dscp,
    parse_pfc,
    read_argvs,
)
from ansible.module_utils.roce_qos import (
    MlnxQosParseError,
    commands,
    mlnx_qos_argv,
    parse_mlnx_qos,
    qos_changes,
    sysfs_changes,
)

C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
FIELDS = {"netdev": str, "priority": int, "dscp": int, "ecn": bool, "mtu": int}
RANGES = {"priority": (0, 7), "dscp": (0, 63), "mtu": (1500, 9216)}


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="dict", required=True),
            mlnx_qos=dict(type="str", default="mlnx_qos"),
            dcb=dict(type="str", default="dcb"),
            sysfs_root=dict(type="path", default="/sys/class/net"),
            require_hardware=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )


def checked(module, index: int, interface: dict) -> dict:
    """The interface's settings, or fail_json naming the entry, the field and what was expected."""
    found = {}
    for name, kind in FIELDS.items():
        value = interface.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            module.fail_json(msg=f"interfaces[{index}].{name}: expected {kind.__name__}, got {value!r}")
        low, high = RANGES.get(name, (None, None))
        if low is not None and not low <= value <= high:
            module.fail_json(msg=f"interfaces[{index}].{name}: expected {low} to {high}, got {value}")
        found[name] = value
    # The name becomes a sysfs path and a shell word of the boot script: a netdev name, nothing else.
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,14}", found["netdev"]):
        module.fail_json(msg=f"interfaces[{index}].netdev: expected a network interface name, got {found['netdev']!r}")
    return found


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _write(module, path: str, value: str) -> None:
    try:
        with open(path, "w", encoding="ascii") as handle:
            handle.write(value)
    except OSError as exc:
        module.fail_json(msg=f"writing {value} to {path} failed: {exc}")


def _run(module, argv: list) -> str:
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    if rc != 0:
        module.fail_json(msg=f"{' '.join(argv)} exited {rc}", rc=rc, stdout=out, stderr=err)
    return out


def _with_dcb(module, interface: dict, program: str) -> tuple:
    """(changes, unset) of trust and PFC through dcb: read both, change only what differs."""
    netdev, reads = interface["netdev"], read_argvs(program, interface["netdev"])
    rc, out, err = module.run_command(reads["pfc"], environ_update=C_LOCALE)
    if rc != 0 and NO_DCB in err:
        # The driver has no DCB operations (a veth, a virtio NIC): no RoCE NIC to set, not a failure.
        said = f"{' '.join(reads['pfc'])}: {err.strip().splitlines()[0]}"
        return [], [f"trust and PFC: skipped: no hardware: {netdev} has no DCB support ({said})"]
    if rc != 0:
        module.fail_json(msg=f"{' '.join(reads['pfc'])} exited {rc}", rc=rc, stdout=out, stderr=err)
    try:
        pfc = parse_pfc(out, source=" ".join(reads["pfc"]))
        app = parse_app_dscp(_run(module, reads["app"]), source=" ".join(reads["app"]))
    except DcbParseError as exc:
        module.fail_json(msg=str(exc))
    todo = dcb_changes(pfc, app, interface)
    if todo and not module.check_mode:
        argvs = dcb_argvs(program, interface)
        for index in sorted({index for _, index in todo}):
            _run(module, argvs[index])
    return [change for change, _ in todo], []


def configure(module, interface: dict, program: str | None, dcb: str | None) -> dict:
    root, netdev = module.params["sysfs_root"], interface["netdev"]
    unset, changes = [], []
    if program:
        try:
            current = parse_mlnx_qos(_run(module, [program, "-i", netdev]), source=f"mlnx_qos -i {netdev}")
        except MlnxQosParseError as exc:
            module.fail_json(msg=str(exc))
        changes += qos_changes(current, interface)
        if changes and not module.check_mode:
            _run(module, mlnx_qos_argv(program, interface))
    elif dcb:
        changes, unset = _with_dcb(module, interface, dcb)
    else:
        unset.append("trust and PFC: neither mlnx_qos nor dcb (iproute2) found")
    writes, absent = sysfs_changes(_read, root, interface)
    unset += [f"{path}: not in sysfs (not an MLNX_OFED/DOCA driver)" for path in absent]
    for path, value in writes.items():
        changes.append(f"{path} -> {value}")
        if not module.check_mode:
            _write(module, path, value)
    no_hardware = any("skipped: no hardware" in reason for reason in unset)
    status = "changed" if changes else "skipped" if no_hardware else "unchanged"
    return {"status": status, "via": program or dcb or "sysfs", "changes": changes, "unset": unset}


def _program(name: str, module) -> str | None:
    """A path that must be executable, or a name searched in PATH; None where it is not there."""
    return (name if os.access(name, os.X_OK) else None) if os.path.isabs(name) else module.get_bin_path(name)


def main() -> None:
    module = build_module()
    params = module.params
    interfaces = [checked(module, index, dict(item)) for index, item in enumerate(params["interfaces"])]
    program = _program(params["mlnx_qos"], module)
    # dcb only where mlnx_qos is not there: both drive the same DCB settings, mlnx_qos with more of them.
    dcb = None if program else _program(params["dcb"], module)
    results, scripts = {}, {}
    for interface in interfaces:
        netdev = interface["netdev"]
        scripts[netdev] = commands(interface, program, params["sysfs_root"], dcb)
        if not os.path.isdir(os.path.join(params["sysfs_root"], netdev)):
            if params["require_hardware"]:
                module.fail_json(msg=f"{netdev}: no such netdev in {params['sysfs_root']}")
            results[netdev] = {"status": "skipped", "changes": [], "unset": [], "msg": "skipped: no hardware"}
            continue
        results[netdev] = configure(module, interface, program, dcb)
    changed = any(result["status"] == "changed" for result in results.values())
    module.exit_json(
        changed=changed,
        interfaces=results,
        commands=scripts,
        via=program or dcb or "sysfs",
        sysfs_root=params["sysfs_root"],
    )


if __name__ == "__main__":
    main()
