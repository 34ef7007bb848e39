"""tests/schemas/kubeadm-v1beta4.json, the schema written for clusterforge from kubeadm's documented
v1beta4 API, checked on the examples of kubeadm's own configuration reference (retyped into
tests/schemas/kubeadm-examples, with their source) and on broken variants it must refuse."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
import yaml

from tests.paths import PROJECT

SCHEMA = json.loads((PROJECT / "tests" / "schemas" / "kubeadm-v1beta4.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def problems(document: dict) -> list[str]:
    return sorted(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(document))


def example(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((PROJECT / "tests" / "schemas" / "kubeadm-examples" / name).read_text()) if d]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("name", ["v1beta4-doc-init-example.yaml", "v1beta4-doc-join-example.yaml"])
def test_the_documented_examples_validate(name):
    documents = example(name)
    assert documents
    for document in documents:
        assert problems(document) == [], document["kind"]


def test_the_documented_init_example_has_every_kind_kubeadm_init_reads():
    kinds = [d["kind"] for d in example("v1beta4-doc-init-example.yaml")]
    assert kinds == ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration", "KubeProxyConfiguration"]


def test_the_documented_typo_is_refused_by_name():
    """The published page spells timeouts.kubernetesAPICall "kubenetesAPICall"; strict decoding refuses it."""
    init = example("v1beta4-doc-init-example.yaml")[0]
    init["timeouts"]["kubenetesAPICall"] = init["timeouts"].pop("kubernetesAPICall")
    assert any("kubenetesAPICall" in p for p in problems(init))


def _broken():
    init, cluster = example("v1beta4-doc-init-example.yaml")[:2]
    join = example("v1beta4-doc-join-example.yaml")[0]
    cases = []

    def case(label, document, change, expected):
        document = copy.deepcopy(document)
        change(document)
        cases.append(pytest.param(document, expected, id=label))

    # v1beta3's map form of the extra arguments is gone in v1beta4.
    case(
        "v1beta3-kubeletExtraArgs-map",
        init,
        lambda d: d["nodeRegistration"].update(kubeletExtraArgs={"v": "4"}),
        "kubeletExtraArgs",
    )
    case("v1beta3-apiserver-extraArgs-map", cluster, lambda d: d["apiServer"].update(extraArgs={"a": "b"}), "extraArgs")
    case("unknown-field", cluster, lambda d: d.update(podSubnet="10.0.0.0/8"), "podSubnet")
    case(
        "v1beta3-timeoutForControlPlane",
        cluster,
        lambda d: d["apiServer"].update(timeoutForControlPlane="4m0s"),
        "timeoutForControlPlane",
    )
    case("bad-token", init, lambda d: d["bootstrapTokens"][0].update(token="short.token"), "token")
    case("bad-taint-effect", init, lambda d: d["nodeRegistration"]["taints"][0].update(effect="Sometimes"), "effect")
    case("bad-certificate-key", init, lambda d: d.update(certificateKey="xyz"), "certificateKey")
    case("two-etcds", cluster, lambda d: d["etcd"].update(external={"endpoints": ["a:2379"]}), "etcd")
    case("wrong-apiVersion", cluster, lambda d: d.update(apiVersion="kubeadm.k8s.io/v1beta3"), "apiVersion")
    case("join-without-discovery", join, lambda d: d.pop("discovery"), "discovery")
    case(
        "bad-ca-hash", join, lambda d: d["discovery"]["bootstrapToken"].update(caCertHashes=["md5:00"]), "caCertHashes"
    )
    case(
        "kubelet-cgroupDriver",
        {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"},
        lambda d: d.update(cgroupDriver="upstart"),
        "cgroupDriver",
    )
    return cases


@pytest.mark.parametrize(("document", "expected"), _broken())
def test_broken_variants_are_refused_naming_the_field(document, expected):
    found = problems(document)
    assert found, "accepted"
    assert any(expected in p for p in found), found
