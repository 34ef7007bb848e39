"""Parser for ``nvidia-smi topo -m``: the GPU/NIC connection matrix, NVLink counts and affinities.

Cells are X (self), NV<n> (n bonded NVLinks), PIX, PXB, PHB, NODE or SYS (PCIe paths, legend in the
output). Columns are separated by tabs in raw output and by runs of spaces where tabs were expanded;
NIC rows carry no affinity columns. Stdlib only (runs on the nodes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible.module_utils.nvidia_smi import NVML_FAILED
from ansible.module_utils.verdicts import ParseError, raise_if_failed


class TopoParseError(ParseError):
    pass


PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_DEVICE = re.compile(r"^(GPU|NIC|mlx\d*_)\S*$")
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|N/A)$")


@dataclass(frozen=True)
class Topology:
    devices: tuple[str, ...]  # matrix columns in order: GPU0.., NIC0..
    matrix: dict[str, dict[str, str]]  # row -> column -> cell
    cpu_affinity: dict[str, str | None]  # GPU rows only
    numa_affinity: dict[str, str | None]
    gpu_numa_id: dict[str, str | None]
    nic_names: dict[str, str]  # NIC0 -> mlx5_0 (from the NIC legend)

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(d for d in self.devices if d.startswith("GPU"))

    @property
    def nics(self) -> tuple[str, ...]:
        return tuple(d for d in self.devices if not d.startswith("GPU"))

    def nvlinks(self, a: str, b: str) -> int:
        """Bonded NVLinks between two devices; 0 for a PCIe path."""
        cell = self.matrix[a][b]
        return int(cell[2:]) if cell.startswith("NV") else 0

    def nvlink_peers(self, gpu: str) -> dict[str, int]:
        return {peer: self.nvlinks(gpu, peer) for peer in self.gpus if peer != gpu}


def _split(line: str) -> list[str]:
    if "\t" in line:
        return [cell.strip() for cell in line.split("\t")]
    return [cell.strip() for cell in re.split(r"\s{2,}", line)]


def _none(value: str | None) -> str | None:
    return None if value in (None, "", "N/A") else value


def parse_topo_matrix(text: str, source: str = "nvidia-smi topo -m") -> Topology:
    raise_if_failed(text, NVML_FAILED, source, "nvidia-smi failed")
    lines = text.replace("\r", "").splitlines()
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line)), None)
    if header_at is None:
        raise TopoParseError("no matrix header (a line starting with whitespace then GPU0)", source=source)
    header = [cell for cell in _split(lines[header_at]) if cell]
    devices = tuple(cell for cell in header if _DEVICE.match(cell))
    extras = header[len(devices) :]  # "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" when present
    if list(header[: len(devices)]) != list(devices):
        raise TopoParseError("device columns are not contiguous", source=source, line=header_at + 1)

    matrix: dict[str, dict[str, str]] = {}
    cpu: dict[str, str | None] = {}
    numa: dict[str, str | None] = {}
    gpu_numa: dict[str, str | None] = {}
    for number, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        if not line.strip():
            break  # the matrix ends at the first blank line, before the legend
        tokens = line.split()
        name, cells = tokens[0], tokens[1 : 1 + len(devices)]
        if name not in devices or len(cells) != len(devices) or not all(_CELL.match(c) for c in cells):
            raise TopoParseError(
                f"row does not match the {len(devices)} columns", source=source, line=number, text=line
            )
        if cells[devices.index(name)] != "X":
            raise TopoParseError(f"{name} is not X on the diagonal", source=source, line=number, text=line)
        matrix[name] = {device: cells[i] for i, device in enumerate(devices)}
        rest = {extra: value for extra, value in zip(extras, tokens[1 + len(devices) :])}  # noqa: B905 (3.8 nodes)
        if name.startswith("GPU"):
            cpu[name] = _none(rest.get("CPU Affinity"))
            numa[name] = _none(rest.get("NUMA Affinity"))
            gpu_numa[name] = _none(rest.get("GPU NUMA ID"))
    missing = [d for d in devices if d not in matrix]
    if missing:
        raise TopoParseError(f"no row for {', '.join(missing)}", source=source)

    nic_names = {}
    for line in lines:
        match = re.match(r"^\s+(NIC\d+):\s+(\S+)\s*$", line)
        if match:
            nic_names[match[1]] = match[2]
    return Topology(devices, matrix, cpu, numa, gpu_numa, nic_names)
