"""Debian's 550 DKMS module built for the kernel whose headers prepare installed (standing for an image's
kernel), installed at the driver's version and held, and not loaded without a GPU. (No inputs: the
versions are Debian 13's 550 builds.)"""

from __future__ import annotations

import re

import pytest

MODULE_VERSION = "550.163.01"
PACKAGE_BUILD = "550.163.01-2"


@pytest.fixture
def kernel(host) -> str:
    kernels = host.check_output(
        "find /lib/modules -mindepth 1 -maxdepth 1 -type d -name '*-amd64' -printf '%f\\n'"
    ).split()
    assert len(kernels) == 1, kernels
    return kernels[0]


def test_dkms_built_and_installed_the_module_for_the_kernel(host, kernel):
    status = host.check_output(f"dkms status -k {kernel}")
    assert re.search(rf"nvidia-current/{re.escape(MODULE_VERSION)}, \S+, x86_64: installed", status), status
    assert host.check_output(f"modinfo -k {kernel} -F version nvidia-current").strip() == MODULE_VERSION


def test_the_module_package_is_at_the_driver_s_build_and_held(host):
    status = host.check_output("dpkg-query --show --showformat '${db:Status-Abbrev}${Version}' nvidia-kernel-dkms")
    assert status == f"hi {PACKAGE_BUILD}"


def test_the_module_is_not_loaded_without_a_gpu(host):
    assert not host.file("/sys/module/nvidia_current").exists
    assert not host.file("/sys/module/nvidia").exists
