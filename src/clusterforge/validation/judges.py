"""The node checks' parsers and judges (plugins/module_utils), importable on the controller.

Ansible merges a project's module_utils directory into ``ansible.module_utils`` when it packs a
module; the files import each other that way. ``load()`` appends the directory to that package's
search path, as tests/unit/plugins/module_utils/samples.py does, so ``clusterforge check judge`` judges a
local file with exactly the code the nodes run.

``KINDS`` names each command output the controller can judge: its parser and the judge call the
node module makes on it. ``judge_text`` parses and judges one output; the rules themselves live
only in the judges (plugins/module_utils/*_judge.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from clusterforge.errors import EnvironmentProblem, UsageError

_HERE = Path(__file__).resolve()


def module_utils_dir() -> Path:
    """plugins/module_utils of the checkout this package runs from, else of the project dir."""
    candidate = _HERE.parents[3] / "plugins" / "module_utils"
    if (candidate / "verdicts.py").is_file():
        return candidate
    from clusterforge.paths import project_dir

    candidate = project_dir() / "plugins" / "module_utils"
    if (candidate / "verdicts.py").is_file():
        return candidate
    raise EnvironmentProblem(f"cannot find plugins/module_utils (tried {candidate})")


def load(name: str) -> ModuleType:
    """ansible.module_utils.<name> from plugins/module_utils."""
    import ansible.module_utils

    path = str(module_utils_dir())
    if path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(path)
    return importlib.import_module(f"ansible.module_utils.{name}")


@dataclass(frozen=True)
class Kind:
    """A command output the controller can judge: plugins/module_utils/<parser>.py's <parse>(text,
    source=...) reads it, judge(parsed, expected) judges it as the node module does."""

    parser: str
    parse: str
    reads: str
    judge: Callable[[Any, dict[str, Any]], list]
    takes_source: bool = True  # the kernel-log reader raises nothing, so it names no source


def _ib_ports(convert: str) -> Callable[[Any, dict[str, Any]], list]:
    def judge(parsed: Any, expected: dict[str, Any]) -> list:
        ib = load("ib_judge")
        return ib.judge_ib_ports(getattr(ib, convert)(parsed), expected)

    return judge


def _nic_affinity(parsed: Any, expected: dict[str, Any]) -> Any:
    """gpu_check's affinity judge; a malformed hca_gpus or severity is the user's --expect."""
    try:
        return load("nic_affinity_judge").judge_nic_affinity(parsed, expected)
    except ValueError as exc:
        raise UsageError(f"--expect {exc}") from None


# The judge calls are those of the modules: gpu_check (nvidia-smi -q, topo -m, kernel log),
# ib_check (ibstat, ibv_devinfo), ib_bandwidth_check, nccl_check, cabling_check. dcgmi has no node
# module yet; its judge is the one a module would call.
KINDS = {
    "nccl": Kind(
        "nccl_tests",
        "parse_nccl_tests",
        "nccl-tests output (all_reduce_perf, ...)",
        lambda parsed, expected: load("nccl_judge").judge_nccl(parsed, expected),
    ),
    "ibstat": Kind("ibstat", "parse_ibstat", "ibstat", _ib_ports("ports_from_ibstat")),
    "ibv_devinfo": Kind("ibv_devinfo", "parse_ibv_devinfo", "ibv_devinfo [-v]", _ib_ports("ports_from_ibv_devinfo")),
    "ib_write_bw": Kind(
        "perftest",
        "parse_perftest",
        "ib_write_bw (perftest) client output",
        lambda parsed, expected: load("ib_judge").judge_perftest(parsed, expected),
    ),
    "nvidia-smi-q": Kind(
        "nvidia_smi",
        "parse_query",
        "nvidia-smi -q or -q -x",
        lambda parsed, expected: load("gpu_judge").judge_gpus(parsed, expected),
    ),
    "nvidia-smi-topo": Kind(
        "nvidia_topo",
        "parse_topo_matrix",
        "nvidia-smi topo -m",
        lambda parsed, expected: [
            load("gpu_judge").judge_nvlinks(parsed, expected),
            _nic_affinity(parsed, expected),
        ],
    ),
    "kernel-log": Kind(
        "xid",
        "parse_kernel_log",
        "journalctl -k or dmesg",
        lambda parsed, expected: [load("gpu_judge").judge_xid(parsed)],
        takes_source=False,
    ),
    "ibnetdiscover": Kind(
        "ibnetdiscover",
        "parse_ibnetdiscover_ports",
        "ibnetdiscover -p",
        lambda parsed, expected: load("cabling_judge").judge_cabling(parsed, expected),
    ),
    "dcgmi": Kind(
        "dcgmi",
        "parse_dcgmi_diag",
        "dcgmi diag -r N",
        lambda parsed, expected: load("gpu_judge").judge_dcgmi(parsed, expected),
    ),
}


def judge_text(kind: str, text: str, expected: dict[str, Any], source: str = "") -> list:
    """Parse and judge one output with the modules' own code; ParseError becomes UsageError."""
    spec = KINDS[kind]
    parse = getattr(load(spec.parser), spec.parse)
    try:
        parsed = parse(text, source=source or kind) if spec.takes_source else parse(text)
    except load("verdicts").ParseError as exc:
        raise UsageError(f"not {spec.reads} output: {exc}") from None
    return spec.judge(parsed, expected)


def plan_expectation(text: str, fabric: str | None = None, source: str = "cabling.csv") -> tuple[dict, str | None]:
    """The cabling_judge expectation of a cabling plan, as cabling_check reads it; a plan error
    becomes UsageError."""
    plan = load("cabling_plan")
    try:
        return plan.plan_expectation(text, fabric, source=source)
    except plan.CablingPlanError as exc:
        raise UsageError(str(exc)) from None


def overall(results: list) -> str:
    """The verdict of a list of results, by the node checks' verdict order."""
    return load("verdicts").overall(results)
