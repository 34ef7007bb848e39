"""One identity per NVLink domain (clusterforge.validation.fabric_domains), on the Fabric sections of
real nvidia-smi -q outputs (tests/fixtures/nvidia-smi_fabric) as fabric_check returns them. Trays
with another identity are those sections with the CliqueId or ClusterUUID replaced, constructed here
and said so (no real output of a tray in a different domain of the same rack is published)."""

from __future__ import annotations

from typing import Any

from clusterforge.validation import judges
from clusterforge.validation.fabric_domains import domain_results
from tests.unit.plugins.module_utils.samples import load

fabric = judges.load("nvidia_fabric")
ATTACHED = fabric.parse_fabric(load("nvidia-smi_fabric", "gb200-fabric-unhealthy-dra-driver-626.txt"))
NO_DOMAIN = fabric.parse_fabric(load("nvidia-smi_fabric", "gb200-fabric-insufficient-resources-azhpc-506.txt"))
UUID = "dc6e40c4-d722-4357-9ba6-5291dd461278"
OTHER = "11111111-2222-3333-4444-555555555555"  # constructed: another cluster's UUID


def tray(host: str, gpus: list[dict[str, Any]], domain: str = "nvl01", **changed: str) -> dict[str, Any]:
    gpus = [{**gpu, **changed} for gpu in gpus]
    status = "skipped" if not fabric._attached(gpus) else "pass"
    return {
        "host": host,
        "domain": domain,
        "status": status,
        "identity": fabric.identity(gpus),
        "gpus": gpus,
        "source": "replay",
    }


def checks(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {host: result["checks"][0] for host, result in results.items()}


def test_the_tray_that_differs_from_most_fails_naming_the_domain_and_both_values():
    results = domain_results([tray("t1", ATTACHED), tray("t2", ATTACHED), tray("t3", ATTACHED, cluster_uuid=OTHER)])
    by_host = checks(results)
    assert {host: check["status"] for host, check in by_host.items()} == {"t1": "pass", "t2": "pass", "t3": "fail"}
    assert by_host["t3"]["check"] == "nvlink_domain.nvl01"
    assert by_host["t3"]["message"] == (
        f"NVLink domain nvl01 (2 of 3 trays report 2/{UUID}): #1 ClusterUUID {OTHER}, expected the domain's {UUID}"
    )
    assert (by_host["t3"]["measured"], by_host["t3"]["expected"]) == (f"2/{OTHER}", f"2/{UUID}")
    assert results["t3"]["status"] == "fail" and results["t3"]["source"] == "replay"


def test_a_tray_in_no_domain_fails_against_the_domain_the_others_report():
    by_host = checks(domain_results([tray("t1", ATTACHED), tray("t2", NO_DOMAIN)]))
    assert by_host["t1"]["status"] == "pass"
    assert by_host["t2"]["status"] == "fail"
    assert by_host["t2"]["message"].startswith(f"NVLink domain nvl01 (1 of 2 trays report 2/{UUID}): #1 in no NVLink")


def test_a_tie_fails_every_tray_naming_them_all():
    by_host = checks(domain_results([tray("t1", ATTACHED), tray("t2", ATTACHED, clique_id="3")]))
    assert {check["status"] for check in by_host.values()} == {"fail"}
    assert by_host["t1"]["message"] == (
        f"NVLink domain nvl01: no identity is reported by more trays than any other (t1 2/{UUID}, t2 3/{UUID})"
    )


def test_domains_are_judged_apart_and_skipped_trays_stay_skipped():
    no_fabric = [{"gpu": "#1", "state": "N/A", "status": "N/A", "health": {}}]
    results = domain_results(
        [tray("a1", ATTACHED), tray("b1", ATTACHED, domain="nvl02", clique_id="9"), tray("a2", no_fabric)]
    )
    by_host = checks(results)
    assert by_host["a1"]["status"] == by_host["b1"]["status"] == "pass"
    assert by_host["b1"]["check"] == "nvlink_domain.nvl02" and by_host["b1"]["expected"] == f"9/{UUID}"
    assert by_host["a2"]["status"] == "skipped" and by_host["a2"]["message"].startswith("skipped: no hardware")


def test_a_tray_whose_check_read_no_fabric_section_fails():
    unread = {"host": "t2", "domain": "nvl01", "status": "fail", "identity": None, "gpus": [], "source": "live"}
    by_host = checks(domain_results([tray("t1", ATTACHED), unread]))
    assert by_host["t2"]["status"] == "fail" and "read no Fabric section" in by_host["t2"]["message"]
    assert by_host["t1"]["status"] == "pass"
