"""The doca path on the lab node (converge.yml's last play): NVIDIA's DOCA-OFED from the lab's signed
mirror, laid out like NVIDIA's flat DOCA repository, pinned and held. The packages are stand-ins
("clusterforge test stand-in": NVIDIA's names and versions shaped like NVIDIA's, installing a marker
file, not NVIDIA's software), so this proves the repository, key, pin and hold handling, not a DOCA
stack; the reboot the move asks for is verify.yml's. Inputs: molecule/rdma/molecule.yml."""

from __future__ import annotations

import json

import pytest

SOURCE = "/etc/apt/sources.list.d/nvidia-doca.sources"
KEYRING = "/etc/apt/keyrings/nvidia-doca.asc"
PREFERENCES = "/etc/apt/preferences.d/clusterforge-rdma-doca"


@pytest.fixture
def pinned(inputs) -> dict[str, str]:
    # The profile (the role's default, doca-ofed) and the kernel part, at the scenario's versions.
    kernel = inputs["rdma_doca_kernel_version"]
    return {"doca-ofed": inputs["rdma_doca_version"], "mlnx-ofed-kernel-dkms": kernel, "mlnx-ofed-kernel-utils": kernel}


def test_doca_ofed_and_its_kernel_part_are_installed_at_their_pins_and_held(host, pinned):
    for name, version in pinned.items():
        package = host.package(name)
        assert package.is_installed, name
        assert package.version == version, name
    assert set(pinned) <= set(host.check_output("apt-mark showhold").split())


def test_the_installed_packages_are_the_mirror_s_labelled_stand_ins(host):
    for name in ("doca-ofed", "mlnx-ofed-kernel-dkms", "mlnx-ofed-kernel-utils"):
        description = host.check_output(f"dpkg-query --show --showformat '${{Description}}' {name}")
        assert description.startswith(f"clusterforge test stand-in for {name} "), description


def test_the_pins_win_over_the_newer_build_in_the_repository(host, pinned, inputs):
    policy = host.check_output("apt-cache policy doca-ofed")
    repository = f"{inputs['rdma_doca_repo_base_url']}/3.2.1/{inputs['rdma_doca_repo_os']}/x86_64"
    assert f"Candidate: {pinned['doca-ofed']}" in policy
    # The newer build is in the repository at apt's default priority; the pinned one at the pin's.
    assert "3.2.1-044000 500" in policy and f"*** {pinned['doca-ofed']} 1001" in policy, policy
    assert repository in policy
    preferences = host.file(PREFERENCES)
    assert preferences.user == "root" and preferences.mode == 0o644
    stanzas = [block for block in preferences.content_string.split("\n\n") if "Package:" in block]
    found = {
        line.split(": ", 1)[1]: next(v.split(": ", 1)[1] for v in block.splitlines() if v.startswith("Pin: "))
        for block in stanzas
        for line in block.splitlines()
        if line.startswith("Package: ")
    }
    assert found == {name: f"version {version}" for name, version in pinned.items()}


def test_the_source_is_nvidia_s_flat_layout_signed_by_its_own_keyring(host, inputs):
    source = host.file(SOURCE)
    assert source.user == "root" and source.mode == 0o644
    fields = dict(line.split(": ", 1) for line in source.content_string.splitlines() if not line.startswith("#"))
    assert fields == {
        "Types": "deb",
        "URIs": f"{inputs['rdma_doca_repo_base_url']}/3.2.1/{inputs['rdma_doca_repo_os']}/x86_64/",
        "Suites": "/",
        "Signed-By": KEYRING,
    }


def test_the_keyring_holds_the_mirror_s_key_and_only_it(host):
    keyring = host.file(KEYRING)
    assert keyring.user == "root" and keyring.mode == 0o644
    expected = json.loads(host.file("/srv/mirror/mirror.json").content_string)["fingerprint"]
    colons = host.check_output(f"gpg --batch --show-keys --with-colons {KEYRING}")
    assert [line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:")] == [expected]


def test_debian_s_stack_is_left_as_the_distribution_path_put_it(host, inputs):
    """The doca play on the same node touches none of the distribution path's packages."""
    for name in ("rdma-core", "ibverbs-utils", "infiniband-diags"):
        assert host.package(name).version == inputs["rdma_core_version"], name


def test_no_reboot_happened_and_the_imitated_mlx5_core_is_still_the_old_one(host, inputs):
    """The role asked for a reboot (verify.yml checks the fact and the report) and did not do it: the
    imitated loaded module is still the older build prepare.yml wrote."""
    version = host.file(f"{inputs['rdma_sys_module_path']}/mlx5_core/version").content_string.strip()
    assert version == inputs["rdma_lab_loaded_mlx5_core"]
