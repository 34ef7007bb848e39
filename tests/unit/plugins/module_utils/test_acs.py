"""lspci -vvv / -tv: the PCIe tree, and ACS on the ports between a GPU and its rail's NIC."""

from __future__ import annotations

import pytest
from ansible.module_utils.acs_judge import judge_acs
from ansible.module_utils.expectation_keys import ExpectationError
from ansible.module_utils.lspci import LspciParseError, parse_lspci
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, WARN

from .samples import load, names

KIND = "lspci_vvv"
RCCL = "amd-mi100-connectx6-pmc-switch-root-port-acs-vvv-excerpt-and-tv-rccl-547.txt"
NIC, GPU0, GPU1 = "0000:45:00.0", "0000:4a:00.0", "0000:50:00.0"


def test_every_fixture_is_tested():
    assert names(KIND) == {RCCL}


def test_the_tree_comes_from_the_bus_ranges():
    """lspci -tv of the real system: the GPU sits four bridges below the switch port 44:01.0 (its
    card's own switch), the NIC directly below 44:00.0; both below the switch's upstream port 43:00.0."""
    tree = parse_lspci(load(KIND, RCCL))
    assert [b.bdf for b in tree.ancestors(GPU0)] == [
        "0000:49:00.0", "0000:48:00.0", "0000:47:00.0", "0000:46:00.0", "0000:44:01.0", "0000:43:00.0", "0000:40:01.1",
    ]  # fmt: skip
    assert [b.bdf for b in tree.ancestors(NIC)] == ["0000:44:00.0", "0000:43:00.0", "0000:40:01.1"]
    root_port = tree.devices["0000:40:01.1"]
    assert (root_port.secondary, root_port.detailed) == ("0000:43", True)
    assert {k for k, on in root_port.acs_ctl.items() if on} == {"SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"}
    assert tree.devices[NIC].description == "Mellanox Technologies MT28908 Family [ConnectX-6]"


def test_a_root_port_above_the_switch_is_not_between_the_pair():
    """The real output's only ACSCtl (SrcValid+ ReqRedir+ CmpltRedir+) is the root port above the
    switch: not on the NIC-GPU path. The switch ports' ACS is not shown: a warning, never a pass."""
    verdict = judge_acs(parse_lspci(load(KIND, RCCL)), {})
    assert verdict.status == WARN
    assert set(verdict.measured) == {f"{NIC}-{GPU0}", f"{NIC}-{GPU1}"}
    assert verdict.measured[f"{NIC}-{GPU0}"]["ports"] == [
        "0000:44:00.0", "0000:49:00.0", "0000:48:00.0", "0000:47:00.0", "0000:46:00.0", "0000:44:01.0",
    ]  # fmt: skip
    assert "40:01.1" not in verdict.message and verdict.message.startswith("ACS state not in the output")


def test_a_switch_port_with_acs_redirect_fails_naming_the_pair_and_the_port():
    """Constructed from the real output: the ACS block shown for the root port, given to the switch
    downstream port 44:01.0 instead (the GPU's side of the switch)."""
    text = load(KIND, RCCL).replace("40:01.1 PCI bridge", "44:01.0 PCI bridge")
    verdict = judge_acs(parse_lspci(text), {})
    assert verdict.status == FAIL
    assert verdict.message == (
        "ACS redirects GPUDirect traffic through the root complex: "
        f"NIC {NIC} - GPU {GPU0} at port 0000:44:01.0 (SrcValid+ ReqRedir+ CmpltRedir+)"
    )
    assert verdict.measured[f"{NIC}-{GPU1}"]["redirecting"] == {}


def test_acs_off_on_every_port_passes():
    """Constructed from the real output: the ACSCtl line with every flag off, on each port between NIC and GPU0."""
    real = load(KIND, RCCL)
    block = real[: real.index(" +-[0000:40]")]
    off = block.replace(
        "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+",
        "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd-",
    )
    ports = ["44:00.0", "49:00.0", "48:00.0", "47:00.0", "46:00.0", "44:01.0"]
    text = "".join(off.replace("40:01.1", port, 1) for port in ports) + real[real.index(" +-[0000:40]") :]
    verdict = judge_acs(parse_lspci(text), {"acs_pairs": {"45:00.0": "4a:00.0"}})
    assert (verdict.status, verdict.message) == (PASS, "no ACS redirection between 1 GPU-NIC pair(s)")


def test_an_expected_pair_that_meets_at_the_root_complex_fails():
    verdict = judge_acs(parse_lspci(load(KIND, RCCL)), {"acs_pairs": {"45:00.0": "40:00.2"}})
    assert (verdict.status, verdict.message) == (
        FAIL, f"{NIC}-0000:40:00.2: no common PCIe switch (they meet at the root complex)"
    )  # fmt: skip


def test_access_denied_is_unknown_not_off():
    """lspci without root prints '<access denied>' for the extended capabilities (ACS among them)."""
    real = load(KIND, RCCL)
    text = (
        "44:01.0 PCI bridge: PMC-Sierra Inc. Device 4000\n\tCapabilities: <access denied>\n"
        + real[real.index(" +-[") :]
    )
    verdict = judge_acs(parse_lspci(text), {"acs_pairs": {"45:00.0": "4a:00.0"}})
    assert verdict.status == WARN and "0000:44:01.0" in verdict.measured[f"{NIC}-{GPU0}"]["unknown"]


def test_no_pair_and_bad_input():
    real = load(KIND, RCCL)
    assert judge_acs(parse_lspci(real[: real.index(" +-[")]), {}).status == SKIPPED
    with pytest.raises(ExpectationError, match="not a PCI address"):
        judge_acs(parse_lspci(real), {"acs_pairs": {"mlx5_0": "GPU0"}})
    with pytest.raises(LspciParseError, match="no PCI device"):
        parse_lspci("bash: lspci: command not found\n")
