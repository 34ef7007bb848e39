"""mlxconfig q: the parser on real outputs, and the GPUDirect settings judge."""

from __future__ import annotations

import pytest
from ansible.module_utils.mlxconfig import MlxconfigParseError, name_of, number_of, parse_mlxconfig
from ansible.module_utils.mlxconfig_judge import MLXCONFIG_GPUDIRECT, judge_mlxconfig, matches
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, ToolFailed

from .samples import load, names

KIND = "mlxconfig_q"
CX5 = "connectx5-edr-ib-gpudirect-defaults-off-bluebanquise.txt"
CX7 = "connectx7-400g-eth-filtered-sriov-nvidia-tools-image.txt"

# device, device type, settings read, (setting, value) samples
TABLE = {
    CX5: ("/dev/mst/mt4119_pciconf0", "ConnectX5", 143, {"LINK_TYPE_P1": "IB(1)", "ATS_ENABLED": "False(0)",
          "PCI_WR_ORDERING": "per_mkey(0)", "EXP_ROM_UEFI_x86_ENABLE": "True(1)",
          "HOST_CHAINING_DESCRIPTORS": "Array[0..7]", "PCI_ATOMIC_MODE": "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)",
          "ADVANCED_PCI_SETTINGS": "False(0)"}),
    CX7: ("device 1", "ConnectX7", 3, {"LINK_TYPE_P1": "ETH(2)", "SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"}),
}  # fmt: skip


def test_table_covers_every_fixture():
    assert set(TABLE) == names(KIND)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_parse(name: str):
    device_name, device_type, count, samples = TABLE[name]
    (device,) = parse_mlxconfig(load(KIND, name))
    assert (device.device, device.device_type, device.columns) == (device_name, device_type, ("Next Boot",))
    assert len(device.settings) == count
    assert {key: device.value(key) for key in samples} == samples
    assert device.value("MAX_ACC_OUT_READ") is None


def test_the_gpudirect_defaults_fail_a_nic_left_at_factory_settings():
    """The real ConnectX-5 listing: ADVANCED_PCI_SETTINGS off (which hides MAX_ACC_OUT_READ); ATS is off as wanted."""
    verdict = judge_mlxconfig(parse_mlxconfig(load(KIND, CX5)), {})
    assert verdict.status == FAIL
    assert verdict.message == (
        "/dev/mst/mt4119_pciconf0 (ConnectX5): ADVANCED_PCI_SETTINGS expected True, found False(0); "
        "/dev/mst/mt4119_pciconf0 (ConnectX5): MAX_ACC_OUT_READ expected 0 or 44, hidden while "
        "ADVANCED_PCI_SETTINGS is False(0)"
    )
    assert verdict.measured["/dev/mst/mt4119_pciconf0"]["ATS_ENABLED"] == "False(0)"
    assert verdict.expected == MLXCONFIG_GPUDIRECT


def test_settings_the_nic_has_pass_and_a_wrong_link_type_fails():
    devices = parse_mlxconfig(load(KIND, CX5))
    drop = {"ADVANCED_PCI_SETTINGS": None, "MAX_ACC_OUT_READ": None}
    good = judge_mlxconfig(devices, {"mlxconfig": {**drop, "LINK_TYPE_P1": "IB", "PCI_WR_ORDERING": "per_mkey"}})
    assert good.status == PASS and good.expected == {
        "ATS_ENABLED": False,
        "LINK_TYPE_P1": "IB",
        "PCI_WR_ORDERING": "per_mkey",
    }
    bad = judge_mlxconfig(devices, {"mlxconfig": {**drop, "LINK_TYPE_P1": "ETH"}})
    assert (bad.status, bad.message) == (
        FAIL,
        "/dev/mst/mt4119_pciconf0 (ConnectX5): LINK_TYPE_P1 expected ETH, found IB(1)",
    )


def test_a_filtered_listing_names_each_setting_it_lacks():
    verdict = judge_mlxconfig(parse_mlxconfig(load(KIND, CX7)), {"mlxconfig": {"LINK_TYPE_P1": 2}})
    assert verdict.status == FAIL
    assert "device 1 (ConnectX7): ADVANCED_PCI_SETTINGS expected True, not in the output" in verdict.message
    assert "LINK_TYPE_P1" not in verdict.message  # ETH(2) is 2
    only = judge_mlxconfig(parse_mlxconfig(load(KIND, CX7)), {"mlxconfig": {k: None for k in MLXCONFIG_GPUDIRECT}})
    assert only.status == SKIPPED


def test_current_column_is_judged_and_a_pending_change_is_named():
    """mlxconfig -e q (Default, Current, Next Boot), constructed in the real layout: the value set for
    the next boot is not in force until a firmware reset."""
    text = load(KIND, CX5).replace("Next Boot", "Default         Current         Next Boot")
    lines = []
    for line in text.splitlines():
        if line.startswith("        "):  # a setting: Default, Current and Next Boot alike but for one
            value = line.split()[-1]
            line += "        False(0)        True(1)" if "ADVANCED_PCI" in line else f" {value} {value}"
        lines.append(line)
    (device,) = parse_mlxconfig("\n".join(lines))
    assert device.columns == ("Default", "Current", "Next Boot")
    verdict = judge_mlxconfig((device,), {"mlxconfig": {"MAX_ACC_OUT_READ": None}})
    assert verdict.message.endswith(
        "ADVANCED_PCI_SETTINGS expected True, found False(0) (Next Boot True(1): takes a firmware reset or reboot)"
    )


@pytest.mark.parametrize(
    "found,want,ok",
    [("False(0)", False, True), ("False(0)", 0, True), ("False(0)", "false", True), ("True(1)", False, False),
     ("44", [0, 44], True), ("128", [0, 44], False), ("per_mkey(0)", "per_mkey", True), ("IB(1)", "IB(1)", True),
     ("ETH(2)", "2", True), ("Array[0..7]", 0, False)],
)  # fmt: skip
def test_matches(found: str, want, ok: bool):
    assert matches(found, want) is ok


def test_value_parts():
    assert (number_of("False(0)"), number_of("44"), number_of("Array[0..7]")) == (0, 44, None)
    assert (name_of("per_mkey(0)"), name_of("44")) == ("per_mkey", "44")


def test_mlxconfig_errors_and_other_output():
    with pytest.raises(ToolFailed, match="mlxconfig failed: -E- Failed to open the device"):
        parse_mlxconfig("\n-E- Failed to open the device\n")
    with pytest.raises(MlxconfigParseError, match="no Configurations: table"):
        parse_mlxconfig("bash: mlxconfig: command not found\n")
