"""kubernetes/compute-domains.yml from `topology render`, for every example topology with NVLink
domains, validated against the ComputeDomain CRD of NVIDIA's DRA driver for GPUs as published
(tests/schemas/kubernetes_crds/resource.nvidia.com_computedomains.yaml, whole: see its .source),
with the API server's strict field validation. Schema only: no cluster runs the DRA driver here."""

from __future__ import annotations

import copy
import re

import jsonschema
import pytest
import yaml

from clusterforge.topology import load
from clusterforge.topology.render import files
from tests.paths import EXAMPLES
from tests.unit.clusterforge.topology.crd_schema import crd, validator

CRD = crd("resource.nvidia.com_computedomains")
VERSION = "v1beta1"
VALIDATOR = validator(CRD, VERSION)
# metadata.name of a namespaced custom resource: a DNS-1123 subdomain (the API server's check).
DNS_1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
WITH_DOMAINS = [
    path for path in sorted(EXAMPLES.glob("*.topology.yml")) if "kubernetes/compute-domains.yml" in files(load(path))
]


def validate(resource: dict) -> None:
    assert resource["apiVersion"] == f"{CRD['spec']['group']}/{VERSION}"
    assert resource["kind"] == CRD["spec"]["names"]["kind"]
    name = resource["metadata"]["name"]
    assert len(name) <= 253 and DNS_1123_SUBDOMAIN.match(name), name
    VALIDATOR.validate(resource)


def test_an_example_has_nvlink_domains():
    assert [path.name for path in WITH_DOMAINS] == ["gb200-nvl72-su.topology.yml"]


@pytest.mark.parametrize("path", WITH_DOMAINS, ids=[p.name for p in WITH_DOMAINS])
def test_every_rendered_compute_domain_is_one_the_crd_accepts(path):
    domains = list(yaml.safe_load_all(files(load(path))["kubernetes/compute-domains.yml"]))
    assert domains
    for resource in domains:
        validate(resource)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda cd: cd["spec"].update(numNodes="18"), "'18' is not of type 'integer'"),
        (lambda cd: cd["spec"].pop("channel"), "'channel' is a required property"),
        (lambda cd: cd["spec"]["channel"].update(allocationMode="Many"), "'Many' is not one of"),
        (lambda cd: cd["spec"].update(nodes=18), "Additional properties are not allowed ('nodes'"),
    ],
)
def test_the_schema_refuses_what_the_api_server_would(change, why):
    resource = next(yaml.safe_load_all(files(load(WITH_DOMAINS[0]))["kubernetes/compute-domains.yml"]))
    broken = copy.deepcopy(resource)
    change(broken)
    with pytest.raises(jsonschema.ValidationError, match=re.escape(why)):
        VALIDATOR.validate(broken)
