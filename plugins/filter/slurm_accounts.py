# Copyright: clusterforge contributors
# Apache License 2.0
"""The slurm.conf settings that Slurm accounts, users and QoS need, for the slurm role's template."""

from __future__ import annotations

DOCUMENTATION = r"""
name: clusterforge_slurm_accounts_conf
short_description: slurm.conf settings for the accounts, users and QoS the slurm_accounts role applies
description:
  - "Nothing declared: no settings (slurm.conf stays as it was)."
  - "Something declared: the limits are enforced (AccountingStorageEnforce=associations,limits,qos)
    and the GPUs are a TRES the limits can name (AccountingStorageTRES=gres/gpu, plus any other
    gres a limit names); the priority is multifactor, with fair share weighed in when an account
    or user declares a fairshare and the QoS priority when a QoS declares one."
  - "A QoS that preempts another (its preempt list is not empty): PreemptType=preempt/qos and
    PreemptMode=REQUEUE (a QoS's own preempt_mode overrides it for its jobs)."
positional: _input, accounts, users
options:
  _input:
    description: The QoS (slurm_accounts_qos).
    type: list
    elements: dict
    required: true
  accounts:
    description: The accounts (slurm_accounts_accounts).
    type: list
    elements: dict
    default: []
  users:
    description: The users (slurm_accounts_users).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
- name: The settings as key=value lines
  ansible.builtin.debug:
    msg: "{{ slurm_accounts_qos | clusterforge_slurm_accounts_conf(slurm_accounts_accounts, slurm_accounts_users) }}"
"""

RETURN = r"""
_value:
  description: slurm.conf key -> value.
  type: dict
"""

ENFORCE = "associations,limits,qos"
TRES_KEYS = ("grp_tres", "max_tres_per_job", "max_tres_per_user")
# Weights of the multifactor priority: fair share and QoS priority on the same scale, so either can
# reorder the queue (slurm_conf_extra overrides them).
WEIGHT = 10000


def _present(entries) -> list[dict]:
    # Malformed entries are the slurm_accounts module's to report (naming the entry and field).
    return [e for e in entries or [] if isinstance(e, dict) and e.get("state", "present") == "present"]


def accounts_conf(qos, accounts=None, users=None) -> dict[str, str]:
    qos, accounts, users = _present(qos), _present(accounts), _present(users)
    if not (qos or accounts or users):
        return {}
    gres = {"gres/gpu"}
    for entry in qos + accounts + users:
        for key in TRES_KEYS:
            limits = entry.get(key)
            if isinstance(limits, dict):
                gres.update(name for name in limits if isinstance(name, str) and name.startswith("gres/"))
    settings = {
        "AccountingStorageEnforce": ENFORCE,
        "AccountingStorageTRES": ",".join(sorted(gres)),
        "PriorityType": "priority/multifactor",
    }
    if any("fairshare" in entry for entry in accounts + users):
        settings["PriorityWeightFairshare"] = str(WEIGHT)
    if any("priority" in entry for entry in qos):
        settings["PriorityWeightQOS"] = str(WEIGHT)
    if any(entry.get("preempt") for entry in qos):
        settings["PreemptType"] = "preempt/qos"
        settings["PreemptMode"] = "REQUEUE"
    return settings


class FilterModule:
    def filters(self):
        return {"clusterforge_slurm_accounts_conf": accounts_conf}
