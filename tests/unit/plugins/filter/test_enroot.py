"""The enroot role's decisions (plugins/filter/enroot.py): kernel prerequisites, where images go,
which hardware hooks a node gets."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from tests.paths import filters as filters_of

FILTERS = filters_of("plugins/filter/enroot.py")
kernel_problems = FILTERS["clusterforge_enroot_kernel_problems"]
storage = FILTERS["clusterforge_enroot_storage"]
hooks = FILTERS["clusterforge_enroot_hooks"]

# /proc/filesystems of this project's build machine (Linux 6.18, in a container), its first lines and
# the overlay line: "nodev" and a tab before a file system the kernel mounts without a device.
HOST_FILESYSTEMS = "nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\tcgroup\nnodev\tcgroup2\n\text4\nnodev\toverlay\n"
WITHOUT_OVERLAY = "".join(line for line in HOST_FILESYSTEMS.splitlines(keepends=True) if "overlay" not in line)


def test_a_kernel_with_user_namespaces_and_overlay_has_no_problem():
    assert kernel_problems(HOST_FILESYSTEMS, "96369\n", "") == []
    assert kernel_problems(HOST_FILESYSTEMS, "15000\n", "1\n") == []


@pytest.mark.parametrize(
    ("filesystems", "max_userns", "clone", "expected"),
    [
        (HOST_FILESYSTEMS, "0\n", "", ["/proc/sys/user/max_user_namespaces is 0: user namespaces are disabled"]),
        (HOST_FILESYSTEMS, "15000\n", "0\n", ["/proc/sys/kernel/unprivileged_userns_clone is 0"]),
        (WITHOUT_OVERLAY, "15000\n", "", ["/proc/filesystems lists no overlay"]),
        (WITHOUT_OVERLAY, "0\n", "0\n", ["max_user_namespaces is 0", "unprivileged_userns_clone is 0", "no overlay"]),
        (HOST_FILESYSTEMS, "", "", ['/proc/sys/user/max_user_namespaces is "", expected a number']),
    ],
)
def test_each_missing_prerequisite_is_named_with_its_setting(filesystems, max_userns, clone, expected):
    problems = kernel_problems(filesystems, max_userns, clone)
    assert len(problems) == len(expected)
    for problem, start in zip(problems, expected, strict=True):
        assert start in problem


def test_overlayfs_of_fuse_is_not_the_kernel_overlay():
    assert kernel_problems("nodev\tfuse\nnodev\tfuse.fuse-overlayfs\n", "1", "") == [
        "/proc/filesystems lists no overlay: load the overlay module (modprobe overlay)"
    ]


MOUNTS = [{"mount": "/", "device": "overlay"}, {"mount": "/raid", "device": "/dev/md/hot"}]


@pytest.mark.parametrize(
    ("mounts", "setting", "tier", "expected"),
    [
        (MOUNTS, "auto", "/raid", {"dir": "/raid/enroot", "on_local_tier": True}),
        (MOUNTS, "auto", "/raid/", {"dir": "/raid/enroot", "on_local_tier": True}),
        (MOUNTS[:1], "auto", "/raid", {"dir": "/var/lib/enroot", "on_local_tier": False}),
        (MOUNTS, "auto", "/", {"dir": "/var/lib/enroot", "on_local_tier": False}),
        (MOUNTS, "/scratch/enroot", "/raid", {"dir": "/scratch/enroot", "on_local_tier": False}),
        ([], "auto", "/raid", {"dir": "/var/lib/enroot", "on_local_tier": False}),
    ],
)
def test_images_go_to_the_local_nvme_tier_only_when_it_is_mounted(mounts, setting, tier, expected):
    assert storage(mounts, setting, tier) == expected


@pytest.mark.parametrize("setting", ["", "relative/dir", None])
def test_a_storage_setting_that_is_not_auto_or_absolute_is_refused(setting):
    with pytest.raises(AnsibleFilterError, match="enroot_storage_dir is"):
        storage(MOUNTS, setting, "/raid")


@pytest.mark.parametrize(
    ("groups", "gpu", "mellanox", "expected"),
    [
        (["gpu", "infiniband", "slurm_compute"], "auto", "auto", {"gpu": True, "mellanox": True}),
        (["gpu", "roce"], "auto", "auto", {"gpu": True, "mellanox": True}),
        (["slurm_login"], "auto", "auto", {"gpu": False, "mellanox": False}),
        (["gpu_software"], "auto", "auto", {"gpu": False, "mellanox": False}),
        (["slurm_login"], True, "true", {"gpu": True, "mellanox": True}),
        (["gpu", "infiniband"], False, "no", {"gpu": False, "mellanox": False}),
    ],
)
def test_hooks_follow_the_capability_groups_unless_forced(groups, gpu, mellanox, expected):
    assert hooks(groups, gpu, mellanox) == expected


def test_a_hook_setting_that_is_not_auto_or_a_boolean_is_refused():
    with pytest.raises(AnsibleFilterError, match='enroot_mellanox_hook is "maybe", expected auto, true or false'):
        hooks(["gpu"], "auto", "maybe")
