"""Fabric Manager (the lab mirror's stand-in package) on an NVSwitch node type without NVSwitch devices:
installed at the driver's version (converge.yml's nvidia_driver_version, 550.163.01-1), held and
pinned, its unit enabled but not started."""

from __future__ import annotations

PACKAGE = "nvidia-fabricmanager-550"
DRIVER_VERSION = "550.163.01-1"  # converge.yml's nvidia_driver_version


def test_the_stand_in_is_installed_at_the_driver_s_version_and_held(host):
    status = host.check_output(
        f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}} ${{binary:Summary}}' {PACKAGE}"
    )
    assert status.startswith(f"hi {DRIVER_VERSION} clusterforge test stand-in")
    holds = host.check_output("apt-mark showhold").splitlines()
    assert PACKAGE in holds
    assert "nvidia-driver-cuda" in holds


def test_the_package_is_pinned_to_that_version(host):
    pin = host.file("/etc/apt/preferences.d/clusterforge-nvidia-fabricmanager").content_string
    assert f"Package: {PACKAGE}\nPin: version {DRIVER_VERSION}\nPin-Priority: 1001" in pin


def test_the_unit_is_the_stand_in_s_enabled_but_not_started_without_nvswitch(host):
    service = host.service("nvidia-fabricmanager")
    assert service.is_enabled
    assert not service.is_running
    description = host.check_output("systemctl show --property=Description nvidia-fabricmanager.service")
    assert "clusterforge test stand-in" in description
