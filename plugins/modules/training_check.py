#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: training_check
short_description: Run the acceptance training job through Slurm, lose a rank, resume, and judge it
description:
  - "Runs clusterforge's acceptance job (ddp_smoke.py, installed by the pytorch role) from a Slurm
    controller or login node across the compute nodes O(nodes): one allocation (C(salloc --no-shell)),
    one task per rank (O(ranks_per_node) per node, block distribution), the env:// rendezvous from
    Slurm's variables (C(SLURM_PROCID), C(SLURM_NTASKS), C(SLURM_LOCALID)) with C(MASTER_ADDR) the
    first node's C(NodeAddr) as sinfo reports it, C(USE_LIBUV=0) (Debian's torch has no libuv)."
  - "O(launcher=srun): three srun steps: an uninterrupted reference run; the job with the last rank
    killing itself before O(kill_at_step); the same step again, which resumes from the last
    checkpoint (rank 0 reads it and broadcasts it, so O(checkpoint_root) need only be on rank 0's
    node). Then the verdict C(training.smoke) of training_judge: every rank finished with the
    reference run's loss after the resume, host and rank named otherwise; steps per second; on
    C(nccl) the all-reduce bus bandwidth against O(expected_busbw_gbps)."
  - "O(launcher=torchrun): one srun task per node runs torchrun (C(python -m torch.distributed.run),
    c10d rendezvous, O(ranks_per_node) ranks per node, C(--max_restarts) O(max_restarts)); two steps:
    the reference run, then the job with the last rank killing itself, which torchrun restarts: every
    rank resumes from the last checkpoint. torchrun may give rank 0 to another node after a restart,
    so O(checkpoint_root) must be on storage every node shares; the module checks that first (a file
    the first node writes is seen on every node) and fails naming the node that does not see it.
    O(rendezvous=file) keeps the rendezvous in a FileStore there, for a torch built without libuv
    (Debian's python3-torch, whose TCPStore rendezvous cannot start): C(USE_LIBUV=0),
    C(TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1), C(--rdzv_conf=store_type=file)."
  - "Each step is limited to O(phase_timeout) seconds (C(timeout --kill-after=10)); a rank waits at
    most half of it for a rendezvous or a collective, so a rank that never joins or a hang ends as
    a C(fail) naming the host and the rank, never a hang of the play."
  - "C(skipped) with the reason, never C(pass): Slurm is not the orchestrator (O(orchestrator)), no
    compute node has the job (no PyTorch), fewer than two ranks on usable nodes, no srun/salloc."
  - Read-only for the cluster's configuration; the checkpoints it writes are removed at the end.
  - 'Replay mode: with O(replay_dir) the steps'' recorded srun outputs (C(training-reference.txt),
    C(training-killed.txt), C(training-resumed.txt), each C(srun --label) output) are judged and
    nothing runs; without the reference recording the node has no hardware.'
extends_documentation_fragment:
  - node_check
options:
  orchestrator:
    description: The cluster's orchestrator; the job runs only through C(slurm).
    type: str
    default: slurm
  nodes:
    description: Compute nodes (Slurm node names) to run on; those sinfo does not show usable are left out.
    type: list
    elements: str
    default: []
  excluded:
    description: Compute nodes left out before the run, with why (shown in the verdict's notes).
    type: dict
    default: {}
  ranks_per_node:
    description: Ranks (tasks) per node; one per GPU on GPU nodes.
    type: int
    default: 1
  backend:
    description: torch.distributed backend, C(gloo) on CPU nodes, C(nccl) on GPU nodes.
    type: str
    choices: [gloo, nccl]
    default: gloo
  launcher:
    description: C(srun) starts one task per rank; C(torchrun) one torchrun per node, which restarts the ranks.
    type: str
    choices: [srun, torchrun]
    default: srun
  rendezvous:
    description:
      - "torchrun's c10d rendezvous store: C(tcp), a TCPStore on the first node at O(master_port) (a torch
        built with libuv, as pip's is); C(file), a FileStore in the job's directory under O(checkpoint_root)
        (a torch without libuv, as Debian's is); C(auto), C(file) when the job's interpreter on the first
        node cannot make a libuv TCPStore (tried there before the job), else C(tcp). Ignored with
        O(launcher=srun)."
    type: str
    choices: [auto, tcp, file]
    default: auto
  max_restarts:
    description: torchrun's C(--max_restarts), the restarts of all ranks after one fails (at least 1, for the resume).
    type: int
    default: 3
  python:
    description: The interpreter with torch on the compute nodes.
    type: path
    default: /usr/bin/python3
  script:
    description: The acceptance job on the compute nodes.
    type: path
    default: /opt/clusterforge/examples/ddp_smoke.py
  checkpoint_root:
    description:
      - Checkpoints go to C(<root>/<job id>/<phase>) on rank 0's node (shared storage works too), removed at the end.
      - Refused when it is a system directory or does not name checkpoints.
    type: path
    default: /scratch/checkpoints/clusterforge-acceptance
  steps:
    description: Training steps.
    type: int
    default: 40
  checkpoint_every:
    description: A checkpoint after every this many steps.
    type: int
    default: 5
  kill_at_step:
    description: The last rank kills itself before this step (between two checkpoints).
    type: int
    default: 23
  seed:
    description: Seed of the model and the data.
    type: int
    default: 1234
  phase_timeout:
    description: Seconds each srun step (and the allocation) may take.
    type: int
    default: 300
  master_port:
    description: Rendezvous TCP port on the first node.
    type: int
    default: 29500
  partition:
    description: Slurm partition; the default partition when unset.
    type: str
  expected_busbw_gbps:
    description: The nccl-tests all-reduce floor (GB/s) the job's bus bandwidth is held to (nccl only).
    type: float
  stall_rank:
    description: Fault injection for tests, -1 for none; this rank sleeps instead of joining (a hung node).
    type: int
    default: -1
  replay_dir:
    description: Judge the srun outputs recorded in this directory on the node instead of running the job.
    type: path
  replay:
    description: 'Recorded outputs by step, C({"reference": path, "killed": path, "resumed": path}).'
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Run the acceptance training job through Slurm
  training_check:
    nodes: "{{ groups['slurm_compute'] }}"
    phase_timeout: 300
"""

RETURN = r"""
status:
  description: Overall verdict.
  returned: always
  type: str
checks:
  description: "C(training.smoke): check, status, measured, expected, message."
  returned: always
  type: list
  elements: dict
counts:
  description: Checks per status.
  returned: always
  type: dict
job:
  description: The job record judged (world_size, hosts, ranks, killed, timeouts, reference_loss, phases).
  returned: when the job ran
  type: dict
notes:
  description: Nodes left out and why.
  returned: always
  type: list
busbw_floor_gbps:
  description: The all-reduce floor (GB/s) the job's bus bandwidth is held to, O(expected_busbw_gbps).
  returned: when O(expected_busbw_gbps) is set
  type: float
rendezvous:
  description: torchrun's rendezvous store, C(tcp) or C(file).
  returned: with O(launcher=torchrun), once the checkpoint root is found shared
  type: str
source:
  description: C(live) or C(replay).
  returned: always
  type: str
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import Tools, check_module, first_line, run_check_module
from ansible.module_utils.training_job import (
    LIBUV_PROBE,
    PHASES,
    SHARED_PROBE,
    TrainingJobError,
    allocation_id,
    error_lines,
    has_libuv,
    job_argv,
    job_record,
    killed_rank,
    layout,
    parse_step_output,
    rank_records,
    srun_argv,
    timeouts,
    torchrun_argv,
    unshared_nodes,
    usable_nodes,
)
from ansible.module_utils.training_judge import CHECK, judge
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, result, skipped

# Options that are training_judge.TRAINING_KEYS, by the key they give.
EXPECTATION_OPTIONS = {"expected_busbw_gbps": "expected_busbw_gbps"}
REPLAY_FILES = {phase: (f"training-{phase}.txt",) for phase in PHASES}

# The root holds a directory per job that the module removes as root: never a system directory.
SYSTEM_DIRS = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib64",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/scratch",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
)


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            orchestrator=dict(type="str", default="slurm"),
            nodes=dict(type="list", elements="str", default=[]),
            excluded=dict(type="dict", default={}),
            ranks_per_node=dict(type="int", default=1),
            backend=dict(type="str", choices=["gloo", "nccl"], default="gloo"),
            launcher=dict(type="str", choices=["srun", "torchrun"], default="srun"),
            rendezvous=dict(type="str", choices=["auto", "tcp", "file"], default="auto"),
            max_restarts=dict(type="int", default=3),
            python=dict(type="path", default="/usr/bin/python3"),
            script=dict(type="path", default="/opt/clusterforge/examples/ddp_smoke.py"),
            checkpoint_root=dict(type="path", default="/scratch/checkpoints/clusterforge-acceptance"),
            steps=dict(type="int", default=40),
            checkpoint_every=dict(type="int", default=5),
            kill_at_step=dict(type="int", default=23),
            seed=dict(type="int", default=1234),
            phase_timeout=dict(type="int", default=300),
            master_port=dict(type="int", default=29500),
            partition=dict(type="str"),
            expected_busbw_gbps=dict(type="float"),
            stall_rank=dict(type="int", default=-1),
        ),
    )


def check_inputs(params: dict) -> str | None:
    """What is wrong with the options (the option, what was expected), or None."""
    root = os.path.normpath(params["checkpoint_root"])
    if root in SYSTEM_DIRS or (
        "checkpoint" not in os.path.basename(root) and "acceptance" not in os.path.basename(root)
    ):
        return (
            f"checkpoint_root {params['checkpoint_root']!r}: expected a directory of its own (its last component "
            "naming checkpoints or acceptance), not a system directory"
        )
    if (
        params["ranks_per_node"] < 1
        or params["steps"] < 2
        or params["checkpoint_every"] < 1
        or params["phase_timeout"] < 10
    ):
        return "expected ranks_per_node >= 1, steps >= 2, checkpoint_every >= 1 and phase_timeout >= 10 seconds"
    if params["launcher"] == "torchrun" and params["max_restarts"] < 1:
        return (
            f"max_restarts {params['max_restarts']}: expected at least 1 with launcher torchrun"
            " (the resume is a restart)"
        )
    if (
        not params["checkpoint_every"] <= params["kill_at_step"] < params["steps"]
        or params["kill_at_step"] % params["checkpoint_every"] == 0
    ):
        return (
            f"kill_at_step {params['kill_at_step']}: expected a step after the first checkpoint (checkpoint_every "
            f"{params['checkpoint_every']}), before the last step ({params['steps']}) and not on a checkpoint, "
            "so the resume has steps to redo"
        )
    return None


class Slurm:
    """The Slurm commands of one run, each under coreutils timeout."""

    def __init__(self, module, limit: int) -> None:
        self.module = module
        self.limit = limit
        self.timeout = module.get_bin_path("timeout", required=False)

    def run(self, argv: list, limit: int | None = None) -> tuple:
        program = self.module.get_bin_path(argv[0], required=False)
        if program is None:
            return None, "", f"{argv[0]} not found"
        command = [program, *argv[1:]]
        if self.timeout:
            command = [self.timeout, "--kill-after=10", str(limit or self.limit), *command]
        return self.module.run_command(command)


def _phase(slurm: Slurm, name: str, argv: list, hosts: dict, limit: int) -> dict:
    began = time.monotonic()
    rc, stdout, stderr = slurm.run(argv, limit)
    records = rank_records(stdout)
    outcome = {"rc": rc, "records": records, "killed": killed_rank(stdout), "timeouts": [], "stderr": stderr[-4000:]}
    if rc not in (0, None) and not records:
        outcome["errors"] = error_lines(stdout + "\n" + stderr)
    # coreutils timeout stopped the step (124; 137 after --kill-after), not a task SIGKILLed (srun 137 too).
    if rc == 124 or (rc == 137 and time.monotonic() - began >= limit):
        outcome["timeouts"] = timeouts(name, records, hosts, limit)
    return outcome


def run_checks(module) -> tuple:
    params = module.params
    extra = {"source": "live", "notes": [f"{node}: {why}" for node, why in sorted(params["excluded"].items())]}
    if params["expected_busbw_gbps"] is not None:
        extra["busbw_floor_gbps"] = params["expected_busbw_gbps"]  # what the job's all-reduce is held to
    tools = Tools(module, REPLAY_FILES, params["replay_dir"], params["replay"])
    if tools.replaying:
        extra["source"] = "replay"
        return _replayed(tools, params), extra
    if params["orchestrator"] != "slurm":
        return [
            skipped(
                CHECK,
                f"skipped: the acceptance job runs through Slurm; the orchestrator is {params['orchestrator']}"
                " (a Kubernetes PyTorchJob is rendered, not run)",
            )
        ], extra
    problem = check_inputs(params)
    if problem:
        module.fail_json(msg=f"training_check: {problem}")
    if not params["nodes"]:
        return [
            skipped(
                CHECK,
                f"skipped: no torch: no compute node has the acceptance job {params['script']}"
                " (the training stage's pytorch role installs it)",
            )
        ], extra
    slurm = Slurm(module, params["phase_timeout"])
    rc, stdout, stderr = slurm.run(
        ["sinfo", "--noheader", "--Node", f"--nodes={','.join(params['nodes'])}", "--format=%N|%T|%o"]
    )
    if rc is None:
        return [skipped(CHECK, "skipped: sinfo not found (not a Slurm controller or login node)")], extra
    if rc != 0:
        return [result(CHECK, FAIL, rc, 0, f"sinfo exited {rc}: {first_line(stderr, stdout)}")], extra
    try:
        usable, other = usable_nodes(stdout)
    except TrainingJobError as exc:
        return [result(CHECK, FAIL, None, "sinfo output", str(exc))], extra
    extra["notes"] += [f"{node}: Slurm state {state}" for node, state in sorted(other.items())]
    nodes = [node for node, _ in usable]
    world = len(nodes) * params["ranks_per_node"]
    if world < 2:
        return [
            skipped(
                CHECK,
                f"skipped: {world} rank(s) on the usable compute nodes ({', '.join(nodes) or 'none'}):"
                " a DDP job needs two",
            )
        ], extra
    hosts = layout(nodes, params["ranks_per_node"])
    allocate = [
        "salloc",
        "--no-shell",
        f"--nodes={len(nodes)}",
        f"--nodelist={','.join(nodes)}",
        f"--ntasks-per-node={params['ranks_per_node']}",
        f"--immediate={params['phase_timeout']}",
        f"--time={max(1, -(-4 * params['phase_timeout'] // 60))}",
        "--job-name=clusterforge-acceptance",
    ]
    if params["partition"]:
        allocate.append(f"--partition={params['partition']}")
    rc, stdout, stderr = slurm.run(allocate)
    try:
        job_id = allocation_id(stderr + stdout)
    except TrainingJobError as exc:
        return [result(CHECK, FAIL, rc, 0, f"{exc} (nodes {', '.join(nodes)})")], extra
    extra["job_id"] = job_id
    workdir = os.path.join(params["checkpoint_root"], job_id)
    kill = {"rank": world - 1, "at_step": params["kill_at_step"]}
    phases = {}
    try:
        if params["launcher"] == "torchrun":
            refused = _torchrun_ready(slurm, params, job_id, nodes, workdir, extra)
            if refused:
                return [refused], extra
            phases = _torchrun_phases(slurm, params, job_id, usable, workdir, hosts, kill, extra["rendezvous"])
            # torchrun, not block distribution, chose which node runs which rank: name them as they said.
            said = phases["reference"]["records"]
            hosts = {**hosts, **{rank: record["host"] for rank, record in said.items() if record.get("host")}}
        else:
            phases = _srun_phases(slurm, params, job_id, usable, workdir, hosts, kill)
    finally:
        slurm.run(srun_argv(job_id, len(nodes), 1, {}, ["rm", "-rf", "--", workdir]), 60)
        slurm.run(["scancel", job_id], 60)
    job = job_record(
        world,
        params["checkpoint_every"],
        hosts,
        {name: {k: v for k, v in outcome.items() if k != "stderr"} for name, outcome in phases.items()},
        params["expected_busbw_gbps"],
    )
    extra["job"] = job
    extra["steps_rc"] = {name: outcome["rc"] for name, outcome in phases.items()}
    failed_stderr = [
        f"{name}: {first_line(outcome['stderr'])}"
        for name, outcome in phases.items()
        if outcome["rc"] not in (0, None) and name != "killed"
    ]
    extra["notes"] += failed_stderr
    return [judge(job)], extra


def _job_command(params: dict, workdir: str, name: str, kill: dict | None = None) -> list:
    """The acceptance job's command line of one phase; a rank waits at most half the phase's limit."""
    return job_argv(
        params["python"],
        params["script"],
        params["backend"],
        params["steps"],
        params["checkpoint_every"],
        os.path.join(workdir, "reference" if name == "reference" else "job"),
        params["seed"],
        max(5, params["phase_timeout"] // 2),
        kill,
        params["stall_rank"],
    )


def _srun_phases(slurm: Slurm, params: dict, job_id: str, usable: list, workdir: str, hosts: dict, kill: dict) -> dict:
    """One srun task per rank; the env:// rendezvous on the first node's address."""
    environment = {"MASTER_ADDR": usable[0][1], "MASTER_PORT": params["master_port"], "USE_LIBUV": 0}

    def step(name: str, kill_rank: dict | None = None) -> dict:
        command = _job_command(params, workdir, name, kill_rank)
        argv = srun_argv(job_id, len(usable), params["ranks_per_node"], environment, command)
        return _phase(slurm, name, argv, hosts, params["phase_timeout"])

    phases = {"reference": step("reference")}
    if phases["reference"]["rc"] == 0:
        phases["killed"] = step("killed", kill)
        # The retried step: what a job script does when srun returns non-zero.
        phases["resumed"] = step("resumed")
    return phases


def _torchrun_ready(slurm: Slurm, params: dict, job_id: str, nodes: list, workdir: str, extra: dict):
    """The fail verdict when torchrun cannot run the job (checkpoint_root not shared, torch that
    cannot say whether it has libuv), else None with extra["rendezvous"] the store it uses."""
    unshared = _unshared(slurm, job_id, nodes, workdir)
    if unshared:
        message = unshared.pop("message")
        return result(CHECK, FAIL, unshared or None, "checkpoint_root on every node", message)
    extra["rendezvous"] = params["rendezvous"]
    if params["rendezvous"] == "auto":
        file_store, problem = _needs_file_store(slurm, params["python"], job_id, nodes[0])
        if problem:
            return result(CHECK, FAIL, None, "torch on the compute nodes", problem)
        extra["rendezvous"] = "file" if file_store else "tcp"
    return None


def _needs_file_store(slurm: Slurm, python: str, job_id: str, node: str) -> tuple:
    """(whether torch on `node` lacks libuv, so the rendezvous needs a FileStore; what went wrong or None)."""
    rc, stdout, stderr = slurm.run(
        ["srun", f"--jobid={job_id}", "--nodes=1", "--ntasks=1", f"--nodelist={node}", python, "-c", LIBUV_PROBE], 60
    )
    libuv = has_libuv(stdout)
    if libuv is None:
        return None, f"rendezvous auto: {python} on {node} could not say whether its torch has libuv: " + (
            first_line(stderr, stdout) or f"exit {rc}"
        )
    return not libuv, None


def _torchrun_phases(
    slurm: Slurm, params: dict, job_id: str, usable: list, workdir: str, hosts: dict, kill: dict, store: str
) -> dict:
    """One srun task per node running torchrun with the node's ranks (and the CPUs the allocation
    gave them); the resume is torchrun's own restart, within the same step. store: tcp or file."""
    file_store = store == "file"
    # Without libuv: the workers' env:// store and the agents' stores the old way, none shared.
    environment = {"USE_LIBUV": 0, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": 1} if file_store else {}

    def step(name: str, kill_rank: dict | None = None) -> dict:
        rendezvous = {
            "id": f"clusterforge-{job_id}-{name}",
            "file": file_store,
            "endpoint": os.path.join(workdir, f"rendezvous-{name}")
            if file_store
            else f"{usable[0][1]}:{params['master_port']}",
        }
        command = torchrun_argv(
            _job_command(params, workdir, name, kill_rank),
            len(usable),
            params["ranks_per_node"],
            rendezvous,
            params["max_restarts"],
            max(5, params["phase_timeout"] // 2),
        )
        argv = srun_argv(job_id, len(usable), 1, environment, command, cpus_per_task=params["ranks_per_node"])
        return _phase(slurm, name, argv, hosts, params["phase_timeout"])

    phases = {"reference": step("reference")}
    if phases["reference"]["rc"] == 0:
        phases["elastic"] = step("elastic", kill)
    return phases


def _unshared(slurm: Slurm, job_id: str, nodes: list, workdir: str) -> dict | None:
    """None when a file the first node writes in `workdir` is seen on every node; else what was
    measured (the nodes that do not see it) and the message of the verdict."""
    marker = os.path.join(workdir, "shared-check")
    write = ["sh", "-c", 'mkdir -p -- "$1" && touch -- "$2"', "sh", workdir, marker]
    rc, stdout, stderr = slurm.run(
        ["srun", f"--jobid={job_id}", "--nodes=1", "--ntasks=1", f"--nodelist={nodes[0]}", *write], 60
    )
    if rc != 0:
        return {"message": f"checkpoint_root: could not write {marker} on {nodes[0]}: {first_line(stderr, stdout)}"}
    rc, stdout, stderr = slurm.run(srun_argv(job_id, len(nodes), 1, {}, [*SHARED_PROBE, marker]), 60)
    missing = unshared_nodes(stdout, nodes)
    if not missing:
        return None
    return {
        "unshared": missing,
        "message": f"checkpoint_root {os.path.dirname(workdir)} is not shared by every node: {', '.join(missing)}"
        f" do not see the file {nodes[0]} wrote there; torchrun may give rank 0 to another node after a restart and"
        " keeps a file rendezvous there: put it on storage every node mounts (Lustre, NFS)",
    }


def _replayed(tools: Tools, params: dict) -> list:
    """The verdict on recorded srun outputs: the ranks and hosts as the records name them."""
    phases = {}
    for phase in PHASES:
        path = tools.recording(phase)
        if path is None:
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        try:
            phases[phase] = dict(parse_step_output(text, source=path), timeouts=[])
        except ParseError as exc:
            return [result(CHECK, FAIL, None, "the acceptance job's output", str(exc))]
    if "reference" not in phases:
        return [skipped(CHECK, NO_HARDWARE)]
    records = phases["reference"]["records"]
    hosts = {rank: record.get("host") for rank, record in records.items()}
    return [judge(job_record(len(records), params["checkpoint_every"], hosts, phases, params["expected_busbw_gbps"]))]


def main():
    module = build_module()
    run_check_module(module, "training_check", run_checks)


if __name__ == "__main__":
    main()
