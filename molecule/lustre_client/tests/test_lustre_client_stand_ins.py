"""The Lustre client on the lab node (stand-ins, see molecule.yml): the pinned packages held, lnet.conf,
the mount unit, fstab left alone, lnet.service and the mount unit enabled, the stand-in file system
still mounted, and the stripe layouts. Inputs: molecule/lustre_client/vars/main.yml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

INPUTS = yaml.safe_load((Path(__file__).resolve().parent.parent / "vars" / "main.yml").read_text())
MOUNT = INPUTS["lustre_client_mounts"][0]
UNIT = "mnt-lustre\\x2dscratch.mount"


@pytest.mark.parametrize("package", ["lustre-client-modules-dkms", "lustre-client-utils"])
def test_both_stand_in_packages_are_installed_at_the_pinned_version_and_held(host, package):
    version = host.check_output(f"dpkg-query --show --showformat '${{Version}} ${{db:Status-Abbrev}}' {package}")
    assert version.split() == [f"{INPUTS['lustre_client_version']}-1", "hi"]
    assert package in host.check_output("apt-mark showhold").splitlines()


def test_lnet_conf_says_tcp0_on_the_default_interface(host):
    # The default route's interface (what Ansible's default_ipv4 fact names), from the kernel's table.
    interface = host.check_output("awk '$2 == \"00000000\" {print $1; exit}' /proc/net/route")
    lnet = yaml.safe_load(host.file("/etc/lnet.conf").content_string)
    assert lnet == {"net": [{"net type": "tcp0", "local NI(s)": [{"interfaces": {0: interface}}]}]}


def test_the_mount_unit_has_the_source_mount_point_type_and_options(host):
    path = f"/etc/systemd/system/{UNIT}"
    assert host.check_output(f"systemd-escape --path --suffix=mount {MOUNT['mount_point']}") == UNIT
    lines = host.file(path).content_string.splitlines()
    assert f"What={MOUNT['mgs_nids'][0]}:/{MOUNT['fsname']}" in lines
    assert f"Where={MOUNT['mount_point']}" in lines
    assert "Type=lustre" in lines
    assert f"Options={','.join(MOUNT['options'])}" in lines
    assert "Requires=lnet.service" in lines
    assert host.run(f"systemd-analyze verify '{path}'").rc == 0


def test_fstab_is_valid_and_left_as_it_was(host):
    assert host.run("findmnt --verify").rc == 0
    assert host.run("cmp /etc/fstab /var/lib/clusterforge-standin/fstab.before").rc == 0


def test_lnet_and_the_mount_unit_are_enabled_and_the_stand_in_is_still_mounted(host):
    assert host.service("lnet").is_enabled
    assert host.check_output("systemctl show --property=ActiveState lnet.service") == "ActiveState=active"
    assert host.check_output(f"systemctl is-enabled '{UNIT}'") == "enabled"
    mounted = host.check_output(f"findmnt --noheadings --output SOURCE,FSTYPE,OPTIONS {MOUNT['mount_point']}").split()
    assert mounted[:2] == [f"{MOUNT['mgs_nids'][0]}:/{MOUNT['fsname']}", "tmpfs"]
    assert mounted[2].startswith("rw,noatime,")


def test_the_layouts_and_setstripe_ran_once_only_where_the_layout_differed(host):
    # datasets had 8 x 1 MiB from prepare: read, not set; checkpoints got the input's count once.
    layouts = {
        name: host.check_output(f"lfs getstripe -d -c {MOUNT['mount_point']}/{name}")
        + " "
        + host.check_output(f"lfs getstripe -d -S {MOUNT['mount_point']}/{name}")
        for name in ("datasets", "checkpoints")
    }
    count = INPUTS["lustre_client_stripe_dirs"][1]["count"]
    assert layouts == {"datasets": "8 1048576", "checkpoints": f"{count} 1048576"}
    log = host.file("/var/lib/clusterforge-standin/lfs/setstripe.log").content_string.splitlines()
    assert log == [f"setstripe -c {count} -S 1048576 {MOUNT['mount_point']}/checkpoints"]
