"""GPUDirect readiness per rail (clusterforge.validation.rails) on records the real judges made of real
outputs (tests/fixtures), and its table in the report's JSON and HTML."""

from __future__ import annotations

import json

import pytest

from clusterforge.validation import cabling_map, judges, rails, report
from tests.unit.clusterforge.validation.test_report import host_file, judged, record
from tests.unit.clusterforge.validation.test_report_html import SUPERPOD, page_of
from tests.unit.plugins.module_utils.samples import fixture_files

LSPCI = "lspci_vvv/amd-mi100-connectx6-pmc-switch-root-port-acs-vvv-excerpt-and-tv-rccl-547.txt"
CX5 = "mlxconfig_q/connectx5-edr-ib-gpudirect-defaults-off-bluebanquise.txt"
NO_PEERMEM = "lsmod/lsmod-sort-grep-mlx5-8gpu-no-peermem-gpu-operator-2511.txt"
PEERMEM = "lsmod/lsmod-grep-nvid-peermem-loaded-roce-h100-digitalocean.txt"
PEERMEM_LOG = "kernel_log_peermem/gb300-nvidia-peermem-unknown-symbol-err-22-gpu-operator-2868.txt"
GPU_BW = "ib_write_bw/roce-400g-cx7-gpudirect-dmabuf-client-gardenlinux.txt"
HOST_BW = "ib_write_bw/roce-100g-4qp-rdma-cm-client-oci.txt"
NIC, GPU_A, GPU_B = "0000:45:00.0", "0000:4a:00.0", "0000:50:00.0"  # the lspci output's ConnectX-6 and MI100s


def iommu(cmdline: str) -> list[dict]:
    return [r.as_dict() for r in judges.judge_text("kernel-cmdline", cmdline, {})]


def bandwidth(name: str, device: str, expected: dict) -> list[dict]:
    """ib_bandwidth_check's checks of one device: the judge's, renamed <check>.<device> as the module does."""
    return [{**c, "check": f"{c['check']}.{device}"} for c in judged("ib_write_bw", name, expected)]


def gpudirect(lsmod: str = NO_PEERMEM, cmdline: str = "BOOT_IMAGE=/vmlinuz iommu=pt\n", **extra) -> dict:
    checks = [
        *judged("lspci-acs", LSPCI, {}),
        *judged("mlxconfig", CX5, {}),
        *judged("lsmod", lsmod, {}),
        *judged("peermem-log", PEERMEM_LOG, {}),
        *iommu(cmdline),
    ]
    return record("gpudirect_check", checks, **extra)


def node(host: str, records: list[dict], cabling=None) -> list[dict]:
    checks = [c for r in records for c in report._checks_of(host, r, set())]
    return rails.node_rails(host, records, checks, cabling)


def test_per_item_readings_agree_with_each_judge_on_every_fixture():
    """The rail table reads a check per pair and per NIC; its readings never disagree with the judge's verdict."""
    acs, mlx = judges.load("acs_judge"), judges.load("mlxconfig_judge")
    for path in fixture_files("lspci_vvv"):
        (check,) = judged("lspci-acs", f"lspci_vvv/{path.name}", {})
        assert check["status"] == judges.load("verdicts").worst(
            s for s, _ in acs.pair_verdicts(check["measured"]).values()
        )
    for path in fixture_files("mlxconfig_q"):
        for expected in ({}, {"mlxconfig": {"MAX_ACC_OUT_READ": None}}, {"mlxconfig": {"LINK_TYPE_P1": "ETH"}}):
            (check,) = judged("mlxconfig", f"mlxconfig_q/{path.name}", expected)
            per_device = mlx.device_verdicts(check["measured"], check["expected"])
            assert check["status"] == judges.load("verdicts").worst(s for s, _ in per_device.values()), path.name


def test_pairs_from_the_records_name_the_pair_each_failure_affects():
    records = [gpudirect(source="replay", nics={"mlx5_0": NIC})]
    (row,) = node("gpu01", records)
    assert (row["hca"], row["nic_pci"], row["gpu_pci"]) == ("mlx5_0", NIC, [GPU_A, GPU_B])
    statuses = {name: cell["status"] for name, cell in row["checks"].items()}
    # The excerpt shows no ACSCtl for the switch ports between the NIC and the GPUs: unknown, not off.
    assert statuses == {
        "acs": "warn",
        "nic_pcie": "fail",
        "peermem": "fail",
        "iommu": "pass",
        "gpu_bandwidth": "skipped",
    }
    assert row["status"] == "fail" and row["origin"] == report.verdicts.REPLAYED
    assert row["checks"]["acs"]["origin"] == report.verdicts.REPLAYED
    # The mlxconfig output names its NIC by mst device: it cannot be placed, and says so.
    assert "/dev/mst/mt4119_pciconf0" in row["checks"]["nic_pcie"]["why"]
    assert "not placed on a rail" in row["checks"]["nic_pcie"]["why"]
    assert row["affects"].startswith(f"mlx5_0 - GPU {GPU_A}, {GPU_B}: ")
    assert "ADVANCED_PCI_SETTINGS expected True, found False(0)" in row["affects"]
    assert "nvidia_peermem not loaded" in row["affects"] and row["not_checked"] == ["gpu_bandwidth"]


def test_topology_rails_take_their_own_results_and_node_wide_ones():
    cabling = cabling_map.Cabling(rail_pairs={"gpu01": [("mlx5_0", 0), ("mlx5_1", 1)]})
    records = [
        gpudirect(lsmod=PEERMEM, nics={"mlx5_0": NIC, "mlx5_1": "0000:c5:00.0"}),
        record("ib_bandwidth_check", bandwidth(GPU_BW, "mlx5_0", {"rate_gbps": 400, "memory": "gpu"})),
        record("ib_bandwidth_check", bandwidth(HOST_BW, "mlx5_1", {"rate_gbps": 100})),
    ]
    first, second = node("gpu01", records, cabling)
    assert (first["rail"], first["gpu"], first["pair"]) == (0, "GPU0", f"mlx5_0 - GPU0 ({NIC} - {GPU_A}, {GPU_B})")
    assert (second["rail"], second["gpu"], second["pair"]) == (1, "GPU1", "mlx5_1 - GPU1")
    assert first["checks"]["acs"]["status"] == "warn"
    assert second["checks"]["acs"] == {"status": "skipped", "why": "no lspci pair for this NIC", "origin": "live"}
    for row in (first, second):
        assert row["checks"]["peermem"]["status"] == "fail"  # loaded, yet the kernel log shows it failing
        assert "nvidia_peermem failed to load" in row["checks"]["peermem"]["why"]
        assert row["origin"] == "live"
    gpu_bw = judged("ib_write_bw", GPU_BW, {"rate_gbps": 400, "memory": "gpu"})
    assert first["checks"]["gpu_bandwidth"]["status"] == judges.overall(
        [judges.load("verdicts").CheckResult(**c) for c in gpu_bw[:2]]
    )
    assert second["checks"]["gpu_bandwidth"]["status"] == "skipped"
    assert "host memory only" in second["checks"]["gpu_bandwidth"]["why"]


def test_an_iommu_in_translation_fails_every_rail():
    cabling = cabling_map.Cabling(rail_pairs={"gpu01": [("mlx5_0", 0), ("mlx5_1", 1)]})
    records = [gpudirect(lsmod=PEERMEM, cmdline="BOOT_IMAGE=/vmlinuz intel_iommu=on\n")]
    for row in node("gpu01", records, cabling):
        assert row["checks"]["iommu"]["status"] == "fail" and row["status"] == "fail"
        assert "IOMMU" in row["affects"]


def test_the_superpod_topology_gives_each_node_its_rails_in_order():
    cabling = cabling_map.load(SUPERPOD)
    assert "ufm01" not in cabling.rail_pairs  # no GPU: no GPUDirect rail
    # The example's DGX H100 names its compute-fabric HCAs and the GPU each serves (rail order).
    pairs = cabling.rail_pairs["dgx001"]
    assert [gpu for _, gpu in pairs] == list(range(8)) and pairs[1] == ("mlx5_3", 1)
    rows = node("dgx001", [], cabling)
    assert [(row["rail"], row["hca"], row["gpu"]) for row in rows] == [
        (i, h, f"GPU{g}") for i, (h, g) in enumerate(pairs)
    ]
    assert all(row["status"] == "skipped" and row["checks"]["acs"]["why"] == "not checked" for row in rows)


@pytest.fixture
def rail_run(tmp_path):
    directory = tmp_path / "20250101T000000Z"
    directory.mkdir()
    host_file(directory, "gpu01", [gpudirect(source="replay", nics={"mlx5_0": NIC})])
    host_file(directory, "head01", [record("gpu_check", [])], node_type="head")
    return directory


def test_the_report_shows_the_rail_table_in_json_and_html(rail_run, tmp_path):
    run = report.load_run(rail_run)
    _, root = page_of(run, tmp_path)
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    by_host = {n["host"]: n["gpudirect_rails"] for n in document["nodes"]}
    assert by_host["head01"] == [] and by_host["gpu01"][0]["status"] == "fail"
    assert by_host["gpu01"][0]["origin"] == report.verdicts.REPLAYED
    table = next(t for t in root.iter("table", "rails") if t.attrs["id"] == "rails-gpu01")
    heading = [th.text() for th in table.iter("th")]
    assert heading[2:7] == list(rails.COLUMNS.values())
    (row,) = [[td.text() for td in tr.iter("td")] for tr in table.iter("tr", "rail")]
    assert row[1] == f"mlx5_0 - GPU {GPU_A}, {GPU_B}"
    assert row[2].startswith("warn " + report.verdicts.REPLAYED) and row[4].startswith(
        "fail " + report.verdicts.REPLAYED
    )
    assert row[7] == "fail " + report.verdicts.REPLAYED
    assert row[8].startswith(f"mlx5_0 - GPU {GPU_A}, {GPU_B}: ACS on the path")
    assert not any(t.attrs.get("id") == "rails-head01" for t in root.iter("table"))


def test_a_replayed_record_is_placed_by_the_topology_pci_addresses():
    """A replay has no sysfs, so no nics map: the topology's HCA PCI addresses place the lspci pairs."""
    cabling = cabling_map.Cabling(
        rail_pairs={"gpu01": [("mlx5_0", 0), ("mlx5_1", 1)]},
        hca_pci={"gpu01": {"mlx5_0": "0000:c5:00.0", "mlx5_1": NIC}},
    )
    first, second = node("gpu01", [gpudirect(source="replay")], cabling)  # no extra row: the pair is placed
    assert first["checks"]["acs"]["status"] == "skipped" and first["nic_pci"] == "0000:c5:00.0"
    assert (second["checks"]["acs"]["status"], second["nic_pci"]) == ("warn", NIC)
    assert (
        second["pair"] == f"mlx5_1 - GPU1 ({NIC} - {GPU_A}, {GPU_B})" and second["origin"] == report.verdicts.REPLAYED
    )


def gpu_run(name: str, device: str, expected: dict) -> list[dict]:
    """ib_bandwidth_check's checks of a GPUDirect run (use_cuda): ib.<test>_bw_gpu[...].<device>."""
    return [
        {**c, "check": c["check"].replace("ib.write_bw", "ib.write_bw_gpu", 1) + f".{device}"}
        for c in judged("ib_write_bw", name, expected)
    ]


def test_a_rail_s_gpudirect_run_is_its_gpu_bandwidth_beside_its_host_memory_run():
    """validate.yml runs each rail twice: from host memory (ib.write_bw.<hca>), then from its GPU's
    memory (ib.write_bw_gpu.<hca>). The cell is the GPU run's, whatever order the records come in: the
    A40 run's 181 Gb/s on a 400 Gb/s rail fails though the host-memory run reached line rate."""
    A40 = "ib_write_bw/roce-a40-gpudirect-dmabuf-16qp-client-nvidia-tools-image.txt"
    cabling = cabling_map.Cabling(rail_pairs={"gpu01": [("mlx5_0", 0)]})
    host = record("ib_bandwidth_check", bandwidth(GPU_BW, "mlx5_0", {"rate_gbps": 400}))
    gpu = record("ib_bandwidth_check", gpu_run(A40, "mlx5_0", {"rate_gbps": 400, "memory": "gpu"}))
    for records in ([host, gpu], [gpu, host]):
        (row,) = node("gpu01", records, cabling)
        cell = row["checks"]["gpu_bandwidth"]
        assert cell["status"] == "fail" and "181.5 Gb/s on GPU memory (NVIDIA A40)" in cell["why"], cell
        assert row["affects"].startswith("mlx5_0 - GPU0: GPU-memory bandwidth: ")
    # Without the GPU run, the host-memory one says it is no GPUDirect measurement.
    (row,) = node("gpu01", [host], cabling)
    assert row["checks"]["gpu_bandwidth"]["status"] == "skipped"
    assert "host memory only" in row["checks"]["gpu_bandwidth"]["why"]
