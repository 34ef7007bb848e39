"""A host's verdict after the bisection: the one rule both playbooks/validate.yml (through the
clusterforge_validation_host_verdict filter) and the validation report apply.

A record is one module run as playbooks/validate.yml stores it (plugins/filter/validation.py
``records``): {"module", "status", "checks": [{check, status, ...}], "scope", "hosts", ...}, or
{"error": ...} when the module crashed before judging. A host's verdict is the worst status of
its records in the verdict order of plugins/module_utils/verdicts.py, except that a failed pair or
group run does not count against a host the bisection cleared (it passed with a known-good node
or in a half that passed); the culprit it names failed its own runs, which count.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clusterforge.validation.judges import load

verdicts = load("verdicts")

# Runs that name a group of nodes, not one: a pair, or a run across many nodes and the halves its
# bisection ran. The record sits on the node that led the run, which the bisection may clear.
GROUP_SCOPES = ("pair", "group")


def counts_against(host: str, record: dict[str, Any], cleared: Iterable[str]) -> bool:
    """Whether this record's verdict counts against the host."""
    return not (record.get("scope") in GROUP_SCOPES and host in set(cleared or ()))


def crashed(record: dict[str, Any]) -> bool:
    """The module returned no verdict (it crashed, or failed before judging anything)."""
    return "error" in record or not isinstance(record.get("checks"), list)


def record_status(record: dict[str, Any]) -> str:
    """The worst of a record's checks; a crashed run fails, and so does a status nobody knows."""
    if crashed(record):
        return verdicts.FAIL
    return verdicts.worst(str(check.get("status")) for check in record["checks"])


def host_verdict(host: str, records: Iterable[dict[str, Any]], cleared: Iterable[str] = ()) -> dict[str, Any]:
    """{"status": the host's verdict, "failures": the messages of the counted failed runs}."""
    counted = [record for record in records if counts_against(host, record, cleared)]
    failed = [record for record in counted if record_status(record) == verdicts.FAIL]
    return {
        "status": verdicts.worst(record_status(record) for record in counted),
        "failures": [str(record.get("msg") or record.get("error") or "a check module failed") for record in failed],
    }
