"""local_nvme on two nodes (molecule/local_nvme/molecule.yml): on local-nvme-format the drive the inputs
name is formatted with the inputs' file system (the old ext4 wiped), labelled nvme-hot, mounted at /raid
by UUID from fstab with the inputs' group and mode; on local-nvme-refuse (auto, no NVMe) nothing is
mounted or written."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def formatted(node):
    return node("local-nvme-format")


def test_the_drive_is_mounted_at_raid_with_the_input_file_system(formatted):
    host, inputs = formatted
    mount = json.loads(host.check_output("findmnt --json --output SOURCE,FSTYPE,OPTIONS /raid"))["filesystems"][0]
    assert mount["source"] == inputs["local_nvme_devices"][0]
    assert mount["fstype"] == inputs["local_nvme_fstype"]
    assert "noatime" in mount["options"].split(",")


def test_the_drive_holds_one_labelled_file_system_mounted_by_uuid_from_fstab(formatted):
    host, inputs = formatted
    probe = host.check_output(f"blkid --probe --output export {inputs['local_nvme_devices'][0]}")
    fs = dict(line.split("=", 1) for line in probe.splitlines())
    assert fs["TYPE"] == inputs["local_nvme_fstype"]
    assert fs["LABEL"] == "nvme-hot"
    assert "old-scratch" not in probe  # prepare's ext4 was wiped: one signature left
    fstab = host.file("/etc/fstab").content_string
    assert f"UUID={fs['UUID']} /raid {fs['TYPE']} defaults,noatime,nofail" in fstab


def test_the_mount_s_root_has_the_input_group_and_mode(formatted):
    host, inputs = formatted
    raid = host.file("/raid")
    assert raid.user == "root"
    assert raid.group == inputs["local_nvme_group"]
    assert raid.mode == int(inputs["local_nvme_mode"], 8)


def test_converge_left_no_mount_and_no_fstab_entry_without_nvme(node):
    host, _ = node("local-nvme-refuse")
    assert not host.mount_point("/raid").exists
    assert not any(" /raid " in line for line in host.file("/etc/fstab").content_string.splitlines())
    assert not host.file("/raid").exists
