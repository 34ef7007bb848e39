#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_check
short_description: Run nccl-tests and judge correctness and bus bandwidth against the hardware
description:
  - Runs an nccl-tests benchmark (C(all_reduce_perf) by default, also C(all_gather_perf) and
    C(reduce_scatter_perf)) on this node's GPUs, or across several nodes through a launcher
    (C(mpirun), C(srun)) given as an argv prefix, and judges it with the nccl judge
    (C(plugins/module_utils/nccl_judge.py)) - no wrong or out-of-bounds values, and a bus
    bandwidth on the large messages of at least O(efficiency_floor) of what the hardware
    allows (NVLink generation on one node; rails x NIC rate / 8 across nodes, bounded by NVLink).
  - Changes nothing on the node; it runs in check mode too (the benchmark is read-only).
  - "No GPU on this node is C(skipped: no hardware); a missing benchmark or launcher is
    C(skipped: all_reduce_perf not found). The module fails the host only when a check is C(fail)."
  - "A run that stopped early (C(Test CUDA failure), C(Test NCCL failure), an MPI abort or srun
    error on stdout or stderr, a table without its C(Avg bus bandwidth) line) is C(fail) on
    C(nccl.<label>.run), quoting the reason; output that is not nccl-tests' fails C(nccl.<label>.output)."
  - "Replay mode: with O(replay_dir) or O(replay) the module judges a recorded output instead of
    running anything: C(<test>_perf.txt) for one node; for several, C(<test>_perf.<host1>+<host2>.txt)
    for exactly those nodes, else C(<test>_perf.<N>node.txt) for any N nodes (for example
    C(all_reduce_perf.2node.txt)); O(replay) keys are the binary name (C(all_reduce_perf))."
extends_documentation_fragment:
  - node_check
options:
  test:
    description: The collective; the binary is C(<test>_perf) unless O(binary) is set.
    type: str
    choices: [all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv]
    default: all_reduce
  binary:
    description: Name or path of the benchmark binary (default C(<test>_perf), looked up in PATH and O(bin_dirs)).
    type: str
  bin_dirs:
    description: Directories searched for the benchmark besides PATH.
    type: list
    elements: str
    default: [/usr/local/bin, /opt/nccl-tests/build, /usr/local/nccl-tests/build]
  gpus:
    description:
      - GPUs per process (C(-g)); default all of this node's GPUs for a single-node run and 1
        with a launcher (one rank per GPU).
    type: int
  min_bytes:
    description: Smallest message (C(-b)).
    type: str
    default: 8M
  max_bytes:
    description: Largest message (C(-e)); bandwidth is judged on messages of 1 GiB and more.
    type: str
    default: 8G
  iters:
    description: Iterations per size (C(-n)).
    type: int
    default: 20
  extra_args:
    description: More benchmark arguments, appended as they are.
    type: list
    elements: str
    default: []
  launcher:
    description:
      - Argv put before the benchmark for a multi-node run, for example
        C([mpirun, --allow-run-as-root, -np, "{np}", -H, "{host_slots}"]) or
        C([srun, -N, "{nodes}", --ntasks-per-node, "{ppn}", -w, "{hosts}"]).
      - "Placeholders: C({hosts}) (comma list), C({host_slots}) (C(a:8,b:8)), C({nodes}), C({ppn})
        (ranks per node), C({np}) (all ranks)."
    type: list
    elements: str
    default: []
  hosts:
    description: The nodes of a multi-node run, this node first.
    type: list
    elements: str
    default: []
  gpus_per_node:
    description: GPUs per node, for the launcher placeholders and the expectation.
    type: int
  label:
    description:
      - Names the run in the check names (C(nccl.<label>.busbw)); default the test, or
        C(<test>:<host1>+<host2>) for a multi-node run.
    type: str
  nvlink_generation:
    description: NVLink generation of the GPUs (3, 4 or 5); the single-node reference.
    type: int
  nic_rate_gbps:
    description: Per-rail NIC rate in Gb/s, for multi-node runs.
    type: float
  rails:
    description: NICs (rails) per node NCCL uses, for multi-node runs.
    type: int
  nvlink_domain:
    description:
      - Every node of the run is a tray of one multi-node NVLink domain (GB200/GB300 NVL72), so the run
        crosses trays over NVLink and is judged against O(nvlink_generation), not the rails.
    type: bool
    default: false
  expected_busbw:
    description: Reference bus bandwidth in GB/s, overriding the derivation (a site's golden run).
    type: float
  efficiency_floor:
    description:
      - Share of the reference the measured bus bandwidth must reach.
      - Unset, the judge's C(nccl_judge.EFFICIENCY_FLOOR) (0.8) applies.
    type: float
  timeout:
    description: Seconds before the benchmark is stopped (through C(timeout) when present); 0 for none.
    type: int
    default: 900
  pci_root:
    description: PCI device tree probed for NVIDIA GPUs.
    type: path
    default: /sys/bus/pci/devices
  environment:
    description: Environment variables for the benchmark (C(NCCL_DEBUG), C(NCCL_IB_HCA), ...).
    type: dict
    default: {}
  replay_dir:
    description: Read the recorded benchmark output from this directory on the node instead of running it.
    type: path
  replay:
    description: "Recorded output per binary name, C({all_reduce_perf: path})."
    type: dict
    default: {}
seealso:
  - module: gpu_check
"""

EXAMPLES = r"""
- name: All-reduce on the node's 8 NVLink-4 GPUs
  nccl_check:
    gpus: 8
    nvlink_generation: 4

- name: All-reduce across two DGX H100 (8 rails of NDR 400)
  nccl_check:
    hosts: [dgx001, dgx033]
    gpus_per_node: 8
    launcher: [mpirun, --allow-run-as-root, -np, "{np}", -H, "{host_slots}", --bind-to, none, -x, NCCL_DEBUG]
    nvlink_generation: 4
    nic_rate_gbps: 400
    rails: 8
"""

RETURN = r"""
status:
  description: Overall verdict; C(skipped) when every check was skipped.
  returned: always
  type: str
checks:
  description: "One entry per check: check, status, measured, expected, message (see gpu_check)."
  returned: always
  type: list
  elements: dict
  sample:
    - check: nccl.all_reduce.busbw
      status: pass
      measured: 470.68
      expected: 360.0
      message: >-
        470.7 GB/s at 1073741824..2147483648 B = 105% of 450.0 GB/s (NVLink 4 intra-node reference);
        floor 80% = 360.0
counts:
  description: Checks per status.
  returned: always
  type: dict
busbw:
  description: Bus bandwidth on the large messages against the reference (GB/s), for reports.
  returned: when the benchmark output was read
  type: dict
  sample: {measured: 470.68, reference: 450.0, floor: 360.0, how: NVLink 4 intra-node reference}
label:
  description: The run's name.
  returned: always
  type: str
hosts:
  description: The nodes of the run.
  returned: always
  type: list
  elements: str
command:
  description: The argv run (live runs).
  returned: when the benchmark ran
  type: list
  elements: str
source:
  description: C(live) or C(replay).
  returned: always
  type: str
rc:
  description: Exit status of the benchmark when it failed.
  returned: when the benchmark failed
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, first_line, nvidia_gpus_on_pci, run_check_module
from ansible.module_utils.nccl_judge import busbw_figures, judge_nccl
from ansible.module_utils.nccl_tests import parse_nccl_tests
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, failed_run, result, skipped


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            test=dict(
                type="str",
                default="all_reduce",
                choices=["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"],
            ),
            binary=dict(type="str"),
            bin_dirs=dict(
                type="list",
                elements="str",
                default=["/usr/local/bin", "/opt/nccl-tests/build", "/usr/local/nccl-tests/build"],
            ),
            gpus=dict(type="int"),
            min_bytes=dict(type="str", default="8M"),
            max_bytes=dict(type="str", default="8G"),
            iters=dict(type="int", default=20),
            extra_args=dict(type="list", elements="str", default=[]),
            launcher=dict(type="list", elements="str", default=[]),
            hosts=dict(type="list", elements="str", default=[]),
            gpus_per_node=dict(type="int"),
            label=dict(type="str"),
            nvlink_generation=dict(type="int"),
            nic_rate_gbps=dict(type="float"),
            rails=dict(type="int"),
            nvlink_domain=dict(type="bool", default=False),
            expected_busbw=dict(type="float"),
            efficiency_floor=dict(type="float"),
            timeout=dict(type="int", default=900),
            pci_root=dict(type="path", default="/sys/bus/pci/devices"),
            environment=dict(type="dict", default={}),
        ),
    )


def label_of(params: dict) -> str:
    if params["label"]:
        return params["label"]
    hosts = params["hosts"]
    return f"{params['test']}:{'+'.join(hosts)}" if len(hosts) > 1 else params["test"]


def launcher_argv(params: dict, gpus_per_node: int | None) -> list:
    hosts = params["hosts"]
    ppn = gpus_per_node or 1
    values = {
        "{hosts}": ",".join(hosts),
        "{host_slots}": ",".join(f"{h}:{ppn}" for h in hosts),
        "{nodes}": str(len(hosts) or 1),
        "{ppn}": str(ppn),
        "{np}": str(ppn * (len(hosts) or 1)),
    }
    argv = []
    for arg in params["launcher"]:
        for placeholder, value in values.items():
            arg = arg.replace(placeholder, value)
        argv.append(arg)
    return argv


# Options that are nccl_judge expectation keys (NCCL_KEYS), by the key they give; nodes comes from hosts.
EXPECTATION_OPTIONS = {
    "nvlink_generation": "nvlink_generation",
    "nic_rate_gbps": "nic_rate_gbps",
    "rails": "rails",
    "nvlink_domain": "nvlink_domain",
    "expected_busbw": "expected_busbw",
    "efficiency_floor": "efficiency_floor",
}


def expectation(params: dict) -> dict:
    expected = {key: params[option] for option, key in EXPECTATION_OPTIONS.items()}
    expected["nvlink_domain"] = expected["nvlink_domain"] or None  # false: no key, the judge's default
    expected["nodes"] = max(len(params["hosts"]), 1)
    return {key: value for key, value in expected.items() if value is not None}


def _renamed(results: list, label: str) -> list:
    """nccl.busbw -> nccl.<label>.busbw, so several runs on one host stay apart."""
    return [
        result(f"nccl.{label}.{r.check.split('.', 1)[1]}", r.status, r.measured, r.expected, r.message) for r in results
    ]


def run_checks(module) -> tuple:
    params = module.params
    binary_name = params["binary"] or f"{params['test']}_perf"
    key = binary_name.rsplit("/", 1)[-1]
    nodes = max(len(params["hosts"]), 1)
    # A recording for these very nodes first (so one node can replay a good and a bad pair), then any N nodes.
    files = {
        key: (f"{key}.txt",) if nodes == 1 else (f"{key}.{'+'.join(params['hosts'])}.txt", f"{key}.{nodes}node.txt")
    }
    tools = Tools(module, files, params["replay_dir"], params["replay"])
    label = label_of(params)
    extra = {"source": "replay" if tools.replaying else "live", "notes": tools.notes, "label": label}
    extra["hosts"] = params["hosts"]
    name = f"nccl.{label}.run"

    if not tools.replaying and not nvidia_gpus_on_pci(params["pci_root"]):
        return [skipped(name, NO_HARDWARE)], extra
    local_gpus = params["gpus_per_node"]
    if local_gpus is None and not tools.replaying:
        local_gpus = len(nvidia_gpus_on_pci(params["pci_root"]))
    multi = bool(params["launcher"])
    gpus = params["gpus"] or (1 if multi else local_gpus or 1)
    argv = [binary_name, "-b", params["min_bytes"], "-e", params["max_bytes"], "-f", "2"]
    argv += ["-g", str(gpus), "-c", "1", "-n", str(params["iters"]), *params["extra_args"]]
    if not tools.replaying:
        program = tools.find(binary_name, params["bin_dirs"])
        if program is None:
            return [skipped(name, f"skipped: {key} not found")], extra
        argv[0] = program
        prefix = launcher_argv(params, local_gpus) if multi else []
        if prefix:
            launcher = tools.find(prefix[0])
            if launcher is None:
                return [skipped(name, f"skipped: {prefix[0]} not found")], extra
            prefix[0] = launcher
        timeout = tools.find("timeout") if params["timeout"] > 0 else None
        guard = [timeout, "--kill-after=30", str(params["timeout"])] if timeout else []
        argv = guard + prefix + argv
        extra["command"] = argv
        rc, stdout, stderr = module.run_command(argv, environ_update=params["environment"] or None)
    else:
        outcome = tools.run(key, argv)
        if outcome is None:
            return [skipped(name, NO_HARDWARE)], extra
        rc, stdout, stderr = outcome.rc, outcome.stdout, outcome.stderr

    exited = None
    if rc != 0:
        why = "timed out" if rc == 124 else f"exited {rc}"
        exited = result(name, FAIL, rc, 0, f"{key} {why}: {first_line(stderr, stdout)}")
        extra.update(rc=rc, stdout=stdout[-20000:], stderr=stderr[-20000:])
    try:
        # The launcher says why a rank died on stderr: read it with the output of a failed run.
        report = parse_nccl_tests(stdout if rc == 0 else f"{stdout}\n{stderr}", source=key)
    except ToolFailed as exc:
        # A timeout cuts the output short too; then the timeout is the reason.
        return [exited if rc == 124 else failed_run(name, exc, rc)], extra
    except ParseError as exc:
        return [exited or result(f"nccl.{label}.output", FAIL, None, "nccl-tests table", str(exc))], extra
    results = [exited] if exited else []
    expected = expectation(params)
    results += _renamed(judge_nccl(report, expected), label)
    figures = busbw_figures(report, expected)
    extra["busbw"] = {key: figures[key] for key in ("measured", "reference", "floor", "how", "ranks", "nodes")}
    return results, extra


def main():
    run_check_module(build_module(), "nccl_check", run_checks)


if __name__ == "__main__":
    main()
