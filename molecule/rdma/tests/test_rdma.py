"""The fabric stage on the lab node: Debian's RDMA stack installed at the pinned versions and held,
its tools run. The lab's kernel has no RDMA (the containers share the host's, which has no HCA), so
ibv_devices lists no device and nvidia-peermem is not configured: this proves the installed stack,
not a fabric. Inputs: molecule/rdma/molecule.yml."""

from __future__ import annotations

import re

import pytest

CORE_PACKAGES = ["rdma-core", "ibverbs-utils", "infiniband-diags"]


@pytest.fixture
def pinned(inputs) -> dict[str, str]:
    return {name: inputs["rdma_core_version"] for name in CORE_PACKAGES} | {"perftest": inputs["rdma_perftest_version"]}


def test_the_stack_is_installed_at_its_pinned_versions_and_held(host, pinned):
    for name, version in pinned.items():
        package = host.package(name)
        assert package.is_installed, name
        assert package.version == version, name
    held = host.check_output("apt-mark showhold").split()
    assert set(pinned) <= set(held)


def test_the_kernel_has_no_rdma_here(host):
    """The precondition of the checks below: a run here is not a fabric's. No device, and not even
    the verbs class (the kernel's ib_uverbs is not loaded)."""
    for path in ("/sys/class/infiniband", "/sys/class/infiniband_verbs"):
        assert not host.file(path).exists or host.check_output(f"ls -A {path}") == "", (
            f"the lab's kernel lists {path} entries: this scenario assumes no RDMA"
        )


def test_ibv_devices_runs_and_lists_no_device(host):
    """ibv_devices and libibverbs load and ask the kernel (a missing library would be rc 127). With no
    verbs class in sysfs libibverbs answers ENOSYS, which ibv_devices reports as its one line and rc 1:
    no device listed, because the lab's kernel has no RDMA, not because the tool is broken."""
    run = host.run("ibv_devices")
    assert run.rc == 1, (run.rc, run.stdout, run.stderr)
    assert run.stdout == ""
    assert run.stderr.strip() == "Failed to get IB devices list: Function not implemented"


def test_the_diagnostics_and_perftest_tools_run(host, inputs):
    # ibstat (infiniband-diags) prints the rdma-core release it was built from, on stderr.
    upstream = inputs["rdma_core_version"].split("-")[0]
    version = host.run("ibstat --version")
    assert (version.rc, version.stderr.strip()) == (0, f"ibstat BUILD VERSION: {upstream}")
    # With no device ibstat lists none and succeeds.
    assert host.run("ibstat").stdout == ""
    # perftest prints its own version (not the package's) and exits 1 after --version.
    perftest = host.run("ib_write_bw --version")
    assert re.fullmatch(r"Version: \d+\.\d+", perftest.stdout.strip()), perftest


def test_nvidia_peermem_is_not_persisted_without_rdma_hardware(host):
    assert not host.file("/etc/modules-load.d/clusterforge-nvidia-peermem.conf").exists
