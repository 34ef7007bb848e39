"""IMEX (the lab mirror's stand-in package) on tray nvt03 of files/nvlink.topology.yml (converge.yml):
installed at the driver's version (550.163.01-1), held and pinned; its node list is the file
`clusterforge topology render` writes for domain nvl02; config.cfg has converge.yml's settings merged
into the stand-in's file; the unit is enabled but not started (no NVIDIA driver is loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.topology import load
from clusterforge.topology.render import nvlink

PACKAGE = "nvidia-imex-550"
DRIVER_VERSION = "550.163.01-1"  # converge.yml's nvidia_driver_version
TOPOLOGY = Path(__file__).resolve().parents[1] / "files" / "nvlink.topology.yml"
DOMAIN = "nvl02"  # converge.yml's nvidia_imex_domain, the domain of tray nvt03


def test_the_stand_in_is_installed_at_the_driver_s_version_held_and_pinned(host):
    status = host.check_output(
        f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}} ${{binary:Summary}}' {PACKAGE}"
    )
    assert status.startswith(f"hi {DRIVER_VERSION} clusterforge test stand-in")
    assert PACKAGE in host.check_output("apt-mark showhold").splitlines()
    pin = host.file("/etc/apt/preferences.d/clusterforge-nvidia-imex").content_string
    assert f"Package: {PACKAGE}\nPin: version {DRIVER_VERSION}\nPin-Priority: 1001" in pin


def test_the_node_list_is_the_rendered_file_of_the_tray_s_domain(host):
    rendered = nvlink.files(load(TOPOLOGY))
    node_file = host.file("/etc/nvidia-imex/nodes_config.cfg")
    assert node_file.mode == 0o644 and node_file.user == "root"
    assert node_file.content_string == rendered[f"imex/{DOMAIN}/nodes_config.cfg"]
    assert node_file.content_string == "10.160.0.13\n10.160.0.14\n"  # nvt03 and nvt04 in the topology's plan


@pytest.mark.parametrize(
    "line",
    ["SERVER_PORT=50010", "NETWORK_INTERFACE=eth0", "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg"],
)
def test_config_cfg_has_the_settings_merged_into_the_package_s_file(host, line):
    lines = host.file("/etc/nvidia-imex/config.cfg").content_string.splitlines()
    assert lines.count(line) == 1
    key = line.split("=")[0]
    assert [other for other in lines if other.startswith(f"{key}=")] == [line]
    assert "BIND_INTERFACE_IP=" in lines  # the stand-in's own line, which the role does not manage, is kept
    assert lines[0].startswith("# clusterforge test stand-in")


def test_the_unit_is_the_stand_in_s_enabled_but_not_started_without_a_loaded_driver(host):
    service = host.service("nvidia-imex")
    assert service.is_enabled
    assert not service.is_running
    description = host.check_output("systemctl show --property=Description nvidia-imex.service")
    assert "clusterforge test stand-in" in description


def test_the_driver_is_told_to_make_channel0_in_a_modprobe_file_of_the_role_s_own(host):
    # converge.yml leaves nvidia_imex_channel0_at_load and nvidia_imex_module_name at their defaults
    # (true; nvidia, NVIDIA's packages' module name).
    modprobe = host.file("/etc/modprobe.d/clusterforge-nvidia-imex.conf")
    assert modprobe.mode == 0o644 and modprobe.user == "root"
    options = [line for line in modprobe.content_string.splitlines() if not line.startswith("#")]
    assert options == ["options nvidia NVreg_CreateImexChannel0=1"]


def test_no_channel_is_made_without_a_loaded_driver_which_is_the_skip_s_reason(host):
    # The reason the role gives ("skipped: no hardware (the NVIDIA driver is not loaded)"): no driver
    # version file and no nvidia-caps-imex-channels major in this node's /proc/devices.
    assert not host.file("/proc/driver/nvidia/version").exists
    assert "nvidia-caps-imex-channels" not in host.file("/proc/devices").content_string
    assert not host.file("/dev/nvidia-caps-imex-channels").exists
    # No restart was ever wanted where the service does not run: no marker of a held-back restart.
    assert not host.file("/var/lib/clusterforge/nvidia-imex-restart-pending").exists
