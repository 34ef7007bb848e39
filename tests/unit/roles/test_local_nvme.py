"""local_nvme: which drives the hot tier takes, what it refuses and why, and its input guard.

The drive rules live in plugins/filter/local_nvme.py; the probes they read are shaped as
lsblk --json --tree, findmnt --json --list and wipefs --no-act --json print them (util-linux 2.38+).
"""

from __future__ import annotations

import re

import pytest
import yaml

from tests.paths import PROJECT
from tests.paths import filters as filters_of
from tests.unit.roles.harness import OS_FACTS, vars_file
from tests.unit.roles.harness import render as _render

ROLE = PROJECT / "roles" / "local_nvme"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
FILTERS = filters_of("plugins/filter/local_nvme.py")
drives_of = FILTERS["clusterforge_local_nvme_drives"]
plan_of = FILTERS["clusterforge_local_nvme_plan"]


def _disk(name, tran="nvme", mountpoints=(), children=(), dtype="disk", ro=False):
    return {
        "name": name,
        "path": f"/dev/{name}",
        "type": dtype,
        "tran": tran,
        "mountpoints": list(mountpoints) or [None],
        "ro": ro,
        "children": list(children) or None,
    }


def _part(name, mountpoints=()):
    return {"name": name, "path": f"/dev/{name}", "type": "part", "mountpoints": list(mountpoints) or [None]}


def _md(name, mountpoints=()):
    return {"name": name, "path": f"/dev/{name}", "type": "raid0", "mountpoints": list(mountpoints) or [None]}


def _probe(disks, mounts=(), nodes=None):
    return {
        "lsblk": {"blockdevices": [d for d in disks]},
        "mounts": {"filesystems": [{"target": t, "source": s} for t, s in mounts]},
        "nodes": [d["path"] for d in disks] if nodes is None else nodes,
    }


# A DGX-like node: the OS on nvme0n1 (EFI, /), four data namespaces.
OS_DISK = _disk("nvme0n1", children=[_part("nvme0n1p1", ["/boot/efi"]), _part("nvme0n1p2", ["/"])])
DGX_MOUNTS = [("/", "/dev/nvme0n1p2"), ("/boot/efi", "/dev/nvme0n1p1"), ("/proc", "proc")]
DATA = [_disk(f"nvme{i}n1") for i in range(1, 5)]


def test_auto_takes_the_nvme_data_drives_and_never_the_os_drive():
    result = drives_of(_probe([OS_DISK, *DATA], DGX_MOUNTS), "auto", "/raid")
    assert result["drives"] == [f"/dev/nvme{i}n1" for i in range(1, 5)]
    assert result["refused"] == []
    reason = "holds the OS: /dev/nvme0n1p1 is mounted at /boot/efi"
    assert result["excluded"] == [{"device": "/dev/nvme0n1", "reason": reason}]
    assert result["array"] == ""


def test_the_os_drive_is_found_from_findmnt_when_lsblk_shows_no_mountpoints():
    bare = _disk("nvme0n1", children=[_part("nvme0n1p1"), _part("nvme0n1p2")])
    result = drives_of(_probe([bare, DATA[0]], DGX_MOUNTS), "auto", "/raid")
    assert result["drives"] == ["/dev/nvme1n1"]
    assert "holds the OS" in result["excluded"][0]["reason"]


def test_os_drives_in_an_md_raid1_are_left_out():
    """DGX A100 layout: the OS on md0, RAID1 of partitions on nvme0n1 and nvme1n1."""
    os_md = {"name": "md0", "path": "/dev/md0", "type": "raid1", "mountpoints": ["/"]}
    os_disks = [
        _disk(
            f"nvme{i}n1",
            children=[
                _part(f"nvme{i}n1p1", ["/boot/efi"] if i == 0 else []),
                {**_part(f"nvme{i}n1p2"), "children": [os_md]},
            ],
        )
        for i in (0, 1)
    ]
    data = [_disk(f"nvme{i}n1") for i in (2, 3)]
    result = drives_of(_probe([*os_disks, *data], [("/", "/dev/md0")]), "auto", "/raid")
    assert result["drives"] == ["/dev/nvme2n1", "/dev/nvme3n1"]
    assert [e["device"] for e in result["excluded"]] == ["/dev/nvme0n1", "/dev/nvme1n1"]
    assert all(e["reason"].startswith("holds the OS") for e in result["excluded"])


def test_a_lab_container_has_no_nvme_data_drives():
    """What a lab node sees: the host's virtio disk (bind mounts' source), zram swap, loop devices."""
    disks = [
        _disk("vda", tran="virtio"),
        _disk("zram0", tran=None, mountpoints=["[SWAP]"]),
        _disk("loop6", tran=None, dtype="loop"),
    ]
    mounts = [("/", "overlay"), ("/etc/hosts", "/dev/vda[/var/lib/docker/containers/x/hosts]")]
    result = drives_of(_probe(disks, mounts, nodes=["/dev/loop6"]), "auto", "/raid")
    assert result == {"drives": [], "refused": [], "excluded": [], "array": ""}


def test_auto_leaves_out_an_nvme_drive_without_a_device_node_here():
    """A container sees the host's drives in lsblk (sysfs) but not their /dev nodes."""
    result = drives_of(_probe(DATA[:2], nodes=["/dev/nvme1n1"]), "auto", "/raid")
    assert result["drives"] == ["/dev/nvme1n1"]
    assert result["excluded"] == [{"device": "/dev/nvme2n1", "reason": "no block device node in this system's /dev"}]


def test_auto_leaves_out_mounted_and_read_only_drives():
    mounted = _disk("nvme1n1", mountpoints=["/scratch"])
    result = drives_of(_probe([mounted, _disk("nvme2n1", ro=True), DATA[2]]), "auto", "/raid")
    assert result["drives"] == ["/dev/nvme3n1"]
    assert [e["reason"] for e in result["excluded"]] == ["in use: /dev/nvme1n1 is mounted at /scratch", "read-only"]


@pytest.mark.parametrize(
    ("devices", "reason"),
    [
        (["/dev/nvme0n1"], "holds the OS: /dev/nvme0n1p1 is mounted at /boot/efi"),
        (["/dev/nvme0n1p2"], "not a whole drive (lsblk lists no disk by that path)"),
        (["/dev/sdz"], "not a whole drive (lsblk lists no disk by that path)"),
    ],
    ids=["os-drive", "a-partition", "missing"],
)
def test_named_drives_that_cannot_be_used_are_refused_with_the_reason(devices, reason):
    result = drives_of(_probe([OS_DISK, *DATA], DGX_MOUNTS), devices, "/raid")
    assert result["drives"] == []
    assert result["refused"] == [{"device": devices[0], "reason": reason}]


def test_named_loop_devices_are_taken_as_drives():
    """The Molecule scenario names loop devices (not NVMe) explicitly."""
    loop = _disk("loop6", tran=None, dtype="loop")
    assert drives_of(_probe([loop]), ["/dev/loop6"], "/raid")["drives"] == ["/dev/loop6"]


def test_the_hot_tiers_own_mount_does_not_make_its_drives_in_use():
    single = _disk("nvme1n1", mountpoints=["/raid"])
    assert drives_of(_probe([single], [("/raid", "/dev/nvme1n1")]), "auto", "/raid")["drives"] == ["/dev/nvme1n1"]
    md = _md("md127", ["/raid"])
    members = [_disk(f"nvme{i}n1", children=[md]) for i in (1, 2)]
    result = drives_of(_probe(members, [("/raid", "/dev/md127")]), "auto", "/raid")
    assert result["drives"] == ["/dev/nvme1n1", "/dev/nvme2n1"]
    assert result["array"] == "/dev/md127"


def test_an_array_mounted_elsewhere_is_in_use():
    md = _md("md127", ["/data"])
    members = [_disk(f"nvme{i}n1", children=[md]) for i in (1, 2)]
    result = drives_of(_probe(members, [("/data", "/dev/md127")]), "auto", "/raid")
    assert result["drives"] == []
    assert [e["reason"] for e in result["excluded"]] == ["in use: /dev/md127 is mounted at /data"] * 2


def test_an_array_spanning_drives_outside_the_selection_is_refused():
    md = _md("md127")
    members = [_disk(f"nvme{i}n1", children=[md]) for i in (1, 2, 3)]
    result = drives_of(_probe(members), ["/dev/nvme1n1", "/dev/nvme2n1"], "/raid")
    assert result["drives"] == []
    reason = "member of /dev/md127, which also spans /dev/nvme3n1"
    assert result["refused"][0] == {"device": "/dev/nvme1n1", "reason": reason}


def test_an_active_member_of_another_array_is_refused():
    member = _disk("nvme2n1", children=[_md("md5")])
    result = drives_of(_probe([DATA[0], member]), "auto", "/raid")
    assert result["drives"] == ["/dev/nvme1n1"]
    assert result["refused"] == [{"device": "/dev/nvme2n1", "reason": "active member of md array /dev/md5"}]


def _wipefs(*signatures):
    return {
        "signatures": [
            {"device": device, "offset": "0x438", "type": kind, "uuid": None, "label": label}
            for device, kind, label in signatures
        ]
    }


def _plan(drives, wipefs=None, allow_format=False, fstype="xfs", array=""):
    selected = {"drives": drives, "refused": [], "excluded": [], "array": array}
    return plan_of(selected, wipefs or {}, fstype, "nvme-hot", allow_format, "/dev/md/hot")


def test_a_blank_drive_is_formatted_without_allow_format():
    assert _plan(["/dev/nvme1n1"]) == {
        "target": "/dev/nvme1n1",
        "wipe": [],
        "create_array": False,
        "mkfs": True,
        "refused": [],
    }


def test_the_hot_tiers_own_file_system_is_kept():
    plan = _plan(["/dev/nvme1n1"], _wipefs(("nvme1n1", "xfs", "nvme-hot")))
    assert (plan["mkfs"], plan["wipe"], plan["refused"]) == (False, [], [])


@pytest.mark.parametrize(
    ("signatures", "reason"),
    [
        ([("loop7", "ext4", "job-data")], "has a file system (ext4 labelled job-data)"),
        ([("loop7", "xfs", "other")], "has a file system (xfs labelled other)"),  # right type, not ours
        ([("loop7", "gpt", None), ("loop7", "PMBR", None)], "has a partition table (gpt, PMBR)"),
        ([("loop7", "linux_raid_member", "host:old")], "has a md superblock (linux_raid_member labelled host:old)"),
    ],
    ids=["ext4", "foreign-xfs", "partition-table", "md-superblock"],
)
def test_a_drive_with_data_is_refused_without_allow_format_and_wiped_with_it(signatures, reason):
    plan = _plan(["/dev/loop7"], _wipefs(*signatures))
    assert plan["refused"] == [{"device": "/dev/loop7", "reason": reason}]
    assert (plan["wipe"], plan["mkfs"]) == ([], False)
    plan = _plan(["/dev/loop7"], _wipefs(*signatures), allow_format=True)
    assert (plan["refused"], plan["wipe"], plan["mkfs"]) == ([], ["/dev/loop7"], True)


def test_several_blank_drives_become_a_new_raid0_array():
    plan = _plan(["/dev/nvme1n1", "/dev/nvme2n1"])
    assert plan == {"target": "/dev/md/hot", "wipe": [], "create_array": True, "mkfs": True, "refused": []}


def test_every_drive_with_data_is_named_before_an_array_is_made():
    wipefs = _wipefs(("nvme1n1", "ext4", None), ("nvme3n1", "dos", None))
    plan = _plan(["/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1"], wipefs)
    assert plan["refused"] == [
        {"device": "/dev/nvme1n1", "reason": "has a file system (ext4)"},
        {"device": "/dev/nvme3n1", "reason": "has a partition table (dos)"},
    ]
    plan = _plan(["/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1"], wipefs, allow_format=True)
    assert plan["wipe"] == ["/dev/nvme1n1", "/dev/nvme3n1"]
    assert plan["create_array"] and plan["refused"] == []


def test_an_existing_array_of_exactly_the_drives_is_kept():
    drives = ["/dev/nvme1n1", "/dev/nvme2n1"]
    members = [("nvme1n1", "linux_raid_member", "host:hot"), ("nvme2n1", "linux_raid_member", "host:hot")]
    plan = _plan(drives, _wipefs(*members, ("md127", "xfs", "nvme-hot")), array="/dev/md127")
    assert plan == {"target": "/dev/md127", "wipe": [], "create_array": False, "mkfs": False, "refused": []}
    plan = _plan(drives, _wipefs(*members), array="/dev/md127")  # assembled, no file system yet
    assert (plan["target"], plan["mkfs"], plan["create_array"]) == ("/dev/md127", True, False)


def test_no_drives_plan_nothing():
    assert _plan([]) == {"target": "", "wipe": [], "create_array": False, "mkfs": False, "refused": []}


# --- the input guard, rendered by Ansible's own templating --------------------------------

GUARD = next(task for task in MAIN_TASKS if task["name"] == "Validate the role's inputs")


def _bad_inputs(**overrides):
    variables = {name: DEFAULTS[name] for name in DEFAULTS if not str(DEFAULTS[name]).startswith("{{")}
    variables |= overrides
    guard_vars = GUARD["vars"]
    rules = _render(guard_vars["__local_nvme_rules"], **variables)
    return _render(guard_vars["__local_nvme_bad_inputs"], __local_nvme_rules=rules, **variables) or ""


def test_the_defaults_pass_the_input_guard():
    assert _bad_inputs() == ""
    assert _bad_inputs(local_nvme_devices=["/dev/nvme1n1", "/dev/nvme2n1"], local_nvme_fstype="ext4") == ""


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("local_nvme_devices", []),
        ("local_nvme_devices", "/dev/nvme1n1"),
        ("local_nvme_devices", ["nvme1n1"]),
        ("local_nvme_devices", ["/dev/nvme1n1; rm -rf /"]),
        ("local_nvme_fstype", "btrfs"),
        ("local_nvme_label", "a-label-too-long"),
        ("local_nvme_mount_path", "/"),
        ("local_nvme_mount_path", "/var"),
        ("local_nvme_mount_path", "raid"),
        ("local_nvme_mount_path", "/raid/../etc"),
        ("local_nvme_md_name", "hot tier"),
        ("local_nvme_raid_chunk_kib", 500),
        ("local_nvme_mode", "rwx"),
        ("local_nvme_allow_format", "yes please"),
    ],
)
def test_the_input_guard_names_the_variable_and_its_value(variable, value):
    message = _bad_inputs(**{variable: value})
    assert message.startswith(f'{variable} is\n"{value}"') or message.startswith(f'{variable} is "{value}"'), message
    assert "expected" in message


@pytest.mark.parametrize("os_id", sorted(OS_FACTS))
def test_the_mdadm_configuration_and_initramfs_command_per_os(os_id):
    facts = OS_FACTS[os_id]
    os_vars = yaml.safe_load(vars_file(ROLE, facts).read_text())
    conf = _render(DEFAULTS["local_nvme_mdadm_conf"], **os_vars)
    command = _render(DEFAULTS["local_nvme_initramfs_command"], **os_vars)
    if facts["os_family"] == "Debian":
        assert (conf, command) == ("/etc/mdadm/mdadm.conf", ["update-initramfs", "-u"])
    else:
        assert (conf, command) == ("/etc/mdadm.conf", ["dracut", "--force"])


# --- the commands the role runs, rendered from tasks/hot_tier.yml ---------------------------

HOT_TIER = {task["name"]: task for task in yaml.safe_load((ROLE / "tasks" / "hot_tier.yml").read_text())}
RECORD = {task["name"]: task for task in HOT_TIER["Record the array in the mdadm configuration"]["block"]}
SETTINGS = {name: value for name, value in DEFAULTS.items() if not str(value).startswith("{{")}


def test_the_raid0_array_is_created_with_its_name_chunk_and_every_drive():
    drives = {"drives": ["/dev/nvme1n1", "/dev/nvme2n1"], "refused": [], "excluded": [], "array": ""}
    plan = plan_of(drives, {}, "xfs", "nvme-hot", False, "/dev/md/hot")
    argv = _render(
        HOT_TIER["Create the md RAID0 array"]["ansible.builtin.command"]["argv"],
        __local_nvme_plan=plan,
        __local_nvme_drives=drives,
        **SETTINGS,
    )
    assert argv == [
        "mdadm", "--create", "/dev/md/hot", "--run", "--level=0", "--metadata=1.2", "--name=hot",
        "--chunk=512", "--raid-devices=2", "/dev/nvme1n1", "/dev/nvme2n1",
    ]  # fmt: skip


def test_mkfs_labels_the_file_system_and_passes_the_extra_options():
    plan = {"target": "/dev/md/hot"}
    argv = HOT_TIER["Make the file system"]["ansible.builtin.command"]["argv"]
    variables = SETTINGS | {"local_nvme_fstype": "ext4", "local_nvme_mkfs_options": ["-m", "0"]}
    assert _render(argv, __local_nvme_plan=plan, **variables) == [
        "mkfs.ext4",
        "-L",
        "nvme-hot",
        "-m",
        "0",
        "/dev/md/hot",
    ]


@pytest.mark.parametrize(
    ("line", "replaced"),
    [
        ("ARRAY /dev/md/hot metadata=1.2 UUID=3d6e1e4a:1f2b7c9d:aa55aa55:0f0f0f0f name=gpu-node-07:hot", True),
        ("ARRAY /dev/md127 metadata=1.2 name=gpu-node-07:hot UUID=3d6e1e4a:1f2b7c9d:aa55aa55:0f0f0f0f", True),
        ("ARRAY /dev/md/hotter metadata=1.2 UUID=3d6e1e4a:1f2b7c9d:aa55aa55:0f0f0f0f name=gpu-node-07:hotter", False),
        ("ARRAY /dev/md0 metadata=1.2 UUID=11111111:22222222:33333333:44444444 name=gpu-node-07:0", False),
    ],
    ids=["own-by-name", "own-other-path", "another-array", "the-os-array"],
)
def test_the_mdadm_configuration_line_replaces_only_the_hot_tiers_own(line, replaced):

    pattern = _render(
        RECORD["Write the array's line in the mdadm configuration"]["ansible.builtin.lineinfile"]["regexp"], **SETTINGS
    )
    assert bool(re.search(pattern, line)) is replaced
