"""Parsers for ``nvidia-smi -q`` (text), ``nvidia-smi -q -x`` (XML) and ``--query-gpu --format=csv``.

The text and XML parsers return the same typed report. The XML element names mirror the text
labels (``<pci_gpu_link_info><pcie_gen><max_link_gen>`` is "GPU Link Info / PCIe Generation / Max");
older drivers name a few things differently, which both parsers accept:

* "Clocks Throttle Reasons" / ``clocks_throttle_reasons`` before driver 535, "Clocks Event Reasons"
  / ``clocks_event_reasons`` after;
* ECC counters ``dram_uncorrectable``/``sram_uncorrectable`` (Ampere and later, split into
  ``sram_uncorrectable_parity``/``_secded`` from 535.161) or ``double_bit/total`` (Pascal era);
* ``<remapped_rows>N/A</remapped_rows>`` where row remapping does not exist or MIG hides it.

Stdlib only (runs on the nodes).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from ansible.module_utils.verdicts import ParseError, raise_if_failed


class NvidiaSmiParseError(ParseError):
    pass


# What nvidia-smi prints instead of its report when NVML cannot reach the driver or a GPU (every
# subcommand alike): the run failed, whatever the rest of the output holds.
NVML_FAILED = re.compile(
    r"NVIDIA-SMI has failed|Failed to initialize NVML|Unable to determine the device handle|"
    r"^No devices were found|Driver/library version mismatch"
)


@dataclass(frozen=True)
class PcieLink:
    gen_max: int | None = None
    gen_current: int | None = None
    width_max: int | None = None
    width_current: int | None = None


@dataclass(frozen=True)
class EccErrors:
    """Uncorrectable/correctable totals over every memory (DRAM, SRAM) the driver reports; None = N/A."""

    volatile_uncorrectable: int | None = None
    aggregate_uncorrectable: int | None = None
    volatile_correctable: int | None = None
    aggregate_correctable: int | None = None


@dataclass(frozen=True)
class RetiredPages:
    single_bit: int | None = None
    double_bit: int | None = None
    pending: bool | None = None


@dataclass(frozen=True)
class RemappedRows:
    correctable: int | None = None
    uncorrectable: int | None = None
    pending: bool | None = None
    failure: bool | None = None


@dataclass(frozen=True)
class GpuInfo:
    bus_id: str
    product_name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    minor_number: int | None = None
    persistence_mode: str | None = None
    mig_mode: str | None = None
    performance_state: str | None = None
    pcie: PcieLink = field(default_factory=PcieLink)
    ecc_mode: str | None = None
    ecc: EccErrors = field(default_factory=EccErrors)
    retired_pages: RetiredPages = field(default_factory=RetiredPages)
    remapped_rows: RemappedRows | None = None
    # Normalised reason -> active, e.g. {"gpu_idle": True, "hw_slowdown": False, ...}; empty when N/A.
    clock_event_reasons: dict[str, bool] = field(default_factory=dict)
    temperature_c: int | None = None
    fabric_state: str | None = None
    fabric_status: str | None = None


@dataclass(frozen=True)
class NvidiaSmiReport:
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    gpus: tuple[GpuInfo, ...]

    @property
    def gpu_count(self) -> int:
        # "Attached GPUs" counts every GPU the driver sees, also when -i selected fewer to print.
        return self.attached_gpus if self.attached_gpus is not None else len(self.gpus)


# --- value helpers -----------------------------------------------------------------------------

_NA = {"", "N/A", "n/a", "[N/A]", "Unknown Error", "[Unknown Error]", "Not Supported", "[Not Supported]"}


def _text(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value in _NA else value


def _int(value: str | None) -> int | None:
    """Leading integer of "36 C", "16x", "0", "2560 bank(s)"; None for N/A."""
    value = _text(value)
    if value is None:
        return None
    match = re.match(r"-?\d+", value)
    if not match:
        raise NvidiaSmiParseError("expected a number", text=value)
    return int(match.group())


def _yes_no(value: str | None) -> bool | None:
    value = _text(value)
    if value is None:
        return None
    if value in ("Yes", "Active"):
        return True
    if value in ("No", "Not Active"):
        return False
    raise NvidiaSmiParseError("expected Yes/No or Active/Not Active", text=value)


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


_REASON_ALIASES = {"idle": "gpu_idle", "display_clock_setting": "display_clocks_setting"}


def _reason_key(label: str) -> str:
    key = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    for prefix in ("clocks_event_reason_", "clocks_throttle_reason_"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
    return _REASON_ALIASES.get(key, key)


# --- text (-q) ---------------------------------------------------------------------------------


@dataclass
class _Node:
    key: str
    value: str | None
    children: list[_Node] = field(default_factory=list)

    def get(self, *path: str) -> _Node | None:
        node: _Node | None = self
        for key in path:
            if node is None:
                return None
            node = next((c for c in node.children if c.key == key), None)
        return node

    def val(self, *path: str) -> str | None:
        node = self.get(*path)
        return node.value if node is not None else None

    def walk(self):
        for child in self.children:
            yield child
            yield from child.walk()


_KV = re.compile(r"^(?P<key>\S.*?)\s+:\s?(?P<value>.*)$")


def _tree(text: str) -> _Node:
    """Indentation tree of the -q report: a line is "Key : value" or a section title."""
    root = _Node("", None)
    stack: list[tuple[int, _Node]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.expandtabs(4).rstrip()
        if not line.strip() or line.startswith("====="):
            continue
        indent = len(line) - len(line.lstrip(" "))
        match = _KV.match(line.strip())
        node = _Node(match["key"], match["value"]) if match else _Node(line.strip(), None)
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root


def _ecc_text(section: _Node | None, kind: str) -> tuple[int | None, int | None]:
    """(uncorrectable, correctable) of the Volatile or Aggregate block."""
    block = section.get(kind) if section else None
    if block is None:
        return None, None
    unc: list[int | None] = []
    corr: list[int | None] = []
    for node in block.walk():
        label = node.key.lower()
        if "threshold" in label or node.value is None:
            continue
        if "uncorrectable" in label:
            unc.append(_int(node.value))
        elif "correctable" in label:
            corr.append(_int(node.value))
    # Pascal-era text: "Double Bit / Total" under the block; count only the totals there.
    for name, bucket in (("Double Bit", unc), ("Single Bit", corr)):
        bits = block.get(name)
        if bits is not None:
            bucket[:] = [_int(bits.val("Total"))]
    return _sum(unc), _sum(corr)


def _gpu_from_text(bus_id: str, node: _Node) -> GpuInfo:
    link = node.get("PCI", "GPU Link Info")
    pcie = PcieLink()
    if link is not None:
        pcie = PcieLink(
            gen_max=_int(link.val("PCIe Generation", "Max")),
            gen_current=_int(link.val("PCIe Generation", "Current")),
            width_max=_int(link.val("Link Width", "Max")),
            width_current=_int(link.val("Link Width", "Current")),
        )
    ecc_section = node.get("ECC Errors")
    vol_unc, vol_corr = _ecc_text(ecc_section, "Volatile")
    agg_unc, agg_corr = _ecc_text(ecc_section, "Aggregate")
    pages = node.get("Retired Pages")
    retired = RetiredPages()
    if pages is not None:
        pending = pages.val("Pending Page Blacklist") or pages.val("Pending Page Retirement")
        retired = RetiredPages(
            single_bit=_int(pages.val("Single Bit ECC")),
            double_bit=_int(pages.val("Double Bit ECC")),
            pending=_yes_no(pending),
        )
    rows = node.get("Remapped Rows")
    remapped = None
    if rows is not None and rows.children:
        remapped = RemappedRows(
            correctable=_int(rows.val("Correctable Error")),
            uncorrectable=_int(rows.val("Uncorrectable Error")),
            pending=_yes_no(rows.val("Pending")),
            failure=_yes_no(rows.val("Remapping Failure Occurred")),
        )
    reasons_node = node.get("Clocks Event Reasons") or node.get("Clocks Throttle Reasons")
    reasons: dict[str, bool] = {}
    if reasons_node is not None:
        for reason in reasons_node.walk():
            active = _yes_no(reason.value)
            if active is not None:
                reasons[_reason_key(reason.key)] = active
    return GpuInfo(
        bus_id=bus_id,
        product_name=_text(node.val("Product Name")),
        uuid=_text(node.val("GPU UUID")),
        serial=_text(node.val("Serial Number")),
        minor_number=_int(node.val("Minor Number")),
        persistence_mode=_text(node.val("Persistence Mode")),
        mig_mode=_text(node.val("MIG Mode", "Current")),
        performance_state=_text(node.val("Performance State")),
        pcie=pcie,
        ecc_mode=_text(node.val("ECC Mode", "Current")),
        ecc=EccErrors(vol_unc, agg_unc, vol_corr, agg_corr),
        retired_pages=retired,
        remapped_rows=remapped,
        clock_event_reasons=reasons,
        temperature_c=_int(node.val("Temperature", "GPU Current Temp")),
        fabric_state=_text(node.val("Fabric", "State")),
        fabric_status=_text(node.val("Fabric", "Status")),
    )


_GPU_TITLE = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$")


def parse_query_text(text: str, source: str = "nvidia-smi -q") -> NvidiaSmiReport:
    """Parse ``nvidia-smi -q`` (also ``-q -d SECTION`` and ``-a``) into a report."""
    if "NVSMI LOG" not in text and "Attached GPUs" not in text:
        raise NvidiaSmiParseError("not nvidia-smi -q output (no NVSMI LOG header)", source=source)
    try:
        root = _tree(text)
        gpus = []
        for node in root.children:
            match = _GPU_TITLE.match(node.key) if node.value is None else None
            if match:
                gpus.append(_gpu_from_text(match["bus"], node))
        report = NvidiaSmiReport(
            driver_version=_text(root.val("Driver Version")),
            cuda_version=_text(root.val("CUDA Version")),
            attached_gpus=_int(root.val("Attached GPUs")),
            gpus=tuple(gpus),
        )
    except NvidiaSmiParseError as exc:
        raise NvidiaSmiParseError(exc.reason, source=source, text=exc.text) from None
    if report.attached_gpus is None and not report.gpus:
        raise NvidiaSmiParseError("no 'Attached GPUs' line and no GPU section", source=source)
    return report


# --- XML (-q -x) -------------------------------------------------------------------------------


def _x(elem: ET.Element | None, path: str) -> str | None:
    if elem is None:
        return None
    found = elem.find(path)
    return found.text if found is not None else None


def _ecc_xml(block: ET.Element | None) -> tuple[int | None, int | None]:
    if block is None:
        return None, None
    bits = block.find("double_bit")
    if bits is not None:  # Pascal-era layout: only the totals count
        return _int(_x(bits, "total")), _int(_x(block, "single_bit/total"))
    unc: list[int | None] = []
    corr: list[int | None] = []
    for child in block:
        tag = child.tag
        if "threshold" in tag:
            continue
        if "uncorrectable" in tag:
            unc.append(_int(child.text))
        elif "correctable" in tag:
            corr.append(_int(child.text))
    return _sum(unc), _sum(corr)


def _gpu_from_xml(gpu: ET.Element) -> GpuInfo:
    link = gpu.find("pci/pci_gpu_link_info")
    pcie = PcieLink(
        gen_max=_int(_x(link, "pcie_gen/max_link_gen")),
        gen_current=_int(_x(link, "pcie_gen/current_link_gen")),
        width_max=_int(_x(link, "link_widths/max_link_width")),
        width_current=_int(_x(link, "link_widths/current_link_width")),
    )
    vol_unc, vol_corr = _ecc_xml(gpu.find("ecc_errors/volatile"))
    agg_unc, agg_corr = _ecc_xml(gpu.find("ecc_errors/aggregate"))
    pages = gpu.find("retired_pages")
    retired = RetiredPages()
    if pages is not None:
        flags = [_yes_no(_x(pages, name)) for name in ("pending_blacklist", "pending_retirement")]
        known = [f for f in flags if f is not None]
        retired = RetiredPages(
            single_bit=_int(_x(pages, "multiple_single_bit_retirement/retired_count")),
            double_bit=_int(_x(pages, "double_bit_retirement/retired_count")),
            pending=any(known) if known else None,
        )
    rows = gpu.find("remapped_rows")
    remapped = None
    if rows is not None and len(rows):
        remapped = RemappedRows(
            correctable=_int(_x(rows, "remapped_row_corr")),
            uncorrectable=_int(_x(rows, "remapped_row_unc")),
            pending=_yes_no(_x(rows, "remapped_row_pending")),
            failure=_yes_no(_x(rows, "remapped_row_failure")),
        )
    reasons_elem = gpu.find("clocks_event_reasons")
    if reasons_elem is None:
        reasons_elem = gpu.find("clocks_throttle_reasons")
    reasons: dict[str, bool] = {}
    for reason in reasons_elem if reasons_elem is not None else ():
        active = _yes_no(reason.text)
        if active is not None:
            reasons[_reason_key(reason.tag)] = active
    bus_id = gpu.get("id") or _x(gpu, "pci/pci_bus_id")
    if not bus_id:
        raise NvidiaSmiParseError("<gpu> without id attribute or pci_bus_id")
    return GpuInfo(
        bus_id=bus_id,
        product_name=_text(_x(gpu, "product_name")),
        uuid=_text(_x(gpu, "uuid")),
        serial=_text(_x(gpu, "serial")),
        minor_number=_int(_x(gpu, "minor_number")),
        persistence_mode=_text(_x(gpu, "persistence_mode")),
        mig_mode=_text(_x(gpu, "mig_mode/current_mig")),
        performance_state=_text(_x(gpu, "performance_state")),
        pcie=pcie,
        ecc_mode=_text(_x(gpu, "ecc_mode/current_ecc")),
        ecc=EccErrors(vol_unc, agg_unc, vol_corr, agg_corr),
        retired_pages=retired,
        remapped_rows=remapped,
        clock_event_reasons=reasons,
        temperature_c=_int(_x(gpu, "temperature/gpu_temp")),
        fabric_state=_text(_x(gpu, "fabric/state")),
        fabric_status=_text(_x(gpu, "fabric/status")),
    )


def parse_query_xml(text: str, source: str = "nvidia-smi -q -x") -> NvidiaSmiReport:
    """Parse ``nvidia-smi -q -x`` into the same report as parse_query_text()."""
    try:
        # The DOCTYPE names a local DTD file; expat does not fetch external DTDs.
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise NvidiaSmiParseError(f"not well-formed XML: {exc}", source=source) from None
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiParseError(f"root element is <{root.tag}>, expected <nvidia_smi_log>", source=source)
    try:
        return NvidiaSmiReport(
            driver_version=_text(_x(root, "driver_version")),
            cuda_version=_text(_x(root, "cuda_version")),
            attached_gpus=_int(_x(root, "attached_gpus")),
            gpus=tuple(_gpu_from_xml(gpu) for gpu in root.findall("gpu")),
        )
    except NvidiaSmiParseError as exc:
        raise NvidiaSmiParseError(exc.reason, source=source, text=exc.text) from None


def parse_query(text: str, source: str = "nvidia-smi") -> NvidiaSmiReport:
    """Either format, told apart by the first character."""
    raise_if_failed(text, NVML_FAILED, source, "nvidia-smi failed")
    if text.lstrip().startswith("<"):
        return parse_query_xml(text, source)
    return parse_query_text(text, source)


# --- CSV (--query-gpu=... --format=csv) --------------------------------------------------------


class QueryGpuRows(tuple):
    """The rows of a --query-gpu capture, and ``samples``: how many rows followed each header line.

    nvidia-smi prints its header once per run and one row per GPU, so a one-shot capture is one
    sample whose rows are the GPUs; a capture made by running the query again and again repeats the
    header before each sample. A looped run (-l/-lms) prints its header once and repeats the rows.
    """

    samples: tuple[int, ...] = ()


def parse_query_gpu_csv(text: str, source: str = "nvidia-smi --query-gpu") -> QueryGpuRows:
    """Rows of ``--format=csv`` output keyed by field name ("memory.total [MiB]" -> "memory.total").

    Values stay strings with their units ("23028 MiB"): the fields asked for decide their meaning.
    A line equal to the header starts another sample (QueryGpuRows.samples).
    """
    lines = [line for line in text.replace("\r", "").splitlines() if line.strip()]
    if not lines:
        raise NvidiaSmiParseError("empty output", source=source)
    header = [re.sub(r"\s*\[.*\]$", "", name.strip()) for name in lines[0].split(",")]
    if not all(re.fullmatch(r"[a-z_][a-z0-9_.]*", name) for name in header):
        raise NvidiaSmiParseError("first line is not a --query-gpu CSV header", source=source, line=1, text=lines[0])
    rows = []
    samples = [0]
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == lines[0].strip():
            samples.append(0)
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(header):
            raise NvidiaSmiParseError(f"{len(values)} fields, header has {len(header)}", source=source, line=number)
        rows.append({name: values[i] for i, name in enumerate(header)})
        samples[-1] += 1
    parsed = QueryGpuRows(rows)
    parsed.samples = tuple(samples)
    return parsed
