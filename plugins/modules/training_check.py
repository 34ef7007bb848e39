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
  - "Three srun steps: an uninterrupted reference run; the job with the last rank killing itself
    before O(kill_at_step); the same step again, which resumes from the last checkpoint (rank 0
    reads it and broadcasts it, so O(checkpoint_root) need only be on rank 0's node). Then the
    verdict C(training.smoke) of training_judge: every rank finished with the reference run's loss
    after the resume, host and rank named otherwise; steps per second; on C(nccl) the all-reduce
    bus bandwidth against O(expected_busbw_gbps)."
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
    description: C(srun) starts one task per rank; C(torchrun) is not implemented yet (fails saying so).
    type: str
    choices: [srun, torchrun]
    default: srun
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
    PHASES,
    TrainingJobError,
    allocation_id,
    job_argv,
    job_record,
    killed_rank,
    layout,
    rank_records,
    srun_argv,
    timeouts,
    usable_nodes,
)
from ansible.module_utils.training_judge import CHECK, judge
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, result, skipped

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
    # coreutils timeout stopped the step (124; 137 after --kill-after), not a task SIGKILLed (srun 137 too).
    if rc == 124 or (rc == 137 and time.monotonic() - began >= limit):
        outcome["timeouts"] = timeouts(name, records, hosts, limit)
    return outcome


def run_checks(module) -> tuple:
    params = module.params
    extra = {"source": "live", "notes": [f"{node}: {why}" for node, why in sorted(params["excluded"].items())]}
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
    if params["launcher"] == "torchrun":
        module.fail_json(
            msg="training_check: launcher torchrun is not implemented yet (Debian's torchrun needs libuv); "
            "use launcher srun"
        )
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
    environment = {"MASTER_ADDR": usable[0][1], "MASTER_PORT": params["master_port"], "USE_LIBUV": 0}
    workdir = os.path.join(params["checkpoint_root"], job_id)
    kill = {"rank": world - 1, "at_step": params["kill_at_step"]}
    limit = params["phase_timeout"]

    def step(name: str, kill_rank: dict | None = None) -> dict:
        command = job_argv(
            params["python"],
            params["script"],
            params["backend"],
            params["steps"],
            params["checkpoint_every"],
            os.path.join(workdir, "reference" if name == "reference" else "job"),
            params["seed"],
            max(5, limit // 2),
            kill_rank,
            params["stall_rank"],
        )
        return _phase(
            slurm, name, srun_argv(job_id, len(nodes), params["ranks_per_node"], environment, command), hosts, limit
        )

    phases = {}
    try:
        phases["reference"] = step("reference")
        if phases["reference"]["rc"] == 0:
            phases["killed"] = step("killed", kill)
            # The retried step: what a job script does when srun returns non-zero.
            phases["resumed"] = step("resumed")
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


def _replayed(tools: Tools, params: dict) -> list:
    """The verdict on recorded srun outputs: the ranks and hosts as the records name them."""
    phases = {}
    for phase in PHASES:
        path = tools.recording(phase)
        if path is None:
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        phases[phase] = {"records": rank_records(text), "killed": killed_rank(text), "timeouts": []}
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
