# Copyright: clusterforge contributors
# Apache License 2.0
"""Which drives the local NVMe hot tier may use, and what it must do to them.

roles/local_nvme decides everything here, from read-only probes (lsblk, findmnt, the /dev
block nodes, wipefs --no-act), so the rules that keep the OS drive and data drives safe are
plain Python, unit-tested in tests/unit/roles/test_local_nvme.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_local_nvme_drives
short_description: The drives the local NVMe hot tier may use, from one read-only probe
description:
  - "Input: a mapping with C(lsblk) (C(lsblk --json -b) in tree form with NAME, PATH, TYPE, TRAN,
    MOUNTPOINTS, RO), C(mounts) (C(findmnt --json --list -o TARGET,SOURCE)) and C(nodes) (the
    block device nodes under /dev)."
  - "C(devices) is C(auto) (NVMe namespaces: TRAN nvme or a name nvmeXnY) or a list of paths."
  - "A drive holding any mounted file system or swap (the OS drive, a bind mount's source) other
    than the hot tier's own mount is never used: with C(auto) it is left out, named explicitly it
    is refused with the reason."
  - "Returns drives (paths), refused (device, reason), excluded (device, reason) and array (the
    md device all drives are members of, or an empty string)."
positional: _input
options:
  _input:
    type: dict
    required: true
  devices:
    type: raw
    required: true
  mount_path:
    type: str
    required: true
"""

_NVME_NAME = re.compile(r"^nvme[0-9]+n[0-9]+$")
_OS_MOUNTS = {"/", "/boot", "/boot/efi", "/usr", "/var", "[SWAP]"}


def _mountpoints(node):
    return [m for m in node.get("mountpoints") or [] if m]


def _subtree(node):
    yield node
    for child in node.get("children") or []:
        yield from _subtree(child)


def _source_device(source):
    """/dev/vda1[/var/lib/docker/...] (a bind mount's source) -> /dev/vda1."""
    return (source or "").split("[", 1)[0]


def _in_use(disk, mount_sources, mount_path):
    """Why the drive is in use (a string), or '' when nothing on it is mounted but the hot tier."""
    for node in _subtree(disk):
        path = node.get("path")
        targets = {m for m in _mountpoints(node) if m != mount_path}
        targets |= {t for t in mount_sources.get(path, ()) if t != mount_path}
        if targets:
            what = "holds the OS" if targets & _OS_MOUNTS else "in use"
            return f"{what}: {path} is mounted at {', '.join(sorted(targets))}"
    return ""


def _unusable(disk: dict, path: str, mount_sources: dict, mount_path: str, nodes: set) -> str:
    """Why a drive cannot be used (in use, not in this system's /dev, read-only), or ""."""
    reason = _in_use(disk, mount_sources, mount_path)
    if not reason and path not in nodes:
        reason = "no block device node in this system's /dev"
    if not reason and disk.get("ro"):
        reason = "read-only"
    return reason


def _arrays(disk):
    return [c.get("path") for c in disk.get("children") or [] if (c.get("type") or "").startswith("raid")]


def local_nvme_drives(probe, devices, mount_path):
    if not isinstance(probe, Mapping) or "lsblk" not in probe:
        raise AnsibleFilterError("clusterforge_local_nvme_drives: expected the probe mapping with lsblk")
    disks = list((probe.get("lsblk") or {}).get("blockdevices") or [])
    mount_sources = {}
    for mount in (probe.get("mounts") or {}).get("filesystems") or []:
        source = _source_device(mount.get("source"))
        if source.startswith("/dev/"):
            mount_sources.setdefault(source, set()).add(mount.get("target"))
    nodes = set(probe.get("nodes") or [])
    by_path = {d.get("path"): d for d in disks}
    drives, refused, excluded = [], [], []

    # auto: NVMe namespaces, an unusable one merely left out; named drives: an unusable one refused.
    if devices == "auto":
        candidates = [
            (disk.get("path"), disk)
            for disk in disks
            if disk.get("type") == "disk"
            and (disk.get("tran") == "nvme" or bool(_NVME_NAME.match(disk.get("name") or "")))
        ]
        set_aside = excluded
    else:
        if isinstance(devices, str) or not isinstance(devices, list):
            raise AnsibleFilterError(
                f"clusterforge_local_nvme_drives: devices is {devices!r}, expected 'auto' or a list of paths"
            )
        candidates = [(path, by_path.get(path)) for path in devices]
        set_aside = refused
    for path, disk in candidates:
        if disk is None or disk.get("type") not in ("disk", "loop"):
            reason = "not a whole drive (lsblk lists no disk by that path)"
        else:
            reason = _unusable(disk, path, mount_sources, mount_path, nodes)
        if reason:
            set_aside.append({"device": path, "reason": reason})
        else:
            drives.append(path)

    array = ""
    if len(drives) > 1:
        member_of = {path: _arrays(by_path[path]) for path in drives}
        first = member_of[drives[0]]
        if len(first) == 1 and all(member_of[p] == first for p in drives):
            # Members outside the selection would be lost with it: refuse rather than adopt.
            others = [d.get("path") for d in disks if d.get("path") not in drives and _arrays(d) == first]
            if others:
                reason = f"member of {first[0]}, which also spans {', '.join(others)}"
                refused.extend({"device": path, "reason": reason} for path in drives)
                drives = []
            else:
                array = first[0]
    for path in list(drives):
        arrays = _arrays(by_path[path])
        if arrays and arrays != ([array] if array else []):
            refused.append({"device": path, "reason": f"active member of md array {', '.join(arrays)}"})
            drives.remove(path)
    return {"drives": drives, "refused": refused, "excluded": excluded, "array": array}


def _signatures(wipefs):
    """wipefs --no-act --json output (parsed, or '' for none) -> {device path: [signature, ...]}."""
    found = {}
    for signature in (wipefs or {}).get("signatures") or []:
        device = signature.get("device") or ""
        if not device.startswith("/"):
            device = "/dev/" + device
        found.setdefault(device, []).append(signature)
    return found


def _describe(signatures):
    parts = []
    for s in signatures:
        text = s.get("type") or "unknown signature"
        if s.get("label"):
            text += f" labelled {s['label']}"
        parts.append(text)
    kinds = sorted({_kind(s.get("type")) for s in signatures})
    return f"has a {' and a '.join(kinds)} ({', '.join(parts)})"


def _kind(sig_type):
    if sig_type in ("gpt", "dos", "PMBR", "atari", "sun", "sgi", "bsd", "mac"):
        return "partition table"
    if sig_type in ("linux_raid_member", "ddf_raid_member", "isw_raid_member"):
        return "md superblock"
    return "file system"


def _ours(signatures, fstype, label):
    """The hot tier's own file system: exactly one signature, the configured type and label."""
    return len(signatures) == 1 and signatures[0].get("type") == fstype and signatures[0].get("label") == label


def local_nvme_plan(drives, wipefs, fstype, label, allow_format, md_device):
    """What to do: target, wipe (paths), create_array, mkfs, refused (device, reason)."""
    if not isinstance(drives, Mapping):
        raise AnsibleFilterError("clusterforge_local_nvme_plan: expected clusterforge_local_nvme_drives' result")
    paths = list(drives.get("drives") or [])
    found = _signatures(wipefs)
    refused, wipe = [], []
    plan = {"target": "", "wipe": wipe, "create_array": False, "mkfs": False, "refused": refused}
    if not paths:
        return plan
    array = drives.get("array") or ""
    if len(paths) == 1 or array:
        target = paths[0] if len(paths) == 1 else array
        signatures = found.get(target, [])
        plan["target"] = target
        if not signatures:
            plan["mkfs"] = True
        elif not _ours(signatures, fstype, label):
            if allow_format:
                wipe.append(target)
                plan["mkfs"] = True
            else:
                refused.append({"device": target, "reason": _describe(signatures)})
        return plan
    plan["target"] = md_device
    plan["create_array"] = True
    plan["mkfs"] = True
    for path in paths:
        signatures = found.get(path, [])
        if not signatures:
            continue
        if allow_format:
            wipe.append(path)
        else:
            refused.append({"device": path, "reason": _describe(signatures)})
    return plan


class FilterModule:
    def filters(self):
        return {
            "clusterforge_local_nvme_drives": local_nvme_drives,
            "clusterforge_local_nvme_plan": local_nvme_plan,
        }
