"""The node checks' parsers and judges (plugins/module_utils), importable on the controller.

Ansible merges a project's module_utils directory into ``ansible.module_utils`` when it packs a
module; the files import each other that way. ``load()`` appends the directory to that package's
search path, as tests/unit/plugins/module_utils/samples.py does, so ``clusterforge check judge`` judges a
local file with exactly the code the nodes run.

``KINDS`` names each command output the controller can judge: its parser, the judge call the
node module makes on it, and the judge's table of expectation keys (``expectation_keys.Key``).
``judge_text`` (``judge_directory`` for a sysfs tree) parses and judges one output; the rules
themselves live only in the judges (plugins/module_utils/*_judge.py).
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
    source=...) reads it, judge(parsed, expected) judges it as the node module does, and the
    tables ((module, name) pairs in plugins/module_utils) hold the expectation keys it reads."""

    parser: str
    parse: str
    reads: str
    judge: Callable[[Any, dict[str, Any]], list]
    tables: tuple[tuple[str, str], ...]
    # The check a run that stopped early is reported under, as its node module names it (see
    # verdicts.failed_run): nccl_check's <label>.run, ib_check's ib.command, ...
    run_check: str
    takes_source: bool = True  # the kernel-log reader raises nothing, so it names no source
    directory: bool = False  # FILE is a directory tree (a copy of /sys/class/infiniband)

    @property
    def key_table(self) -> dict:
        """The keys of every table of the kind (a kind judged by two judges reads both tables)."""
        merged: dict = {}
        for module, name in self.tables:
            merged.update(getattr(load(module), name))
        return merged


def _call(module: str, function: str, convert: str | None = None) -> Callable[[Any, dict], list]:
    """judge(parsed, expected): <module>.<function>, after ib_judge.<convert> where given."""

    def judge(parsed: Any, expected: dict[str, Any]) -> list:
        if convert is not None:
            parsed = getattr(load("ib_judge"), convert)(parsed)
        return getattr(load(module), function)(parsed, expected)

    return judge


def _topology(parsed: Any, expected: dict[str, Any]) -> list:
    """gpu_check's judges of topo -m: GPU count and NVLinks, then GPU-NIC affinity (a malformed
    hca_gpus or severity is the user's --expect)."""
    results = load("gpu_judge").judge_topology(parsed, expected)
    try:
        results.append(load("nic_affinity_judge").judge_nic_affinity(parsed, expected))
    except ValueError as exc:
        raise UsageError(f"--expect {exc}") from None
    return results


# The judge calls are those of the modules: gpu_check (nvidia-smi -q, topo -m, kernel log), ib_check
# (sysfs, ibstat, ibv_devinfo), ib_bandwidth_check, nccl_check, cabling_check, training_check. gpu_check counts GPUs
# from nvidia-smi -q only; the topo -m kind counts them too, and judges GPU-NIC affinity. dcgmi and
# --query-gpu CSV have no node module; their judges are the ones a module would call.
KINDS = {
    "nccl": Kind(
        "nccl_tests",
        "parse_nccl_tests",
        "nccl-tests output (all_reduce_perf, ...)",
        _call("nccl_judge", "judge_nccl"),
        (("nccl_judge", "NCCL_KEYS"),),
        "nccl.run",
    ),
    "ibstat": Kind(
        "ibstat",
        "parse_ibstat",
        "ibstat",
        _call("ib_judge", "judge_ib_ports", "ports_from_ibstat"),
        (("ib_judge", "PORT_KEYS"),),
        "ib.command",
    ),
    "ibv_devinfo": Kind(
        "ibv_devinfo",
        "parse_ibv_devinfo",
        "ibv_devinfo [-v]",
        _call("ib_judge", "judge_ib_ports", "ports_from_ibv_devinfo"),
        (("ib_judge", "PORT_KEYS"),),
        "ib.command",
    ),
    "ib-sysfs": Kind(
        "ib_sysfs",
        "read_ib_sysfs",
        "a copy of /sys/class/infiniband",
        _call("ib_judge", "judge_ib_ports", "ports_from_sysfs"),
        (("ib_judge", "SYSFS_PORT_KEYS"),),
        "ib.sysfs",
        directory=True,
    ),
    "ib_write_bw": Kind(
        "perftest",
        "parse_perftest",
        "ib_write_bw (perftest) client output",
        _call("ib_judge", "judge_perftest"),
        (("ib_judge", "PERFTEST_KEYS"),),
        "ib.write_bw",
    ),
    "nvidia-smi-q": Kind(
        "nvidia_smi",
        "parse_query",
        "nvidia-smi -q or -q -x",
        _call("gpu_judge", "judge_gpus"),
        (("gpu_judge", "QUERY_KEYS"),),
        "gpu.driver",
    ),
    "nvidia-smi-fabric": Kind(
        "nvidia_fabric",
        "parse_fabric",
        "nvidia-smi -q (its Fabric sections: GB200/GB300 NVLink fabric attachment)",
        _call("nvidia_fabric", "judge_fabric"),
        (("nvidia_fabric", "FABRIC_KEYS"),),
        "gpu.fabric_state",
    ),
    "nvidia-smi-query": Kind(
        "nvidia_smi",
        "parse_query_gpu_csv",
        "nvidia-smi --query-gpu=... --format=csv[,nounits]",
        _call("gpu_csv_judge", "judge_query_gpu_csv"),
        (("gpu_csv_judge", "CSV_KEYS"),),
        "gpu.driver",
    ),
    "nvidia-smi-topo": Kind(
        "nvidia_topo",
        "parse_topo_matrix",
        "nvidia-smi topo -m",
        _topology,
        (("gpu_judge", "TOPOLOGY_KEYS"), ("nic_affinity_judge", "AFFINITY_KEYS")),
        "gpu.topology",
    ),
    "xid": Kind(
        "xid",
        "parse_kernel_log",
        "journalctl -k or dmesg",
        lambda parsed, expected: [load("gpu_judge").judge_xid(parsed)],
        (("gpu_judge", "XID_KEYS"),),
        "gpu.xid",
        takes_source=False,
    ),
    "ibnetdiscover": Kind(
        "ibnetdiscover",
        "parse_ibnetdiscover_ports",
        "ibnetdiscover -p",
        _call("cabling_judge", "judge_cabling"),
        (("cabling_judge", "CABLING_KEYS"),),
        "cabling.discover",
    ),
    "mlxconfig": Kind(
        "mlxconfig",
        "parse_mlxconfig",
        "mlxconfig -d <dev> q (or mstconfig; -e adds the Current column)",
        lambda parsed, expected: [load("mlxconfig_judge").judge_mlxconfig(parsed, expected)],
        (("mlxconfig_judge", "MLXCONFIG_KEYS"),),
        "rdma.mlxconfig",
    ),
    "lspci-acs": Kind(
        "lspci",
        "parse_lspci",
        "lspci -vvv (as root; with lspci -tv appended where the blocks lack the bus tree)",
        lambda parsed, expected: [load("acs_judge").judge_acs(parsed, expected)],
        (("acs_judge", "ACS_KEYS"),),
        "pcie.acs",
    ),
    "lsmod": Kind(
        "gpudirect_host",
        "parse_lsmod",
        "lsmod (or lsmod | grep nvidia)",
        lambda parsed, expected: [load("gpudirect_host").judge_peermem(parsed, expected)],
        (("gpudirect_host", "PEERMEM_KEYS"),),
        "gpudirect.peermem",
    ),
    "peermem-log": Kind(
        "gpudirect_host",
        "parse_peermem_log",
        "journalctl -k or dmesg (nvidia_peermem load failures)",
        lambda parsed, expected: [load("gpudirect_host").judge_peermem_log(parsed, expected)],
        (("gpudirect_host", "PEERMEM_LOG_KEYS"),),
        "gpudirect.peermem_log",
        takes_source=False,
    ),
    "kernel-cmdline": Kind(
        "gpudirect_host",
        "parse_cmdline",
        "/proc/cmdline (the IOMMU mode; a node also reads /sys/class/iommu)",
        lambda parsed, expected: [load("gpudirect_host").judge_iommu(parsed, expected)],
        (("gpudirect_host", "IOMMU_KEYS"),),
        "gpudirect.iommu",
    ),
    "training": Kind(
        "training_judge",
        "parse_job_record",
        "the acceptance training job's record (training_check's job)",
        _call("training_judge", "judge_job"),
        (("training_judge", "TRAINING_KEYS"),),
        "training.smoke",
    ),
    "dcgmi": Kind(
        "dcgmi",
        "parse_dcgmi_diag",
        "dcgmi diag -r N",
        _call("gpu_judge", "judge_dcgmi"),
        (("gpu_judge", "DCGMI_KEYS"),),
        "dcgmi.run",
    ),
}
# Earlier names of kinds, still accepted.
ALIASES = {"kernel-log": "xid"}


def kind_of(name: str) -> tuple[str, Kind]:
    """(canonical name, Kind) of a kind or its alias."""
    name = ALIASES.get(name, name)
    if name not in KINDS:
        raise UsageError(f"unknown kind {name!r}; kinds: {', '.join(sorted(KINDS))}")
    return name, KINDS[name]


def expectation_from_text(kind: str, pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs typed by the kind's key table; a key the kind's judge does not read, or a
    value that is not of its type, is a UsageError naming the key and the kind's keys."""
    name, spec = kind_of(kind)
    keys = load("expectation_keys")
    expected: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--expect {pair!r}: expected KEY=VALUE")
        try:
            expected[key] = keys.from_text(name, spec.key_table, key, value)
        except keys.ExpectationError as exc:
            raise UsageError(f"--expect {exc}") from None
    return expected


def _judge(name: str, spec: Kind, read: Callable[[], Any], expected: dict[str, Any]) -> list:
    keys = load("expectation_keys")
    try:
        keys.validate(name, spec.key_table, expected)
        parsed = read()
        return spec.judge(parsed, expected)
    except load("verdicts").ParseError as exc:
        raise UsageError(f"not {spec.reads} output: {exc}") from None
    except load("verdicts").ToolFailed as exc:
        # The tool's own output of a run that stopped early: judged as the modules judge it.
        return [load("verdicts").failed_run(spec.run_check, exc)]
    except keys.ExpectationError as exc:
        raise UsageError(f"expectation: {exc}") from None


def judge_text(kind: str, text: str, expected: dict[str, Any], source: str = "") -> list:
    """Parse and judge one output with the modules' own code. An expectation the kind's judge does
    not read or this output cannot answer, and output the parser rejects, are UsageErrors."""
    name, spec = kind_of(kind)
    if spec.directory:
        raise UsageError(f"{name} reads a directory ({spec.reads}), not text")
    parse = getattr(load(spec.parser), spec.parse)
    if spec.takes_source:
        return _judge(name, spec, lambda: parse(text, source=source or name), expected)
    return _judge(name, spec, lambda: parse(text), expected)


def judge_directory(kind: str, path: str, expected: dict[str, Any]) -> list:
    """judge_text for a kind that reads a directory tree (ib-sysfs)."""
    name, spec = kind_of(kind)
    if not spec.directory:
        raise UsageError(f"{name} reads a file ({spec.reads}), not a directory")
    if not Path(path).is_dir():
        raise UsageError(f"{name} reads a directory ({spec.reads}); {path} is not one")
    return _judge(name, spec, lambda: getattr(load(spec.parser), spec.parse)(path), expected)


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


def keys_markdown() -> str:
    """docs/validation.md's table of kinds and the expectation keys each reads, from the judges' tables."""
    lines = ["| kind | judges | key | type | meaning |", "|---|---|---|---|---|"]
    for name, spec in sorted(KINDS.items()):
        first = f"`{name}` | {spec.reads}"
        table = spec.key_table
        if not table:
            lines.append(f"| {first} | (none) | | every event is judged |")
        for key, entry in table.items():
            meaning = entry.meaning + (f"; read only with {', '.join(entry.requires)}" if entry.requires else "")
            lines.append(f"| {first} | `{key}` | {' or '.join(entry.types)} | {meaning.replace('|', '/')} |")
            first = "|"
    return "\n".join(lines)
