"""Judge an nccl-tests run: correctness always, bus bandwidth against what the hardware allows.

Pure functions, stdlib only. The expectation keys are NCCL_KEYS below, all optional.

Bandwidth is judged on the largest messages only: rows of 1 GiB and more, or else the three largest
sizes present; small messages measure latency, and the printed "Avg bus bandwidth" averages over
every size, so it says more about the chosen size range than about the fabric.
"""

from __future__ import annotations

from ansible.module_utils.expectation_keys import Key
from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, WARN, CheckResult, not_positive, result, skipped

EFFICIENCY_FLOOR = 0.80
LARGE_MESSAGE_BYTES = 1 << 30
TOP_SIZES = 3

# Per-GPU NVLink bandwidth per direction (NVIDIA: A100 600 GB/s, H100 900 GB/s, B200 1.8 TB/s
# total bidirectional) and the intra-node all_reduce busbw a healthy 8-GPU node reaches, which is
# what the floor applies to:
#   NVLink 3: ring all_reduce tops out near 78% of the link rate (protocol overhead): 235.3 GB/s at
#             8 GiB on 8x A100-SXM4 (shared fixture a100-40gb-8gpu-single-node-superbench). Judging
#             against 300 with a 0.80 floor would fail that healthy node, so 235 is the reference.
#   NVLink 4: NVLS (NVLink SHARP, reduction inside the NVSwitch) lifts busbw above the per-direction
#             figure: 470.7 GB/s at 2 GiB on 8x H100 (h100-8gpu-single-node-bitdeer). Without NVLS a
#             ring reaches about 80% of 450, so the per-direction 450 (floor 360) is the reference
#             that passes both.
#   NVLink 5: the per-direction 900 is used the same way as for NVLink 4. Across a GB200 NVL72
#             rack's multi-node NVLink domain (72 GPUs, 18 trays) all_reduce reached 839.2 GB/s at
#             4 GiB and 846.8 at 8 GiB, 93% of it (gb200-nvl72-72gpu-one-rack-coreweave-pr43).
#   A multi-node run inside one NVLink domain (nvlink_domain) crosses trays over NVLink, not the
#   scale-out rails, so it is held to the NVLink reference alone.
NVLINK_GB_PER_DIRECTION = {3: 300.0, 4: 450.0, 5: 900.0}
NVLINK_REFERENCE_BUSBW = {3: 235.0, 4: 450.0, 5: 900.0}

# Inter-node: a ring crossing nodes is bounded by the rails: busbw ~ rails x NIC rate / 8. The
# shared fixtures reach 94% (2x DGX A100, 8x HDR 200 = 200 GB/s: 188.5) and 96% (4 nodes: 191.6).
# Tree, NVLS-tree and SHARP algorithms move less data across the network and can exceed it, e.g.
# 468 GB/s on 8x NDR 400 = 400 GB/s (h100-2node-16gpu-ib-bitdeer) or 338.8 on GCP A3 Mega with
# 8x 200 Gb/s (h100-2node-gcp-a3mega-tcpxo): above the expectation is never a fault.

# Largest acceptable relative error in the older "error" column: nccl-tests DeltaMaxValue() in
# src/common.cu (half 1e-2 in older and 5e-2 in newer releases, float 1e-5, double 1e-12; integer
# types must be exact).
ERROR_TOLERANCE = {"half": 5e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}

NCCL_KEYS = {
    "expected_busbw": Key(
        ("float",), "GB/s to compare with, overriding the derivation (e.g. a site's golden run)", above=0
    ),
    "nvlink_generation": Key(("int",), "3, 4 or 5: the intra-node reference", choices=tuple(NVLINK_REFERENCE_BUSBW)),
    "nic_rate_gbps": Key(("float",), "per-rail NIC rate in Gb/s (multi-node runs)", requires=("rails",), above=0),
    "rails": Key(("int",), "NICs NCCL uses per node (multi-node runs)", requires=("nic_rate_gbps",), minimum=1),
    "nvlink_domain": Key(
        ("bool",),
        "every rank in one multi-node NVLink domain (GB200/GB300 NVL72): judged against NVLink, not the rails",
        requires=("nvlink_generation",),
    ),
    "nodes": Key(("int",), "nodes of the run, for outputs whose rank lines do not tell", minimum=1),
    "ranks": Key(("int",), "ranks of the run, for tables copied without the rank header", minimum=1),
    "efficiency_floor": Key(
        ("float",), f"share of the reference busbw must reach (default {EFFICIENCY_FLOOR})", above=0, maximum=1
    ),
    "error_tolerance": Key(
        ("float",), "largest relative error in the older error column (default per type)", minimum=0
    ),
}


def judged_rows(report) -> tuple:
    """The large-message rows bandwidth is judged on."""
    large = tuple(r for r in report.rows if r.size >= LARGE_MESSAGE_BYTES)
    if large:
        return large
    sizes = sorted({r.size for r in report.rows})[-TOP_SIZES:]
    return tuple(r for r in report.rows if r.size in sizes)


def _nodes(report, expected: dict) -> int:
    # The caller knows the node count; rank lines can only guess it (containers may all be "localhost").
    return expected.get("nodes") or len(report.hosts)


def expected_busbw(report, expected: dict) -> tuple[float | None, str]:
    """(GB/s, how it was derived) for this run, or (None, why not)."""
    refused = not_positive(expected, "expected_busbw", "nic_rate_gbps", "rails")
    if refused:
        return None, refused
    if expected.get("expected_busbw") is not None:
        return float(expected["expected_busbw"]), "given"
    nodes = _nodes(report, expected)
    candidates = []
    gen = expected.get("nvlink_generation")
    if gen is not None:
        if gen not in NVLINK_REFERENCE_BUSBW:
            return None, f"unknown NVLink generation {gen}"
        candidates.append((NVLINK_REFERENCE_BUSBW[gen], f"NVLink {gen} intra-node reference"))
    if nodes and nodes > 1 and expected.get("nvlink_domain"):
        if gen is None:
            return None, "nvlink_domain without nvlink_generation"
        return NVLINK_REFERENCE_BUSBW[gen], f"NVLink {gen} across one NVLink domain's {nodes} nodes"
    rate, rails = expected.get("nic_rate_gbps"), expected.get("rails")
    if nodes and nodes > 1:
        if rate is None or rails is None:
            return None, "multi-node run without nic_rate_gbps and rails"
        candidates.append((rails * rate / 8, f"{rails} rails x {rate:g} Gb/s"))
    if not candidates:
        return None, "no nvlink_generation (single node) or NIC rails (multi-node) given"
    # A multi-node run is bounded by the slower of NVLink and the network.
    return min(candidates)


def busbw_figures(report, expected: dict) -> dict:
    """What nccl.busbw is judged on: the best busbw of the judged rows (measured, GB/s), the
    reference and how it was derived, the floor (reference x efficiency floor), the judged sizes,
    ranks and nodes. reference and floor are None when no reference can be derived."""
    rows = judged_rows(report)
    reference, how = expected_busbw(report, expected)
    floor = expected.get("efficiency_floor", EFFICIENCY_FLOOR)
    return {
        "measured": round(max(r.busbw for r in rows), 2),
        "reference": round(reference, 2) if reference is not None else None,
        "floor": round(reference * floor, 2) if reference is not None else None,
        "efficiency_floor": floor,
        "how": how,
        "sizes": sorted({r.size for r in rows}),
        "ranks": report.n_ranks,
        "nodes": _nodes(report, expected),
    }


def _busbw(report, expected: dict) -> CheckResult:
    figures = busbw_figures(report, expected)
    measured, want, need = figures["measured"], figures["reference"], figures["floor"]
    if want is None:
        return result("nccl.busbw", SKIPPED, measured, None, f"{measured:.1f} GB/s; {figures['how']}")
    sizes = figures["sizes"]
    message = (
        f"{measured:.1f} GB/s at {sizes[0]}..{sizes[-1]} B = {measured / want:.0%} of {want:.1f} GB/s "
        f"({figures['how']}); floor {figures['efficiency_floor']:.0%} = {need:.1f}"
    )
    return result("nccl.busbw", PASS if measured >= need else FAIL, measured, need, message)


def _correctness(report, expected: dict) -> CheckResult:
    problems = []
    if report.out_of_bounds:
        problems.append(f"Out of bounds values: {report.out_of_bounds}")
    if report.out_of_bounds_ok is False and not report.out_of_bounds:
        problems.append("Out of bounds check FAILED")
    wrong = [r.size for r in report.rows for res in (r.out_of_place, r.in_place) if res.wrong]
    if wrong:
        problems.append(f"#wrong > 0 at sizes {sorted(set(wrong))}")
    for row in report.rows:
        limit = expected.get("error_tolerance", ERROR_TOLERANCE.get(row.dtype, 0.0))
        for res in (row.out_of_place, row.in_place):
            if res.error is not None and res.error > limit:
                problems.append(f"error {res.error:g} > {limit:g} at size {row.size}")
                break
    problems += report.failures
    checked = report.layout == "wrong" and any(r.out_of_place.wrong is not None for r in report.rows)
    checked = checked or any(r.out_of_place.error is not None for r in report.rows)
    if problems:
        return result("nccl.correctness", FAIL, problems, "no wrong values", "; ".join(problems[:5]))
    if not checked:
        return result("nccl.correctness", WARN, "N/A", "validated", "data validation was off (-c 0); nothing checked")
    return result("nccl.correctness", PASS, 0, 0, "no wrong values, no out-of-bounds values")


def judge_nccl(report, expected: dict | None = None) -> list[CheckResult]:
    expected = expected or {}
    results = [_correctness(report, expected)]
    if report.warnings:
        results.append(result("nccl.warnings", WARN, list(report.warnings), [], "; ".join(report.warnings[:3])))
    # A negative time or bandwidth is no measurement (a broken or edited output): judging the
    # best of a row's two results would let a negative out-of-place column pass unseen.
    negative = sorted(
        {
            row.size
            for row in report.rows
            for res in (row.out_of_place, row.in_place)
            if min(res.time_us, res.algbw, res.busbw) < 0
        }
    )
    if negative:
        message = f"negative time or bandwidth at sizes {negative}: not a measurement"
        results.append(result("nccl.busbw", FAIL, negative, "values of 0 or more", message))
        return results
    # As for nodes: the caller knows the run's ranks; a copy may hold only some of its rank lines.
    ranks = expected.get("ranks") or report.n_ranks
    if ranks == 1:
        # busbw = algbw x 2(n-1)/n is 0 for one rank: nothing crosses a link.
        results.append(skipped("nccl.busbw", "single-rank run: bus bandwidth is not defined for one rank"))
        return results
    results.append(_busbw(report, expected))
    return results
