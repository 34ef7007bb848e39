"""GPUDirect RDMA readiness per rail: for each GPU-NIC pair of a node, the verdict of every check
that can halve that pair's bandwidth, and which pair a failure affects.

A rail is a GPU-NIC pair of the topology's rail order (clusterforge.topology.expectations:
rail_hcas with hca_gpus, and each HCA's PCI address, carried by the report's Cabling). Its cells
come from the records the node's modules wrote, read with the judges' own per-item rules (plugins/module_utils):

- ``acs``: pcie.acs, per NIC-GPU pair of PCI addresses (acs_judge.pair_verdicts), placed on its
  rail by the gpudirect_check record's ``nics`` ({device: PCI address}), else by the topology's HCA
  PCI addresses;
- ``nic_pcie``: rdma.mlxconfig, per NIC (mlxconfig_judge.device_verdicts), placed by PCI address
  or device name; a NIC the output names otherwise (an mst device path) cannot be placed, so it
  counts on every rail not otherwise placed, named in the cell;
- ``peermem``: gpudirect.peermem with gpudirect.peermem_log, and ``iommu``: gpudirect.iommu, node-wide
  settings that affect every rail of the node;
- ``gpu_bandwidth``: ib_bandwidth_check's GPUDirect run, ib.<test>_bw_gpu.<device> with its
  _memory check (validate.yml runs it per rail with the rail's GPU), else an ib.<test>_bw.<device>
  run whose _memory check expected GPU memory: the rail's RDMA bandwidth from GPU memory; a run
  from host memory is no GPUDirect measurement.

Without a topology the rails are the pairs and devices the records name. Every cell keeps the
origin of the check it came from, so a replayed verdict stays labelled replayed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from clusterforge.validation.judges import load

verdicts = load("verdicts")

# The readiness checks of a rail, in the table's column order, with their headings.
COLUMNS = {
    "acs": "ACS on the path",
    "nic_pcie": "NIC PCIe settings",
    "peermem": "peer memory",
    "iommu": "IOMMU",
    "gpu_bandwidth": "GPU-memory bandwidth",
}
_BANDWIDTH = re.compile(r"^ib\.(?P<test>[a-z]+_bw)(?P<gpu>_gpu)?(?P<memory>_memory)?\.(?P<device>.+)$")


@dataclass
class Cell:
    status: str
    why: str
    origin: str = verdicts.LIVE


@dataclass
class Rail:
    rail: int | None  # position in the topology's rail order; None for a pair the topology does not list
    hca: str | None
    gpu: str | None  # GPU<i> from the topology
    nic_pci: str | None = None
    gpu_pci: list[str] = field(default_factory=list)
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def pair(self) -> str:
        """The GPU-NIC pair in the words a failure names it by: "mlx5_0 - GPU0 (0000:45:00.0 - 0000:4a:00.0)"."""
        nic = self.hca or (f"NIC {self.nic_pci}" if self.nic_pci else "NIC ?")
        gpu = self.gpu or (f"GPU {', '.join(self.gpu_pci)}" if self.gpu_pci else "GPU ?")
        pci = (
            f" ({self.nic_pci} - {', '.join(self.gpu_pci)})"
            if self.nic_pci and self.gpu_pci and self.gpu and self.hca
            else ""
        )
        return f"{nic} - {gpu}{pci}"

    @property
    def status(self) -> str:
        return verdicts.worst(cell.status for cell in self.cells.values())

    @property
    def origin(self) -> str:
        replayed = any(cell.origin == verdicts.REPLAYED for cell in self.cells.values())
        return verdicts.REPLAYED if replayed else verdicts.LIVE

    def document(self) -> dict[str, Any]:
        failures = [
            f"{COLUMNS[name]}: {cell.why}" for name, cell in self.cells.items() if cell.status in ("fail", "warn")
        ]
        return {
            "rail": self.rail,
            "hca": self.hca,
            "gpu": self.gpu,
            "nic_pci": self.nic_pci,
            "gpu_pci": self.gpu_pci,
            "pair": self.pair,
            "status": self.status,
            "origin": self.origin,
            "checks": {name: asdict(cell) for name, cell in self.cells.items()},
            "not_checked": [name for name, cell in self.cells.items() if cell.status == "skipped"],
            "affects": f"{self.pair}: " + "; ".join(failures) if failures else None,
        }


def _pci(text: Any) -> str | None:
    """0000:45:00.0 of a PCI address in either form; None for anything else (a device name, an mst path)."""
    value = str(text or "").strip().lower()
    if re.fullmatch(r"([0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", value):
        return value if value.count(":") == 2 else f"0000:{value}"
    return None


def _latest(checks: list, name: str):
    found = [check for check in checks if check.check == name]
    return found[-1] if found else None


def _node_wide(checks: list, names: tuple[str, ...]) -> Cell:
    """One cell of node-wide checks (the worst of them, with the messages of those not passing)."""
    found = [check for name in names if (check := _latest(checks, name)) is not None]
    if not found:
        return Cell(verdicts.SKIPPED, "not checked")
    status = verdicts.worst(check.status for check in found)
    bad = [check for check in found if check.status == status] if status != "pass" else found[:1]
    origin = verdicts.REPLAYED if any(check.replayed for check in found) else verdicts.LIVE
    return Cell(status, "; ".join(check.message for check in bad), origin)


def _rows(host: str, records: list[dict], checks: list, pairs: list, planned: dict[str, str]) -> list[Rail]:
    # PCI address -> RDMA device: the topology's plan, overridden by what the node reported.
    nics = {pci: device for device, pci in planned.items()}
    for record in records:
        if record.get("module") == "gpudirect_check" and isinstance(record.get("nics"), dict):
            nics.update({_pci(pci) or str(pci): str(device) for device, pci in record["nics"].items()})
    rows = [
        Rail(rail, hca, f"GPU{gpu}" if gpu is not None else None, planned.get(hca))
        for rail, (hca, gpu) in enumerate(pairs)
    ]
    by_hca = {row.hca: row for row in rows}

    def row_of(hca: str | None, nic_pci: str | None) -> Rail:
        row = by_hca.get(hca) if hca else next((r for r in rows if nic_pci and r.nic_pci == nic_pci), None)
        if row is None:
            row = Rail(None, hca, None)
            rows.append(row)
            if hca:
                by_hca[hca] = row
        row.nic_pci = row.nic_pci or nic_pci
        return row

    acs = _latest(checks, "pcie.acs")
    if acs is not None and isinstance(acs.measured, dict):
        per_pair = load("acs_judge").pair_verdicts(acs.measured)
        for label, (status, why) in per_pair.items():
            nic, _, gpu = label.partition("-")
            row = row_of(nics.get(nic), nic)
            row.gpu_pci.append(gpu)
            old = row.cells.get("acs")
            if old is None or verdicts.severity(status) > verdicts.severity(old.status):
                row.cells["acs"] = Cell(status, f"GPU {gpu}: {why}", acs.origin)
    for check in checks:
        if (match := _BANDWIDTH.match(check.check)) and not match["memory"]:
            row_of(match["device"], None)
    _nic_pcie(checks, rows, nics)
    peermem = _node_wide(checks, ("gpudirect.peermem", "gpudirect.peermem_log"))
    iommu = _node_wide(checks, ("gpudirect.iommu",))
    for row in rows:
        if "acs" not in row.cells:
            row.cells["acs"] = _unplaced(acs, "no lspci pair for this NIC")
        row.cells["peermem"] = peermem
        row.cells["iommu"] = iommu
        row.cells["gpu_bandwidth"] = _gpu_bandwidth(checks, row.hca)
        row.cells = {name: row.cells[name] for name in COLUMNS}
    return rows


def _unplaced(check, why: str) -> Cell:
    if check is None:
        return Cell(verdicts.SKIPPED, "not checked")
    if check.status == "skipped":
        return Cell(verdicts.SKIPPED, check.message, check.origin)
    return Cell(verdicts.SKIPPED, why, check.origin)


def _nic_pcie(checks: list, rows: list[Rail], nics: dict[str, str]) -> None:
    check = _latest(checks, "rdma.mlxconfig")
    if check is None or not isinstance(check.measured, dict):
        for row in rows:
            row.cells["nic_pcie"] = _unplaced(check, "no mlxconfig output")
        return
    per_device = load("mlxconfig_judge").device_verdicts(check.measured, check.expected or {})
    unplaced = {}
    for device, (status, why) in per_device.items():
        pci = _pci(device)
        hca = nics.get(pci) if pci else device
        row = next((r for r in rows if (hca and r.hca == hca) or (pci and r.nic_pci == pci)), None)
        if row is None:
            unplaced[device] = (status, why)
        else:
            row.cells["nic_pcie"] = Cell(status, why, check.origin)
    for row in rows:
        if "nic_pcie" in row.cells:
            continue
        if not unplaced:
            row.cells["nic_pcie"] = Cell(verdicts.SKIPPED, "this NIC is not in the mlxconfig output", check.origin)
            continue
        # The output names NICs by mst device: which rail each is cannot be told, so each counts everywhere.
        status = verdicts.worst(status for status, _ in unplaced.values())
        named = "; ".join(f"{device}: {why}" for device, (s, why) in unplaced.items() if s == status)
        row.cells["nic_pcie"] = Cell(status, f"{named} (NIC not placed on a rail)", check.origin)


def _gpu_bandwidth(checks: list, hca: str | None) -> Cell:
    if hca is None:
        return Cell(verdicts.SKIPPED, "no RDMA device name for this NIC")
    found = {}  # (a GPUDirect run's check, a _memory check) -> the latest such check
    for check in checks:
        if (match := _BANDWIDTH.match(check.check)) and match["device"] == hca:
            found[(bool(match["gpu"]), bool(match["memory"]))] = check
    # The GPUDirect run (use_cuda) when the rail had one, else the run without it.
    gpu_run = (True, False) in found
    bandwidth, memory = found.get((gpu_run, False)), found.get((gpu_run, True))
    if bandwidth is None:
        return Cell(verdicts.SKIPPED, "not measured")
    if memory is None or memory.expected != "gpu":
        return Cell(
            verdicts.SKIPPED, "measured from host memory only (no ib_write_bw --use_cuda run)", bandwidth.origin
        )
    status = verdicts.worst([bandwidth.status, memory.status])
    origin = verdicts.REPLAYED if bandwidth.replayed or memory.replayed else verdicts.LIVE
    why = bandwidth.message if memory.status == "pass" else f"{memory.message}; {bandwidth.message}"
    return Cell(status, why, origin)


def node_rails(host: str, records: list[dict], checks: list, cabling=None) -> list[dict[str, Any]]:
    """The rail table of one node (report.Node's records and checks): one entry per GPU-NIC pair."""
    pairs = cabling.rail_pairs.get(host, []) if cabling is not None else []
    planned = cabling.hca_pci.get(host, {}) if cabling is not None else {}
    return [row.document() for row in _rows(host, records, checks, pairs, planned)]
