"""Judge a node's GPUs: parsed nvidia-smi/topology/kernel-log/dcgmi data against an expectation.

Pure functions, stdlib only (they run on the nodes). Each check returns one CheckResult; per-GPU
checks aggregate to the worst GPU and keep every GPU's value in ``measured`` ({bus_id: value}).

The expectation keys each judge reads are its table below (QUERY_KEYS, TOPOLOGY_KEYS, XID_KEYS,
DCGMI_KEYS); all are optional: a check without its key is skipped or uses the default named there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ansible.module_utils.expectation_keys import Key
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, PASS, SKIPPED, WARN, CheckResult, result, skipped, worst

# Warn above this GPU temperature. NVIDIA gives 85 C as "GPU Max Operating Temp" for the A100 SXM4
# (shared fixture a100-sxm4-40gb-8gpu-nvidia-smi-a) and the T4 (telegraf tesla-t4.xml,
# gpu_temp_max_gpu_threshold); above it the driver starts software thermal slowdown.
TEMPERATURE_WARN_C = 85

# Clock event ("throttle") reasons, NVML nvmlClocksEventReasons. These are normal: the GPU is idle,
# clocks were set by the admin (applications clocks), the power-management loop keeps the board
# within its power limit (SW power cap), or boost is synchronised across a group / held by a display.
THROTTLE_OK = frozenset(
    {"gpu_idle", "applications_clocks_setting", "sw_power_cap", "sync_boost", "display_clocks_setting"}
)
# These mean the hardware protects itself: HW slowdown (clock halved or more by thermal or power
# brake assertion, e.g. from the PSU), HW thermal, HW power brake, and SW thermal slowdown (above
# the max operating temperature). Real example: shared fixture h100-8gpu-nvidia-smi-q-535.161.08
# shows HW Slowdown + HW Power Brake Slowdown active on all 8 GPUs.
THROTTLE_FAIL = frozenset({"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"})

# Retired pages at or above which the GPU is failed (pages retire on ECC errors, pre-Ampere).
# facebookresearch/gcm check-nvidia-smi gpu_retired_pages uses 10 as its default limit.
RETIRED_PAGES_FAIL = 10

# Xids that are usually the application's fault (graphics engine exception, MMU fault, GPU stopped
# processing, preemptive cleanup): NVIDIA's Xid catalog and gpud (components/accelerator/nvidia/xid)
# say to debug the application first. A node being brought up runs no user code, so they warn; any
# other Xid (79 fallen off the bus, 48 DBE, 74 NVLink, 94/95 ECC containment, 119 GSP, ...) fails.
XID_APPLICATION = frozenset({13, 31, 43, 45})

# NVLinks per GPU on NVSwitch baseboards, by NVLink generation: V100 (HGX-2) 6, A100 12, H100 18,
# B200 18 (NVIDIA datasheets: 300, 600, 900 and 1800 GB/s total at 50, 50, 50 and 100 GB/s a link).
NVLINKS_PER_GPU = {2: 6, 3: 12, 4: 18, 5: 18}

GPU_COUNT = Key(("int",), "GPUs the output must show")
NVSWITCH = Key(("bool",), "GPUs talk through NVSwitches: an unregistered fabric fails, NVLinks count per peer")
# judge_gpus on nvidia-smi -q / -q -x.
QUERY_KEYS = {
    "gpu_count": GPU_COUNT,
    "product_name": Key(("str",), "product name every GPU reports"),
    "driver_version": Key(("str",), "pinned driver version"),
    "cuda_version": Key(("str",), "pinned CUDA version the driver reports"),
    "persistence_mode": Key(("bool",), "persistence mode every GPU must have (default true)"),
    "ecc_mode": Key(("bool",), "true: ECC must be enabled"),
    "pcie_gen": Key(("int",), "PCIe generation the platform provides (a lower link maximum fails)"),
    "pcie_width": Key(("int",), "PCIe width the platform provides"),
    "under_load": Key(("bool",), "GPUs are busy: a link below its maximum fails instead of warning"),
    "temperature_warn_c": Key(("int",), f"warn above this temperature (default {TEMPERATURE_WARN_C} C)"),
    "nvswitch": NVSWITCH,
}
# judge_topology on nvidia-smi topo -m (and the NVLink part of judge_gpus).
TOPOLOGY_KEYS = {
    "gpu_count": GPU_COUNT,
    "nvlinks_per_gpu": Key(("int",), "NVLinks every GPU must have up"),
    "nvswitch": NVSWITCH,
    "nvlink_generation": Key(
        ("int",),
        "2 to 5: on NVSwitch boards gives nvlinks_per_gpu when that is unset (V100 6, A100 12, H100 and B200 18)",
        requires=("nvswitch",),
        choices=tuple(NVLINKS_PER_GPU),
    ),
}
# judge_xid on a kernel log: every Xid/SXid and lost-GPU message is judged, nothing to expect.
XID_KEYS: dict = {}
DCGMI_KEYS = {"required_tests": Key(("list",), "dcgmi tests that must have run", items=("str",))}


def _per_gpu(
    check: str, gpus: Iterable[Any], judge: Callable[[Any], tuple[str, Any, str | None]], expected: Any, ok: str
) -> CheckResult:
    statuses = []
    measured: dict[str, Any] = {}
    notes = []
    skip_reason = "not reported"
    for gpu in gpus:
        status, value, note = judge(gpu)
        statuses.append(status)
        measured[gpu.bus_id] = value
        if status in (WARN, FAIL):
            notes.append(f"{gpu.bus_id}: {note}")
        elif status == SKIPPED and note:
            skip_reason = note
    status = worst(statuses)
    if status == SKIPPED:
        return result(check, SKIPPED, measured, expected, skip_reason)
    return result(check, status, measured, expected, "; ".join(notes) if notes else ok)


def judge_count(got: int, expected: dict) -> CheckResult:
    """GPUs seen against expected["gpu_count"]."""
    want = expected.get("gpu_count")
    if want is None:
        return result("gpu.count", SKIPPED, got, None, f"{got} GPUs; no expected count")
    status = PASS if got == want else FAIL
    return result("gpu.count", status, got, want, f"{got} of {want} expected GPUs visible to the driver")


def _same(check: str, got: str | None, want: str | None, what: str) -> CheckResult:
    if want is None:
        return skipped(check, f"no pinned {what}")
    if got is None:
        return result(check, FAIL, None, want, f"{what} not reported")
    status = PASS if str(got) == str(want) else FAIL
    return result(check, status, got, want, f"{what} {got}, pinned {want}")


def _model(report, expected: dict) -> CheckResult:
    want = expected.get("product_name")
    names = {g.bus_id: g.product_name for g in report.gpus}
    if want is None:
        distinct = {n for n in names.values() if n}
        status = WARN if len(distinct) > 1 else PASS if distinct else SKIPPED
        return result("gpu.model", status, names, None, f"models: {', '.join(sorted(distinct)) or 'not reported'}")
    if not any(names.values()):
        return skipped("gpu.model", "product name not in this output", want)
    bad = {bus: name for bus, name in names.items() if (name or "").lower() != want.lower()}
    status = FAIL if bad else PASS
    message = f"all {len(names)} GPUs are {want}" if not bad else f"unexpected model on {', '.join(sorted(bad))}"
    return result("gpu.model", status, names, want, message)


def _pcie(gpu, expected: dict) -> tuple[str, Any, str | None]:
    link = gpu.pcie
    value = {"gen": link.gen_current, "gen_max": link.gen_max, "width": link.width_current, "width_max": link.width_max}
    if link.gen_current is None or link.gen_max is None:
        return SKIPPED, value, "PCIe link not reported"
    want_gen, want_width = expected.get("pcie_gen"), expected.get("pcie_width")
    if (want_gen and link.gen_max < want_gen) or (want_width and link.width_max and link.width_max < want_width):
        return (
            FAIL,
            value,
            f"link maximum Gen{link.gen_max} x{link.width_max} below the platform's Gen{want_gen} x{want_width}",
        )
    degraded = link.gen_current < link.gen_max or (link.width_current or 0) < (link.width_max or 0)
    if not degraded:
        return PASS, value, None
    note = f"running Gen{link.gen_current} x{link.width_current} of Gen{link.gen_max} x{link.width_max}"
    # GPUs drop the link speed to save power when idle (P8 shows Gen1), so a degraded link is only
    # proof of a fault when the caller measured under load; at idle it is a warning to re-check.
    if expected.get("under_load"):
        return FAIL, value, note + " under load"
    return WARN, value, note + " (idle GPUs downshift PCIe; re-check under load)"


def _ecc(gpu) -> tuple[str, Any, str | None]:
    ecc = gpu.ecc
    value = {
        "volatile_uncorrectable": ecc.volatile_uncorrectable,
        "aggregate_uncorrectable": ecc.aggregate_uncorrectable,
    }
    if ecc.volatile_uncorrectable is None and ecc.aggregate_uncorrectable is None:
        return SKIPPED, value, "ECC counters not reported"
    bad = {k: v for k, v in value.items() if v}
    return (FAIL, value, f"uncorrectable ECC errors {bad}") if bad else (PASS, value, None)


def _remap(gpu) -> tuple[str, Any, str | None]:
    rows = gpu.remapped_rows
    if rows is None:
        return SKIPPED, None, "row remapping not reported (pre-Ampere GPU or MIG enabled)"
    value = {"pending": rows.pending, "failure": rows.failure, "uncorrectable": rows.uncorrectable}
    # NVIDIA A100 memory error management: a pending remap needs a GPU reset, a remapping failure
    # means the bank has no spare rows left and the GPU is to be replaced.
    if rows.failure:
        return FAIL, value, "row remapping failure occurred"
    if rows.pending:
        return FAIL, value, "row remap pending (reset the GPU)"
    if rows.uncorrectable:
        return WARN, value, f"{rows.uncorrectable} rows remapped after uncorrectable errors"
    return PASS, value, None


def _retired(gpu) -> tuple[str, Any, str | None]:
    pages = gpu.retired_pages
    value = {"single_bit": pages.single_bit, "double_bit": pages.double_bit, "pending": pages.pending}
    if pages.single_bit is None and pages.double_bit is None and pages.pending is None:
        return SKIPPED, value, "page retirement not reported (Ampere and later remap rows instead)"
    total = (pages.single_bit or 0) + (pages.double_bit or 0)
    if pages.pending:
        return FAIL, value, "page retirement pending (reload the driver)"
    if total >= RETIRED_PAGES_FAIL:
        return FAIL, value, f"{total} retired pages (limit {RETIRED_PAGES_FAIL})"
    if total:
        return WARN, value, f"{total} retired pages"
    return PASS, value, None


def _throttle(gpu) -> tuple[str, Any, str | None]:
    active = sorted(reason for reason, on in gpu.clock_event_reasons.items() if on)
    if not gpu.clock_event_reasons:
        return SKIPPED, None, "clock event reasons not reported"
    bad = [r for r in active if r in THROTTLE_FAIL]
    unknown = [r for r in active if r not in THROTTLE_FAIL and r not in THROTTLE_OK]
    if bad:
        return FAIL, active, f"clocks held down by {', '.join(bad)}"
    if unknown:
        return WARN, active, f"unknown clock event reason {', '.join(unknown)}"
    return PASS, active, None


def _temperature(gpu, limit: int) -> tuple[str, Any, str | None]:
    if gpu.temperature_c is None:
        return SKIPPED, None, "temperature not reported"
    if gpu.temperature_c > limit:
        return WARN, gpu.temperature_c, f"{gpu.temperature_c} C above {limit} C"
    return PASS, gpu.temperature_c, None


def _persistence(gpu, want: bool) -> tuple[str, Any, str | None]:
    if gpu.persistence_mode is None:
        return SKIPPED, None, "persistence mode not reported"
    on = gpu.persistence_mode == "Enabled"
    return (
        (PASS, gpu.persistence_mode, None)
        if on == want
        else (FAIL, gpu.persistence_mode, f"persistence mode {gpu.persistence_mode}")
    )


def _ecc_mode(gpu) -> tuple[str, Any, str | None]:
    if gpu.ecc_mode is None:
        return SKIPPED, None, "ECC mode not reported"
    return (PASS, gpu.ecc_mode, None) if gpu.ecc_mode == "Enabled" else (FAIL, gpu.ecc_mode, f"ECC {gpu.ecc_mode}")


def _fabric(gpu, nvswitch: bool) -> tuple[str, Any, str | None]:
    value = {"state": gpu.fabric_state, "status": gpu.fabric_status}
    if gpu.fabric_state is None:
        # Only Hopper and later report the fabric probe; on A100 HGX check nvidia-fabricmanager itself.
        return SKIPPED, value, "fabric state not reported by this GPU/driver"
    if gpu.fabric_state == "Completed" and gpu.fabric_status in (None, "Success"):
        return PASS, value, None
    # Until the fabric manager has registered the GPU, CUDA cannot use NVLink through the switches.
    return (FAIL if nvswitch else WARN), value, f"fabric state {gpu.fabric_state}, status {gpu.fabric_status}"


def nvlinks_wanted(expected: dict) -> int | None:
    """expected["nvlinks_per_gpu"], else on NVSwitch systems the count of the NVLink generation."""
    want = expected.get("nvlinks_per_gpu")
    if want is None and expected.get("nvswitch"):
        # Direct-link boards cable fewer links per peer, so the generation alone says nothing there.
        want = NVLINKS_PER_GPU.get(expected.get("nvlink_generation"))
    return want


def judge_nvlinks(topology, expected: dict) -> CheckResult:
    """NVLinks per GPU from ``nvidia-smi topo -m`` against nvlinks_wanted(expected).

    On NVSwitch systems every GPU pair shows the GPU's whole bond (NV12 on A100, NV18 on H100), so
    a GPU's count is the smallest over its peers; with direct links (no switch) the pair counts add up.
    """
    want = nvlinks_wanted(expected)
    if topology is None:
        return skipped("gpu.nvlink", "no topology output", want)
    if want is None:
        return skipped("gpu.nvlink", "no expected NVLink count", want)
    counts = {}
    for gpu in topology.gpus:
        peers = topology.nvlink_peers(gpu)
        if not peers:
            counts[gpu] = 0
        elif expected.get("nvswitch"):
            counts[gpu] = min(peers.values())
        else:
            counts[gpu] = sum(peers.values())
    short = {gpu: n for gpu, n in counts.items() if n < want}
    status = FAIL if short or not counts else PASS
    message = f"{len(counts)} GPUs with {want} NVLinks each" if status == PASS else f"too few NVLinks: {short}"
    return result("gpu.nvlink", status, counts, want, message)


def judge_topology(topology, expected: dict) -> list[CheckResult]:
    """GPU count and NVLinks of ``nvidia-smi topo -m``."""
    return [judge_count(len(topology.gpus), expected), judge_nvlinks(topology, expected)]


def judge_xid(events) -> CheckResult:
    """Xids and SXids by their code. A GPU the driver says it lost (fallen off the bus, not
    initialised) fails whether or not an Xid came with it: a driver that finds the GPU gone while
    loading, or cannot start it, logs no Xid at all."""
    if events is None:
        return skipped("gpu.xid", "kernel log not read")
    if not events:
        return result("gpu.xid", PASS, [], [], "no Xid/SXid events or lost GPUs in the kernel log")
    statuses = []
    seen = []
    for event in events:
        if event.kind == "lost":
            statuses.append(FAIL)
            label = f"GPU {event.pci} {event.detail}"
        elif event.kind == "Xid":
            statuses.append(WARN if event.code in XID_APPLICATION else FAIL)
            label = f"Xid {event.code} on {event.pci}"
        else:
            statuses.append(FAIL if event.fatal else WARN)
            label = f"SXid {event.code} on {event.pci}"
        if label not in seen:
            seen.append(label)
    return result("gpu.xid", worst(statuses), seen, [], f"{len(events)} events: {', '.join(seen)}")


def judge_gpus(report, expected: dict, *, topology=None, xid_events=None) -> list[CheckResult]:
    """Every GPU check for one node; report None means nvidia-smi found no driver/GPU."""
    if report is None or not report.gpus:
        want = expected.get("gpu_count")
        if want:
            got = report.gpu_count if report is not None else 0
            return [result("gpu.count", FAIL, got, want, f"{got} of {want} expected GPUs visible")]
        return [skipped("gpu.count", NO_HARDWARE, want)]
    gpus = report.gpus
    limit = expected.get("temperature_warn_c", TEMPERATURE_WARN_C)
    persistence = expected.get("persistence_mode", True)
    pcie_want = {"gen": expected.get("pcie_gen", "max"), "width": expected.get("pcie_width", "max")}
    results = [
        judge_count(report.gpu_count, expected),
        _model(report, expected),
        _same("gpu.driver_version", report.driver_version, expected.get("driver_version"), "driver"),
        _same("gpu.cuda_version", report.cuda_version, expected.get("cuda_version"), "CUDA version"),
        _per_gpu("gpu.pcie", gpus, lambda g: _pcie(g, expected), pcie_want, "every link at its maximum"),
        _per_gpu("gpu.ecc", gpus, _ecc, 0, "no uncorrectable ECC errors"),
        _per_gpu("gpu.row_remap", gpus, _remap, "no pending or failed remaps", "no pending or failed row remaps"),
        _per_gpu("gpu.retired_pages", gpus, _retired, f"< {RETIRED_PAGES_FAIL}", "no retired pages"),
        _per_gpu("gpu.throttle", gpus, _throttle, sorted(THROTTLE_OK), "no hardware or thermal slowdown"),
        _per_gpu(
            "gpu.temperature", gpus, lambda g: _temperature(g, limit), f"<= {limit}", f"all at or below {limit} C"
        ),
        _per_gpu(
            "gpu.persistence", gpus, lambda g: _persistence(g, persistence), persistence, "persistence mode as expected"
        ),
        _per_gpu(
            "gpu.fabric", gpus, lambda g: _fabric(g, bool(expected.get("nvswitch"))), "Completed", "fabric registered"
        ),
        judge_nvlinks(topology, expected),
        judge_xid(xid_events),
    ]
    if expected.get("ecc_mode"):
        results.append(_per_gpu("gpu.ecc_mode", gpus, _ecc_mode, "Enabled", "ECC enabled"))
    return results


def judge_dcgmi(diag, expected: dict | None = None) -> list[CheckResult]:
    """One result per dcgmi diag test: Pass/Warn/Fail/Skip map to pass/warn/fail/skipped."""
    expected = expected or {}
    if diag is None:
        return [skipped("dcgmi", NO_HARDWARE)]
    mapping = {"Pass": PASS, "Warn": WARN, "Fail": FAIL, "Skip": SKIPPED}
    results = []
    for test in diag.tests:
        text = "; ".join([*test.details, *test.messages]) or test.result
        results.append(result(f"dcgmi.{test.name}", mapping[test.result], test.result, "Pass", text))
    names = {t.name for t in diag.tests}
    for name in expected.get("required_tests", ()):
        if name not in names:
            results.append(result(f"dcgmi.{name}", FAIL, None, "Pass", "required test did not run"))
    return results
