"""nvidia_driver on a Debian 13 lab node without a GPU: Debian's 550 userspace at its pinned build and
held, no module package, the archive components, the nouveau blacklist and module options as modprobe
reads them, nvidia-persistenced installed but off and not failed, no module loaded, nvidia-smi unable
to reach NVML. (The scenario sets no inputs: the versions are Debian 13's 550 builds.)"""

from __future__ import annotations

import pytest

DRIVER = [
    "nvidia-smi",
    "libcuda1",
    "libnvidia-ml1",
    "libnvidia-cfg1",
    "libnvidia-ptxjitcompiler1",
    "libnvidia-pkcs11-openssl3",
    "nvidia-alternative",
    "nvidia-legacy-check",
]
DRIVER_BUILD = "550.163.01-2"
PERSISTENCED_BUILD = "550.163.01-1"
BACKPORTS_BUILD = "550.163.01-4~bpo13+1"


@pytest.mark.parametrize(
    ("package", "version"), [(name, DRIVER_BUILD) for name in DRIVER] + [("nvidia-persistenced", PERSISTENCED_BUILD)]
)
def test_debian_s_550_driver_is_installed_at_the_pinned_build_and_held(host, package, version):
    # dpkg's "hi": selection hold, package installed.
    assert (
        host.check_output(f"dpkg-query --show --showformat '${{db:Status-Abbrev}}${{Version}}' {package}")
        == f"hi {version}"
    )
    assert package in host.check_output("apt-mark showhold").splitlines()


def test_apt_s_candidate_is_the_pin_although_backports_has_a_newer_build(host):
    policy = host.check_output("apt-cache policy nvidia-smi")
    assert f"Candidate: {DRIVER_BUILD}" in policy
    assert BACKPORTS_BUILD in policy


@pytest.mark.parametrize("package", ["nvidia-kernel-dkms", "nvidia-open-kernel-dkms", "dkms"])
def test_no_module_package_came_along(host, package):
    assert not host.package(package).is_installed


def test_the_archive_source_has_the_non_free_components_signed_by_debian_s_keyring(host):
    lines = host.file("/etc/apt/sources.list.d/clusterforge-debian-archive.sources").content_string.splitlines()
    assert "Components: contrib non-free non-free-firmware" in lines
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in lines


def test_the_nouveau_blacklist_and_the_module_options_are_written_and_read_by_modprobe(host):
    assert (
        "blacklist nouveau"
        in host.file("/etc/modprobe.d/clusterforge-blacklist-nouveau.conf").content_string.splitlines()
    )
    options = "options nvidia-current NVreg_DeviceFileMode=0660"
    assert options in host.file("/etc/modprobe.d/clusterforge-nvidia.conf").content_string.splitlines()
    showconfig = host.check_output("modprobe --showconfig").splitlines()
    assert "blacklist nouveau" in showconfig
    # modprobe writes module names with underscores.
    assert any(line.startswith("options nvidia_current NVreg_DeviceFileMode=0660") for line in showconfig)


def test_persistenced_is_installed_off_and_not_failed(host):
    # Off and not failed: a failed unit would fail the rolling update's health check.
    state = host.check_output(
        "systemctl show --property=LoadState,ActiveState,UnitFileState nvidia-persistenced.service"
    )
    assert sorted(state.splitlines()) == ["ActiveState=inactive", "LoadState=loaded", "UnitFileState=disabled"]


def test_no_module_is_loaded_and_nvidia_smi_cannot_reach_nvml(host):
    assert not host.file("/sys/module/nvidia").exists
    smi = host.run("nvidia-smi")
    assert smi.rc != 0
    assert "NVML" in smi.stdout + smi.stderr or "NVIDIA driver" in smi.stdout + smi.stderr
