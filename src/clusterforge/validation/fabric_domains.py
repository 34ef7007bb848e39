"""One identity per NVLink domain: every tray of a domain must report the same CliqueId and ClusterUUID.

Each tray's fabric_check judges its own GPUs (they agree with each other); only the controller
sees all the trays of a domain. The domain's expected identity is the one most of its trays
report (trays in no domain, all-zero UUID or clique 0, do not vote); each tray is then judged by
the fabric judge's own domain check (nvidia_fabric.judge_domain) against it, so a tray that
differs fails with the domain and both values named. When no identity is reported by more trays
than any other, there is no telling which is right: every tray of the domain fails, naming them all.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from clusterforge.validation import judges

MODULE = "fabric_domain"


def check_name(domain: str) -> str:
    return f"nvlink_domain.{domain}"


def _key(identity: dict[str, Any] | None) -> tuple[str, str] | None:
    if not identity:
        return None
    return str(identity["clique_id"]), str(identity["cluster_uuid"]).lower()


def _said(key: tuple[str, str] | None) -> str:
    return f"{key[0]}/{key[1]}" if key else "none"


def domain_results(trays: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """trays: one entry per tray whose fabric_check ran, {host, domain, status, identity, gpus,
    source} (identity and gpus as fabric_check returns them). Returns {host: a module-like result
    (status, checks, counts, source, domain, expected)} for validate's records."""
    fabric = judges.load("nvidia_fabric")
    verdicts = judges.load("verdicts")
    plumbing = judges.load("check_module")
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for tray in trays:
        by_domain.setdefault(str(tray["domain"]), []).append(tray)
    found: dict[str, dict[str, Any]] = {}
    for domain, members in sorted(by_domain.items()):
        judged = [tray for tray in members if tray.get("status") != verdicts.SKIPPED]
        votes = Counter(key for key in (_key(tray.get("identity")) for tray in judged) if key)
        ranked = votes.most_common()
        expected = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
        for tray in members:
            found[tray["host"]] = _tray_result(fabric, verdicts, plumbing, domain, tray, judged, votes, expected)
    return found


def _tray_result(fabric, verdicts, plumbing, domain, tray, judged, votes, expected) -> dict[str, Any]:
    name = check_name(domain)
    if tray not in judged:
        check = verdicts.skipped(name, f"{verdicts.NO_HARDWARE} (this tray's fabric check was skipped)")
    elif not tray.get("gpus"):
        check = verdicts.result(
            name,
            verdicts.FAIL,
            None,
            _said(expected) if expected else "one CliqueId/ClusterUUID reported by most trays",
            f"NVLink domain {domain}: this tray's fabric check read no Fabric section (see its gpu.fabric_state)",
        )
    elif expected is None:
        reported = ", ".join(f"{t['host']} {_said(_key(t.get('identity')))}" for t in judged)
        why = "no tray reports one" if not votes else "no identity is reported by more trays than any other"
        check = verdicts.result(
            name,
            verdicts.FAIL,
            _said(_key(tray.get("identity"))),
            "one CliqueId/ClusterUUID reported by most trays",
            f"NVLink domain {domain}: {why} ({reported})",
        )
    else:
        want = {"clique_id": expected[0], "cluster_uuid": expected[1]}
        judged_tray = fabric.judge_domain(tray.get("gpus") or [], want)
        share = f"{votes[expected]} of {len(judged)} trays report {_said(expected)}"
        check = verdicts.result(
            name,
            judged_tray.status,
            _said(_key(tray.get("identity"))),
            _said(expected),
            f"NVLink domain {domain} ({share}): {judged_tray.message}",
        )
    body = plumbing.payload([check])
    # msg: what the host's failure says in the run's summary, as a module's fail_json msg would.
    failed = check.status == verdicts.FAIL
    body.update(
        msg=plumbing.failure_message(MODULE, [check]) if failed else f"{MODULE}: {check.status}",
        source=tray.get("source") or "live",
        domain=domain,
        expected=_said(expected) if expected else None,
    )
    return body
