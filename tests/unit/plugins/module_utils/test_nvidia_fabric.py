"""nvidia-smi -q Fabric sections: the parser and the fabric judge on real outputs (each with a
.source): a GB200 tray registered in clique 2 but Unhealthy (dra-driver-nvidia-gpu #626), a
node whose probe ended in Insufficient Resources with no domain (azhpc-images #506), and an
A100 node off any NVLink fabric (State N/A)."""

from __future__ import annotations

import pytest
from ansible.module_utils.nvidia_fabric import (
    DOMAIN_CHECK,
    HEALTH_CHECK,
    STATE_CHECK,
    judge_fabric,
    parse_fabric,
)
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, PASS, SKIPPED, ParseError

from .samples import fixture, names, read

KIND = "nvidia-smi_fabric"
UNHEALTHY = "gb200-fabric-unhealthy-dra-driver-626.txt"
NO_DOMAIN = "gb200-fabric-insufficient-resources-azhpc-506.txt"
UUID = "dc6e40c4-d722-4357-9ba6-5291dd461278"


def statuses(results) -> dict:
    return {r.check: r.status for r in results}


def test_every_fixture_is_judged_here():
    assert names(KIND) == {UNHEALTHY, NO_DOMAIN}


def test_parser_reads_state_clique_uuid_and_health():
    (gpu,) = parse_fabric(read(fixture(KIND, UNHEALTHY)))
    assert gpu["state"] == "Completed" and gpu["status"] == "Success"
    assert gpu["clique_id"] == "2" and gpu["cluster_uuid"] == UUID
    assert gpu["health"] == {"Summary": "Unhealthy", "Bandwidth": "Full"}


def test_registered_tray_in_its_domain_passes_state_and_domain_but_fails_health():
    results = judge_fabric(parse_fabric(read(fixture(KIND, UNHEALTHY))), {"clique_id": 2, "cluster_uuid": UUID})
    assert statuses(results) == {STATE_CHECK: PASS, DOMAIN_CHECK: PASS, HEALTH_CHECK: FAIL}
    assert "#1 Unhealthy" in results[2].message


def test_tray_in_another_domain_fails():
    gpus = parse_fabric(read(fixture(KIND, UNHEALTHY)))
    other = "9c6f5af3-53bf-49b5-a436-b66766c413c3"
    results = judge_fabric(gpus, {"cluster_uuid": other, "fabric_health": False})
    assert statuses(results) == {STATE_CHECK: PASS, DOMAIN_CHECK: FAIL, HEALTH_CHECK: SKIPPED}
    assert f"ClusterUUID {UUID}, expected the domain's {other}" in results[1].message
    results = judge_fabric(gpus, {"clique_id": 3})
    assert results[1].status == FAIL and "CliqueId 2, expected the domain's 3" in results[1].message


def test_failed_registration_and_zero_uuid_fail():
    results = judge_fabric(parse_fabric(read(fixture(KIND, NO_DOMAIN))), {})
    assert statuses(results) == {STATE_CHECK: FAIL, DOMAIN_CHECK: FAIL, HEALTH_CHECK: SKIPPED}
    assert "Completed/Insufficient Resources" in results[0].message
    assert "in no NVLink domain" in results[1].message


def test_gpus_off_any_nvlink_fabric_are_skipped_no_hardware():
    text = read(fixture("nvidia-smi_query", "a100-sxm4-40gb-8gpu-nvidia-smi-a-535.129.03.txt"))
    gpus = parse_fabric(text)
    assert len(gpus) == 8 and gpus[0]["gpu"] == "00000000:2F:00.0" and gpus[0]["state"] == "N/A"
    results = judge_fabric(gpus, {})
    assert {r.status for r in results} == {SKIPPED}
    assert all(r.message.startswith(NO_HARDWARE) for r in results)


def test_gpus_that_disagree_on_the_domain_fail():
    text = read(fixture(KIND, UNHEALTHY))
    second = text.replace("CliqueId                          : 2", "CliqueId                          : 5")
    gpus = parse_fabric(text + second)
    results = judge_fabric(gpus, {"fabric_health": False})
    assert results[1].status == FAIL and "disagree" in results[1].message


def test_output_without_a_fabric_section_is_refused():
    with pytest.raises(ParseError):
        parse_fabric("Driver Version : 570.86\n")
