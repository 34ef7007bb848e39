"""Both judge paths give the same verdicts on every recorded output in tests/fixtures.

Path one is the node module, live, with run_command mocked (conftest.py) to print the recording;
path two is the controller's ``clusterforge check judge`` (clusterforge.validation.judges.judge_text).
Both get the same expectation, written once per output kind in the judges' own vocabulary (what
``--expect`` takes) and turned into the module's options here. Every check the controller reports
must come out of the module with the same status and expectation, and the same measured value
where both report one; an output the controller rejects as not of its kind must fail the module's output check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clusterforge.errors import UsageError
from clusterforge.validation import judges
from tests.unit.plugins.module_utils import samples

from .conftest import Node, Outcome
from .test_ib_check import sysfs

# A real `nvidia-smi -q` to run beside the topology and kernel-log recordings, which gpu_check
# reads only after it.
H100_QUERY = samples.load("nvidia-smi_query", "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt")
# One planned link of the EDR recording (real name and port), so the plan's links and speed are judged.
CABLING_PLAN = (
    "fabric,tier,source_device,source_port,destination_device,destination_port,speed_gbps\n"
    "ib,node-leaf,o0001,HCA-1,ib-i1l1s01,10,100\n"
)


@dataclass
class Setup:
    """What the module needs on the mocked node besides the recording: paths it probes."""

    pci_root: str
    tmp: Path


@dataclass(frozen=True)
class Route:
    """One output kind: the controller's KIND, the expectation, and how the module is run on it.

    module(node, setup, text, expected) sets up the mocked node and returns (module name, args);
    name(check) gives the controller's name of a module check, None for one the output does not
    decide (gpu_check judges its query whatever topology it reads); rejected is the module's check
    for output it cannot parse; controller_only are checks the controller makes on this output that
    the module makes on another (gpu_check counts GPUs from nvidia-smi -q, not from topo -m)."""

    kind: str
    expected: Callable[[str], dict[str, Any]]
    module: Callable[[Node, Setup, str, dict[str, Any]], tuple[str, dict[str, Any]]]
    name: Callable[[str], str | None]
    rejected: str
    controller_only: frozenset[str] = frozenset()


def _gpu_query(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q -x": (0, text, ""), "nvidia-smi topo -m": (6, "", "not supported\n")}
    args = {"expected_gpus": expected["gpu_count"], "model": expected["product_name"], "kernel_log": False}
    return "gpu_check", {**args, "pci_root": setup.pci_root}


def _gpu_topology(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q -x": (0, H100_QUERY, ""), "nvidia-smi topo -m": (0, text, "")}
    args = {key: expected[key] for key in ("nvlink_generation", "nvswitch", "hca_gpus")}
    return "gpu_check", {**args, "kernel_log": False, "pci_root": setup.pci_root}


def _gpu_kernel_log(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    node.programs = {"nvidia-smi", "journalctl"}
    node.outputs = {
        "nvidia-smi -q -x": (0, H100_QUERY, ""),
        "nvidia-smi topo -m": (6, "", "not supported\n"),
        "journalctl -k": (0, text, ""),
    }
    return "gpu_check", {"pci_root": setup.pci_root}


def _ib_ports(source: str, command: str) -> Callable[..., tuple[str, dict[str, Any]]]:
    def module(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        node.programs = {command.split()[0]}
        node.outputs = {command: (0, text, "")}
        # Live reading from ibstat or ibv_devinfo starts at sysfs: the node must show an RDMA device.
        root = sysfs(setup.tmp / "infiniband", {"mlx5_0": {}})
        args = {"source": source, "expected_hcas": expected["rate"], "link_layers": expected["link_layer"]}
        return "ib_check", {**args, "sysfs_root": str(root), "pci_root": setup.pci_root}

    return module


def _ib_devices(kind: str) -> Callable[[str], dict[str, Any]]:
    """Every HCA of the output expected, at NDR on InfiniBand (so slower or Ethernet ports fail),
    per device as the module's expected_hcas gives them."""

    def expected(text: str) -> dict[str, Any]:
        spec = judges.KINDS[kind]
        verdicts = judges.load("verdicts")
        try:
            parsed = getattr(judges.load(spec.parser), spec.parse)(text)
        except (verdicts.ParseError, verdicts.ToolFailed):
            parsed = ()
        names = sorted({getattr(device, "name", None) or device.hca_id for device in parsed}) or ["mlx5_0"]
        return {"devices": names, "rate": dict.fromkeys(names, 400), "link_layer": dict.fromkeys(names, "InfiniBand")}

    return expected


def _perftest(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    node.programs = {"ib_write_bw"}
    node.outputs = {"ib_write_bw": (0, text, "")}
    (setup.tmp / "infiniband" / "mlx5_0").mkdir(parents=True)
    args = {"device": "mlx5_0", "server": "peer", "rate_gbps": expected["rate_gbps"]}
    return "ib_bandwidth_check", {**args, "sysfs_root": str(setup.tmp / "infiniband")}


def _gpudirect(tool: str, argv: str) -> Callable[[Node, Setup, str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    """gpudirect_check on a GPU node with one RDMA device, only `tool` installed, printing the recording."""

    def module(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        node.programs = {tool}
        node.outputs = {argv: (0, text, "")}
        if tool == "lspci":  # the module appends lspci -tv; the recording holds whatever tree there is
            node.outputs["lspci -tv"] = (0, "", "")
        device = setup.tmp / "infiniband" / "mlx5_0"
        device.mkdir(parents=True)
        (setup.tmp / "pci-link" / "0000:18:00.0").mkdir(parents=True)
        (device / "device").symlink_to(setup.tmp / "pci-link" / "0000:18:00.0")
        absent = str(setup.tmp / "absent")
        files = {"cmdline_path": absent, "numa_balancing_path": absent, "iommu_root": absent}
        args = {"sysfs_root": str(setup.tmp / "infiniband"), "pci_root": setup.pci_root, **files}
        return "gpudirect_check", {**args, **expected}

    return module


def _nccl_expected(text: str) -> dict[str, Any]:
    """NVLink 3 within a node, 8 rails of HDR between nodes, over as many nodes as the ranks name."""
    verdicts = judges.load("verdicts")
    try:
        hosts = judges.load("nccl_tests").parse_nccl_tests(text).hosts
    except (verdicts.ParseError, verdicts.ToolFailed):
        hosts = ()
    return {"nvlink_generation": 3, "nic_rate_gbps": 200, "rails": 8, "nodes": max(len(hosts), 1)}


def _nccl(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    nodes = expected["nodes"]
    args = {key: expected[key] for key in ("nvlink_generation", "nic_rate_gbps", "rails")}
    args.update(label="run", timeout=0, gpus_per_node=8, pci_root=setup.pci_root)
    if nodes > 1:
        node.programs = {"all_reduce_perf", "mpirun"}
        node.outputs = {"mpirun": (0, text, "")}
        args.update(hosts=[f"node{i}" for i in range(nodes)], launcher=["mpirun", "-np", "{np}"])
    else:
        node.programs = {"all_reduce_perf"}
        node.outputs = {"all_reduce_perf": (0, text, "")}
    return "nccl_check", args


def _cabling(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    node.programs = {"ibnetdiscover"}
    node.outputs = {"ibnetdiscover -p": (0, text, "")}
    (setup.tmp / "infiniband" / "mlx5_0").mkdir(parents=True)
    return "cabling_check", {"plan": CABLING_PLAN, "sysfs_root": str(setup.tmp / "infiniband")}


def _fabric(node: Node, setup: Setup, text: str, expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    node.programs = {"nvidia-smi"}
    node.outputs = {"nvidia-smi -q": (0, text, "")}
    return "fabric_check", {**expected, "timeout": 0, "pci_root": setup.pci_root}


def _same(check: str) -> str:
    return check


def _only(*names: str) -> Callable[[str], str | None]:
    return lambda check: check if check in names else None


GPU_QUERY = Route(
    "nvidia-smi-q",
    lambda text: {"gpu_count": 8, "product_name": "NVIDIA H100 80GB HBM3"},
    _gpu_query,
    _same,
    "gpu.output",
)
IB_STAT = Route("ibstat", _ib_devices("ibstat"), _ib_ports("ibstat", "ibstat"), _same, "ib.output")
IBV_DEVINFO = Route(
    "ibv_devinfo", _ib_devices("ibv_devinfo"), _ib_ports("ibv_devinfo", "ibv_devinfo -v"), _same, "ib.output"
)
ROUTES = {
    "nvidia-smi_query": GPU_QUERY,
    "nvidia-smi_xml": GPU_QUERY,
    "nvidia-smi_topo": Route(
        "nvidia-smi-topo",
        # mlx5_0 is PXB to GPU0 in one capture, SYS in another, and absent or without NICs in the rest.
        lambda text: {"nvlink_generation": 3, "nvswitch": True, "hca_gpus": {"mlx5_0": 0}},
        _gpu_topology,
        _only("gpu.nvlink", "gpu.nic_affinity"),
        "gpu.nvlink",
        frozenset({"gpu.count"}),
    ),
    "kernel_log_xid": Route("xid", lambda text: {}, _gpu_kernel_log, _only("gpu.xid"), "gpu.xid"),
    "ibstat": IB_STAT,
    "ibv_devinfo": IBV_DEVINFO,
    "ib_write_bw": Route(
        "ib_write_bw",
        lambda text: {"rate_gbps": 100},
        _perftest,
        lambda check: check.removesuffix(".mlx5_0"),
        "ib.write_bw",
    ),
    "nccl_all_reduce_perf": Route(
        "nccl", _nccl_expected, _nccl, lambda check: check.replace("nccl.run.", "nccl.", 1), "nccl.output"
    ),
    "ibnetdiscover_iblinkinfo": Route(
        "ibnetdiscover",
        lambda text: judges.plan_expectation(CABLING_PLAN)[0],
        _cabling,
        _same,
        "cabling.output",
    ),
}
ROUTES.update(
    {
        "lspci_vvv": Route(
            "lspci-acs", lambda text: {}, _gpudirect("lspci", "lspci -vvv"), _only("pcie.acs"), "pcie.acs"
        ),
        "mlxconfig_q": Route(
            "mlxconfig",
            lambda text: {"mlxconfig": {"LINK_TYPE_P1": "IB"}},
            _gpudirect("mlxconfig", "mlxconfig -d 0000:18:00.0 q"),
            _only("rdma.mlxconfig"),
            "rdma.mlxconfig",
        ),
        "lsmod": Route(
            "lsmod", lambda text: {}, _gpudirect("lsmod", "lsmod"), _only("gpudirect.peermem"), "gpudirect.peermem"
        ),
        "kernel_log_peermem": Route(
            "peermem-log",
            lambda text: {},
            _gpudirect("journalctl", "journalctl -k -b --no-pager"),
            _only("gpudirect.peermem_log"),
            "gpudirect.peermem_log",
        ),
    }
)
ROUTES["nvidia-smi_fabric"] = Route(
    "nvidia-smi-fabric",
    # The domain of the attached tray of issue 626, so the other recording's zero UUID fails against it too.
    lambda text: {"clique_id": 2, "cluster_uuid": "dc6e40c4-d722-4357-9ba6-5291dd461278"},
    _fabric,
    _same,
    "gpu.fabric_state",
)
# Outputs no node module reads yet: the controller judges them alone.
NO_MODULE = {
    "dcgmi_diag": "dcgm_check runs it (the prolog, the burn-in); no route here yet: test_dcgm_check.py judges them",
    "perfquery": "two readings (before, after), not one output: test_burnin_modules.py replays them in ib_counters",
}
# Outputs that are no check's: Slurm's accounting tables, read by the slurm_accounts module
# (tests/unit/plugins/module_utils/test_sacctmgr.py) and its refusals, and Molecule's logs of failed
# scenarios, read by tests/run_all.sh's summary (tests/unit/test_run_all.py).
NOT_CHECKS = {"sacctmgr", "squeue", "sacctmgr_refusal", "molecule_log"}
# Outputs a configuring module reads as state, not a check's: roce_qos reads `mlnx_qos -i`, or dcb's
# PFC and APP table, to change only what differs (tests/unit/plugins/modules/test_roce_qos.py);
# imex_channels reads /proc/devices for the channel major and imex_busy reads nvidia-smi's compute
# processes before an IMEX restart (tests/unit/plugins/modules/test_imex_modules.py).
STATE_ONLY = {"mlnx_qos", "dcb_pfc", "dcb_app", "proc_devices", "nvidia-smi_compute_apps"}
# Outputs only a node module reads: training_check replays the acceptance job's step outputs
# (test_training_check.py); `check judge training` judges the job record that module saved, not a
# step's output.
MODULE_ONLY = {"torchrun": "training_check (replay of training-<step>.txt)"}

ALL = [(folder, path) for folder in sorted(ROUTES) for path in samples.fixture_files(folder)]


def test_every_recorded_output_kind_has_both_paths():
    folders = {p.name for p in samples.FIXTURES.iterdir() if p.is_dir()}
    assert folders == set(ROUTES) | set(NO_MODULE) | NOT_CHECKS | set(MODULE_ONLY) | STATE_ONLY
    assert len(ALL) >= 35


def controller(route: Route, text: str, expected: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The controller's checks by name (less its controller_only ones), or None when it rejects the output."""
    # Every expectation of a route is one the kind's judge reads, so a UsageError below is the output's.
    judges.load("expectation_keys").validate(route.kind, judges.KINDS[route.kind].key_table, expected)
    try:
        results = judges.judge_text(route.kind, text, expected)
    except UsageError:
        return None
    return {r.check: r.as_dict() for r in results if r.check not in route.controller_only}


def node_module(route: Route, outcome: Outcome) -> dict[str, dict[str, Any]]:
    mapped = {route.name(check["check"]): check for check in outcome.result["checks"]}
    mapped.pop(None, None)
    return mapped


@pytest.mark.parametrize("folder,path", ALL, ids=[f"{f}/{p.name}" for f, p in ALL])
def test_module_and_controller_agree(folder: str, path: Path, node, run, gpu_pci, tmp_path):
    route = ROUTES[folder]
    text = samples.read(path)
    expected = route.expected(text)
    name, args = route.module(node, Setup(str(gpu_pci), tmp_path), text, expected)
    outcome = run(name, args)
    by_module = node_module(route, outcome)
    by_controller = controller(route, text, expected)

    if by_controller is None:
        check = by_module.get(route.rejected)
        assert check is not None and check["status"] == "fail", (
            f"the controller rejects {path.name}; the module: {check}"
        )
        return
    assert_agree(by_module, by_controller)
    if route.name is _same:
        assert outcome.result["status"] == judges.overall(list(judges.judge_text(route.kind, text, expected)))


def assert_agree(by_module: dict[str, dict[str, Any]], by_controller: dict[str, dict[str, Any]]) -> None:
    assert set(by_module) == set(by_controller), "the paths judge different checks"
    for check, theirs in by_controller.items():
        ours = by_module[check]
        assert ours["status"] == theirs["status"], f"{check}: module {ours}, controller {theirs}"
        if ours["measured"] is not None and theirs["measured"] is not None:
            assert ours["measured"] == theirs["measured"], f"{check}: measured differently"
        assert ours["expected"] == theirs["expected"], f"{check}: judged against different expectations"


# Constructed sysfs trees (tests/fixtures holds command outputs, no sysfs copy): a healthy NDR node,
# and one with a port down, a slow port, another firmware and error counters over a limit.
SYSFS_TREES = {
    "healthy": {f"mlx5_{i}": {} for i in range(4)},
    "faulty": {
        "mlx5_0": {},
        "mlx5_1": {"state": "1: DOWN", "phys": "3: Disabled"},
        "mlx5_2": {"rate": 200, "fw": "28.36.1010"},
        "mlx5_3": {"counters": {"symbol_error": 7, "link_downed": 2}},
    },
}


@pytest.mark.parametrize("tree", sorted(SYSFS_TREES))
def test_module_and_controller_agree_on_sysfs_trees(tree: str, node, run, plain_pci, tmp_path):
    root = sysfs(tmp_path / "infiniband", SYSFS_TREES[tree])
    devices = sorted(SYSFS_TREES[tree])
    expected = {
        "devices": devices,
        "rate": dict.fromkeys(devices, 400),
        "link_layer": dict.fromkeys(devices, "InfiniBand"),
        "counter_limits": {"symbol_error": 5},
    }
    args = {
        "expected_hcas": expected["rate"],
        "link_layers": expected["link_layer"],
        "counter_limits": {"symbol_error": 5},
    }
    outcome = run("ib_check", {**args, "sysfs_root": str(root), "pci_root": str(plain_pci)})
    by_controller = {r.check: r.as_dict() for r in judges.judge_directory("ib-sysfs", str(root), expected)}
    assert_agree(outcome.checks, by_controller)
    assert outcome.result["status"] == ("pass" if tree == "healthy" else "fail")


def _is_query_gpu_csv(path: Path) -> bool:
    try:
        judges.load("nvidia_smi").parse_query_gpu_csv(samples.read(path))
    except judges.load("verdicts").ParseError:
        return False
    return True


QUERY_GPU_CSVS = [p for p in samples.fixture_files("nvidia-smi_query") if _is_query_gpu_csv(p)]


@pytest.mark.parametrize("path", QUERY_GPU_CSVS, ids=[p.name for p in QUERY_GPU_CSVS])
def test_query_gpu_csv_is_judged_by_its_own_kind(path: Path):
    """No module reads --query-gpu CSV (gpu_check rejects it as -q output, above): the controller's
    nvidia-smi-query kind judges it alone."""
    assert QUERY_GPU_CSVS
    checks = judges.judge_text("nvidia-smi-query", samples.read(path), {})
    assert {r.check for r in checks} >= {"gpu.count"}


def test_every_kind_names_the_check_of_a_failed_run():
    assert all(spec.run_check for spec in judges.KINDS.values())


def _tool_failure(route: Route, text: str) -> Exception | None:
    spec = judges.KINDS[route.kind]
    try:
        getattr(judges.load(spec.parser), spec.parse)(text)
    except judges.load("verdicts").ToolFailed as exc:
        return exc
    except judges.load("verdicts").ParseError:
        return None
    return None


FAILED_RUNS = [(f, p) for f, p in ALL if _tool_failure(ROUTES[f], samples.read(p))]


def test_failed_runs_are_recorded_for_several_tools():
    assert {folder for folder, _ in FAILED_RUNS} >= {"nccl_all_reduce_perf", "ib_write_bw", "nvidia-smi_query"}


@pytest.mark.parametrize("folder,path", FAILED_RUNS, ids=[f"{f}/{p.name}" for f, p in FAILED_RUNS])
def test_a_failed_run_fails_on_both_paths_quoting_the_reason(folder: str, path: Path, node, run, gpu_pci, tmp_path):
    """A run of the right tool that stopped early: one failed check, never unreadable input."""
    route = ROUTES[folder]
    text = samples.read(path)
    reason = _tool_failure(route, text).reason
    expected = route.expected(text)
    name, args = route.module(node, Setup(str(gpu_pci), tmp_path), text, expected)
    by_module = node_module(route, run(name, args))
    by_controller = controller(route, text, expected)
    assert by_controller is not None, "the controller took a failed run for unreadable input"
    (check,) = by_controller
    assert check == judges.KINDS[route.kind].run_check
    for checks in (by_module, by_controller):
        assert checks[check]["status"] == "fail" and reason in checks[check]["message"]
