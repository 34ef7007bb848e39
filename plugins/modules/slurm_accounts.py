#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_accounts
short_description: Slurm accounts, users and QoS in the accounting database, applied with sacctmgr
description:
  - "Reads the accounting database (C(sacctmgr --parsable2 show qos/account/assoc/user/tres)),
    compares it with O(qos), O(accounts) and O(users) and runs only the C(sacctmgr --immediate)
    commands that make up the difference: nothing when they agree."
  - "Only the fields an entry declares are managed. A TRES mapping declared is the whole limit
    (a TRES not in it is reset to no limit). A user declared lists all of its associations on the
    cluster. Accounts, users and QoS not declared are left alone unless O(prune); C(state=absent)
    removes one. The account and user root and the QoS normal are never removed."
  - "A removal (an account with the accounts below it, a user or a user's association, a QoS)
    that would take the association or QoS of active jobs (C(squeue)) is refused, naming the
    jobs, before anything is changed, unless O(allow_cancel_jobs), which cancels them first.
    slurmdbd learns of a cancelled job's end from slurmctld after C(squeue) has dropped it, so a
    removal it refuses for active jobs after such a cancel is tried again for O(cancel_timeout)."
  - Supports check mode (the difference, nothing applied) and diff mode.
  - Runs where C(sacctmgr) reaches slurmdbd (the Slurm controller).
options:
  cluster:
    description: The cluster whose associations are managed (ClusterName).
    type: str
    required: true
  qos:
    description:
      - "QoS: V(name), V(state), V(description), V(priority), V(preempt) (the QoS whose jobs this
        one preempts), V(preempt_mode), V(usage_factor), V(grp_tres), V(max_tres_per_job),
        V(max_tres_per_user) (TRES mappings such as C({gres/gpu: 8})), V(max_wall)."
    type: list
    elements: dict
    default: []
  accounts:
    description:
      - "Accounts: V(name), V(state), V(parent) (default root), V(description), V(organization),
        V(fairshare), V(grp_tres), V(max_tres_per_job), V(max_wall), V(qos), V(default_qos)."
    type: list
    elements: dict
    default: []
  users:
    description:
      - "Users: V(name), V(state), V(accounts) (all of its accounts), V(default_account) (default
        the first account), and the limits of its associations: V(fairshare), V(grp_tres),
        V(max_tres_per_job), V(max_wall), V(qos), V(default_qos)."
    type: list
    elements: dict
    default: []
  prune:
    description: Remove the accounts, users and QoS that are not declared (root and normal excepted).
    type: bool
    default: false
  allow_cancel_jobs:
    description: Cancel the active jobs of what is removed (then remove it) instead of refusing.
    type: bool
    default: false
  cancel_timeout:
    description: Seconds to wait for cancelled jobs to leave the queue, and again for slurmdbd to record their end.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Accounts, users and QoS of the cluster
  slurm_accounts:
    cluster: lab
    qos:
      - {name: low, priority: 0, preempt_mode: requeue}
      - {name: high, priority: 100, preempt: [low]}
    accounts:
      - {name: ml, fairshare: 100, grp_tres: {gres/gpu: 8}, qos: [normal, low, high]}
    users:
      - {name: alice, accounts: [ml]}
"""

RETURN = r"""
changes:
  description: What was (or, in check mode, would be) changed, one line per sacctmgr command.
  returned: always
  type: list
  elements: str
commands:
  description: The sacctmgr commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: list
cancelled_jobs:
  description: Job ids cancelled before removals (only with allow_cancel_jobs).
  returned: always
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sacctmgr import SQUEUE_FORMAT, parse_squeue
from ansible.module_utils.slurm_accounts import SpecError, blocking_jobs, diff_text, plan, read_state, show_commands
from ansible.module_utils.verdicts import ParseError

C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
# slurmdbd's refusal of a removal while its records hold a job of it without an end.
JOBS_ACTIVE = "Job(s) active"


def build_module() -> AnsibleModule:
    return AnsibleModule(
        argument_spec={
            "cluster": {"type": "str", "required": True},
            "qos": {"type": "list", "elements": "dict", "default": []},
            "accounts": {"type": "list", "elements": "dict", "default": []},
            "users": {"type": "list", "elements": "dict", "default": []},
            "prune": {"type": "bool", "default": False},
            "allow_cancel_jobs": {"type": "bool", "default": False},
            "cancel_timeout": {"type": "int", "default": 60},
        },
        supports_check_mode=True,
    )


def _run(module: AnsibleModule, argv: list[str], what: str) -> str:
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    if rc != 0:
        module.fail_json(msg=f"slurm_accounts: {what} failed: {' '.join(argv)}", rc=rc, stdout=out, stderr=err)
    return out


def _active_jobs(module: AnsibleModule, squeue: str, ids=None) -> list[dict[str, str]]:
    argv = [squeue, "--all", "--format=" + SQUEUE_FORMAT]
    if ids:
        argv.append("--jobs=" + ",".join(ids))
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    if rc != 0 and ids:
        return []  # squeue --jobs fails once none of the jobs is known any more
    if rc != 0:
        module.fail_json(msg="slurm_accounts: reading the active jobs failed", rc=rc, stdout=out, stderr=err)
    try:
        return parse_squeue(out)
    except ParseError as exc:
        module.fail_json(msg=f"slurm_accounts: {exc}", stdout=out)
        raise


def _apply(module: AnsibleModule, argv: list[str], wait_for_jobs_s: int) -> tuple[int, str, str]:
    """One sacctmgr command, tried again for up to wait_for_jobs_s while slurmdbd refuses it for
    active jobs (the jobs this run cancelled, whose end slurmctld has not sent it yet)."""
    deadline = time.monotonic() + wait_for_jobs_s
    while True:
        rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
        if rc == 0 or JOBS_ACTIVE not in out + err or time.monotonic() >= deadline:
            return rc, out, err
        time.sleep(1)


def _jobs_active_hint(cancelled: list[str], waited: int) -> str:
    if cancelled:
        return f" slurmdbd still counted jobs active {waited} s after jobs {', '.join(cancelled)} were cancelled."
    # squeue listed no job of it: slurmdbd holds records of jobs that never ended there.
    return " squeue lists none of those jobs: see `sacctmgr show runawayjobs`."


def _describe(jobs: list[dict[str, str]]) -> str:
    return ", ".join(f"{j['JOBID']} ({j['USER']}, account {j['ACCOUNT']}, qos {j['QOS']}, {j['STATE']})" for j in jobs)


def main() -> None:
    module = build_module()
    params = module.params
    sacctmgr = module.get_bin_path("sacctmgr")
    if sacctmgr is None:
        if module.check_mode:
            module.exit_json(
                changed=False,
                skipped=True,
                changes=[],
                commands=[],
                cancelled_jobs=[],
                msg="check mode: sacctmgr is not installed yet, nothing compared",
            )
        module.fail_json(msg="slurm_accounts: sacctmgr not found on this host (run it on the Slurm controller)")

    outputs = {}
    for key, args in show_commands(params["cluster"]).items():
        argv = [sacctmgr, "--parsable2", *args]
        rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
        if rc != 0 and module.check_mode:
            # A fresh controller in check mode: slurmdbd is not running yet.
            module.exit_json(
                changed=False,
                skipped=True,
                changes=[],
                commands=[],
                cancelled_jobs=[],
                msg=f"check mode: the accounting database cannot be read yet ({err.strip()[:200]}), nothing compared",
            )
        if rc != 0:
            module.fail_json(
                msg=f"slurm_accounts: reading the accounting database failed: {' '.join(argv)}",
                rc=rc,
                stdout=out,
                stderr=err,
            )
        outputs[key] = out
    try:
        state = read_state(outputs)
        changes = plan(params["qos"], params["accounts"], params["users"], state, params["cluster"], params["prune"])
    except (SpecError, ParseError) as exc:
        module.fail_json(msg=f"slurm_accounts: {exc}")
        raise

    commands = [[sacctmgr, "--immediate", *change.args] for change in changes]
    result = {
        "changed": bool(changes),
        "changes": [change.text for change in changes],
        "commands": commands,
        "cancelled_jobs": [],
        "diff": diff_text(changes),
    }

    # Every removal is checked against the active jobs before anything is changed.
    if any(change.removal for change in changes):
        squeue = module.get_bin_path("squeue", required=True)
        blocked = blocking_jobs(changes, _active_jobs(module, squeue))
        if blocked and not params["allow_cancel_jobs"]:
            module.fail_json(
                msg="slurm_accounts: refusing to remove what active jobs run under (nothing was changed): "
                + "; ".join(f"{label}: jobs {_describe(jobs)}" for label, jobs in blocked.items())
                + ". Let the jobs end, or set allow_cancel_jobs to cancel them first.",
                blocked={label: [j["JOBID"] for j in jobs] for label, jobs in blocked.items()},
                **{k: v for k, v in result.items() if k != "changed"},
            )
        ids = sorted({job["JOBID"] for jobs in blocked.values() for job in jobs})
        result["cancelled_jobs"] = ids
        if ids and not module.check_mode:
            scancel = module.get_bin_path("scancel", required=True)
            _run(module, [scancel, *ids], "cancelling the jobs of what is removed")
            deadline = time.monotonic() + params["cancel_timeout"]
            while _active_jobs(module, squeue, ids):
                if time.monotonic() > deadline:
                    waited = params["cancel_timeout"]
                    module.fail_json(msg=f"slurm_accounts: jobs {', '.join(ids)} still active {waited} s after scancel")
                time.sleep(1)

    if module.check_mode:
        module.exit_json(**result)
    cancelled, waited = result["cancelled_jobs"], params["cancel_timeout"]
    for change, argv in zip(changes, commands):  # noqa: B905 (3.8 nodes; one command per change)
        rc, out, err = _apply(module, argv, waited if change.removal and cancelled else 0)
        if rc != 0:
            done = result["changes"][: changes.index(change)]
            hint = _jobs_active_hint(cancelled, waited) if JOBS_ACTIVE in out + err else ""
            module.fail_json(
                msg=f"slurm_accounts: sacctmgr refused '{change.text}'.{hint}",
                rc=rc,
                stdout=out,
                stderr=err,
                command=argv,
                applied_before=done,
            )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
