#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: training_burnin
short_description: Run the acceptance training job on this node again and again for a set time
description:
  - Runs the pytorch role's acceptance job (C(ddp_smoke.py)) with O(ranks) processes on this node
    (C(env://) rendezvous on 127.0.0.1), again and again until O(seconds) have passed, each run in
    a fresh temporary directory, and judges the runs with C(plugins/module_utils/burnin_judge.py).
    Every run must exit 0 and every rank report, and all runs must end with the same final loss.
  - "Without torch importable by O(python), or without the job script, it is C(skipped: torch not
    installed) / C(skipped: <script> not found): the pytorch role installs both."
  - Writes only in its temporary directories, which it removes; it runs in check mode too.
extends_documentation_fragment:
  - node_check
options:
  seconds:
    description: How long to keep training (at least one run).
    type: int
    default: 600
  steps:
    description: Training steps per run (C(--steps)).
    type: int
    default: 200
  ranks:
    description: Processes per run (one per GPU on a GPU node, with O(backend=nccl)).
    type: int
    default: 1
  backend:
    description: torch.distributed backend.
    type: str
    choices: [gloo, nccl]
    default: gloo
  script:
    description: The acceptance job.
    type: path
    default: /opt/clusterforge/examples/ddp_smoke.py
  python:
    description: Interpreter with torch (default the pytorch role's current env when present, else python3).
    type: str
  run_timeout:
    description: Seconds one run may take before it is killed (a hung collective).
    type: int
    default: 600
seealso:
  - module: nccl_check
"""

EXAMPLES = r"""
- name: Train for ten minutes
  training_burnin:
    seconds: 600
"""

RETURN = r"""
status:
  description: Overall verdict.
  returned: always
  type: str
checks:
  description: "C(training.burnin): runs, seconds and the final losses measured."
  returned: always
  type: list
  elements: dict
runs:
  description: "One entry per run: run, rc, seconds, records (each rank's record), error."
  returned: always
  type: list
  elements: dict
source:
  description: C(live).
  returned: always
  type: str
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.burnin_judge import judge_runs
from ansible.module_utils.check_module import check_module, run_check_module
from ansible.module_utils.verdicts import skipped

PYTORCH_ENV_PYTHON = "/opt/clusterforge/envs/pytorch-current/bin/python"


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            seconds=dict(type="int", default=600),
            steps=dict(type="int", default=200),
            ranks=dict(type="int", default=1),
            backend=dict(type="str", default="gloo", choices=["gloo", "nccl"]),
            script=dict(type="path", default="/opt/clusterforge/examples/ddp_smoke.py"),
            python=dict(type="str"),
            run_timeout=dict(type="int", default=600),
        ),
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def one_run(number: int, python: str, params: dict) -> dict:
    """Start the ranks, wait for them (killing all at run_timeout), read their records."""
    work = tempfile.mkdtemp(prefix="clusterforge-burnin-")
    started = time.monotonic()
    try:
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE=str(params["ranks"]))
        argv = [python, params["script"], "--backend", params["backend"], "--steps", str(params["steps"])]
        argv += ["--checkpoint-dir", os.path.join(work, "checkpoints"), "--result-dir", os.path.join(work, "results")]
        ranks = []
        for rank in range(params["ranks"]):
            rank_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
            log = open(os.path.join(work, f"rank-{rank}.log"), "wb")  # noqa: SIM115 (closed after the wait)
            ranks.append((subprocess.Popen(argv, env=rank_env, stdout=log, stderr=subprocess.STDOUT), log))
        deadline = started + params["run_timeout"]
        codes = []
        for process, log in ranks:
            try:
                codes.append(process.wait(timeout=max(1.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                for other, _ in ranks:
                    other.kill()
                codes.append(process.wait())
                return {
                    "run": number,
                    "rc": None,
                    "seconds": time.monotonic() - started,
                    "records": [],
                    "error": f"killed after {params['run_timeout']} s (run_timeout)",
                }
            finally:
                log.close()
        records = []
        results = os.path.join(work, "results")
        for name in sorted(os.listdir(results)) if os.path.isdir(results) else []:
            if not (name.startswith("rank-") and name.endswith(".json")):
                continue
            with open(os.path.join(results, name), encoding="utf-8") as handle:
                records.append(json.load(handle))
        rc = max(codes, key=abs)
        run = {"run": number, "rc": rc, "seconds": round(time.monotonic() - started, 2), "records": records}
        if rc != 0:
            failed_log = os.path.join(work, f"rank-{codes.index(rc)}.log")
            with open(failed_log, encoding="utf-8", errors="replace") as log:
                run["error"] = f"exited {rc}: {log.read()[-300:].strip()}"
        return run
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_checks(module) -> tuple:
    params = module.params
    extra = {"source": "live", "runs": []}
    python = params["python"] or (PYTORCH_ENV_PYTHON if os.path.exists(PYTORCH_ENV_PYTHON) else "python3")
    if not os.path.isfile(params["script"]):
        reason = f"skipped: {params['script']} not found (the pytorch role installs it)"
        return [skipped("training.burnin", reason)], extra
    rc, _, _ = module.run_command([python, "-c", "import torch"])
    if rc != 0:
        return [skipped("training.burnin", f"skipped: torch not installed ({python} cannot import torch)")], extra
    started = time.monotonic()
    runs = []
    while not runs or time.monotonic() - started < params["seconds"]:
        runs.append(one_run(len(runs) + 1, python, params))
        if runs[-1].get("error"):
            break  # a broken node: the verdict is known, the rest of the time would be wasted
    extra["runs"] = runs
    return [judge_runs(runs, params["seconds"], params["ranks"], time.monotonic() - started)], extra


def main():
    run_check_module(build_module(), "training_burnin", run_checks)


if __name__ == "__main__":
    main()
