"""The kubernetes role's rendered files, by Ansible's own templating: the kubeadm configuration
(init and join) against tests/schemas/kubeadm-v1beta4.json, Flannel's manifest strictly against
Kubernetes' own schemas (kubernetes-validate, offline), and the expressions the tasks compute.
Schemas only: nothing here is checked by a running kubeadm or API server."""

from __future__ import annotations

import json

import jsonschema
import kubernetes_validate
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.paths import PROJECT, load_plugin
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "kubernetes"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
CONFIG_TASKS = yaml.safe_load((ROLE / "tasks" / "config.yml").read_text())
BOOTSTRAP_TASKS = yaml.safe_load((ROLE / "tasks" / "bootstrap.yml").read_text())
SCHEMA = jsonschema.Draft202012Validator(
    json.loads((PROJECT / "tests" / "schemas" / "kubeadm-v1beta4.json").read_text())
)
K8S_VERSION = DEFAULTS["kubernetes_version"]
TOKEN = "abcdef.0123456789abcdef"
CA_HASH = "sha256:" + "0" * 64
CERT_KEY = "e6a2eb8581237ab72a4f494f30285ec12a9694d750b9785706a83bfcbbbd2204"
LABELS = {"clusterforge.io/unit": "su1", "clusterforge.io/node-type": "dgx_h100"}


def variables(**overrides):
    found = {k: v for k, v in DEFAULTS.items() if not (isinstance(v, str) and "__kubernetes_" in v)}
    found.update(
        ansible_managed="Ansible managed",
        inventory_hostname="gpu001",
        __kubernetes_taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        __kubernetes_labels=LABELS,
        __kubernetes_address="10.0.0.11",
        __kubernetes_endpoint="k8s-api.example.test:6443",
        __kubernetes_is_control_plane=False,
        __kubernetes_join_token=TOKEN,
        __kubernetes_join_ca_hash=CA_HASH,
        __kubernetes_join_certificate_key=CERT_KEY,
    )
    found.update(overrides)
    return found


def documents(template: str, **overrides) -> list[dict]:
    text = render((ROLE / "templates" / template).read_text(), **variables(**overrides))
    return [d for d in yaml.safe_load_all(text) if d]


def problems(document: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in SCHEMA.iter_errors(document)]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"__kubernetes_labels": {}, "__kubernetes_address": "", "kubernetes_cert_sans": []},
        {"kubernetes_cert_sans": ["10.0.0.10", "api.example.test"], "__kubernetes_endpoint": "[fd00::1]:6443"},
        {"kubernetes_kubelet_config": {"maxPods": 200, "cgroupDriver": "cgroupfs"}},
    ],
    ids=["labels-taints", "bare", "ipv6-endpoint-and-sans", "kubelet-settings"],
)
def test_the_init_configuration_validates(overrides):
    init, cluster, kubelet = documents("kubeadm-config.yaml.j2", **overrides)
    assert [d["kind"] for d in (init, cluster, kubelet)] == [
        "InitConfiguration",
        "ClusterConfiguration",
        "KubeletConfiguration",
    ]
    for document in (init, cluster, kubelet):
        assert problems(document) == [], document["kind"]
    assert kubelet["cgroupDriver"] == "systemd"  # whatever kubernetes_kubelet_config says
    assert cluster["kubernetesVersion"] == f"v{K8S_VERSION}"
    assert cluster["networking"] == {
        "podSubnet": "10.244.0.0/16",
        "serviceSubnet": "10.96.0.0/12",
        "dnsDomain": "cluster.local",
    }
    endpoint_host = variables(**overrides)["__kubernetes_endpoint"].rsplit(":", 1)[0].strip("[]")
    assert cluster["apiServer"]["certSANs"][0] == endpoint_host
    assert cluster["controlPlaneEndpoint"] == variables(**overrides)["__kubernetes_endpoint"]


def test_node_labels_reach_kubelet_and_taints_the_registration():
    init = documents("kubeadm-config.yaml.j2")[0]
    registration = init["nodeRegistration"]
    assert registration["kubeletExtraArgs"] == [
        {"name": "node-labels", "value": "clusterforge.io/unit=su1,clusterforge.io/node-type=dgx_h100"}
    ]
    assert registration["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert registration["criSocket"] == "unix:///run/containerd/containerd.sock"
    assert init["localAPIEndpoint"] == {"advertiseAddress": "10.0.0.11", "bindPort": 6443}


@pytest.mark.parametrize("control_plane", [False, True], ids=["worker", "control-plane"])
def test_the_join_configuration_validates(control_plane):
    (join,) = documents("kubeadm-join.yaml.j2", __kubernetes_is_control_plane=control_plane)
    assert problems(join) == []
    assert join["discovery"]["bootstrapToken"] == {
        "apiServerEndpoint": "k8s-api.example.test:6443",
        "token": TOKEN,
        "caCertHashes": [CA_HASH],
    }
    assert ("controlPlane" in join) is control_plane
    if control_plane:
        assert join["controlPlane"]["certificateKey"] == CERT_KEY


def test_a_broken_join_is_refused_by_the_schema():
    """The schema can fail on what the template renders: a token that is not kubeadm's format."""
    (join,) = documents("kubeadm-join.yaml.j2", __kubernetes_join_token="not-a-token")
    assert any("token" in p for p in problems(join))


@pytest.mark.parametrize("subnet", ["10.244.0.0/16", "192.168.128.0/17"])
def test_the_flannel_manifest_validates_strictly_against_kubernetes_schemas(subnet):
    manifest = documents("kube-flannel.yml.j2", kubernetes_pod_subnet=subnet)
    assert [d["kind"] for d in manifest] == [
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "ServiceAccount",
        "ConfigMap",
        "DaemonSet",
    ]
    for resource in manifest:
        kubernetes_validate.validate(resource, K8S_VERSION, strict=True)
    config = next(d for d in manifest if d["kind"] == "ConfigMap")
    assert json.loads(config["data"]["net-conf.json"])["Network"] == subnet
    json.loads(config["data"]["cni-conf.json"])
    images = [
        c["image"]
        for c in manifest[-1]["spec"]["template"]["spec"]["initContainers"]
        + manifest[-1]["spec"]["template"]["spec"]["containers"]
    ]
    assert set(images) == {DEFAULTS["kubernetes_flannel_image"], DEFAULTS["kubernetes_flannel_cni_plugin_image"]}
    assert all(":" in image and not image.endswith(":latest") for image in images)


def test_strict_validation_can_fail_on_the_manifest():
    daemonset = documents("kube-flannel.yml.j2")[-1]
    daemonset["spec"]["template"]["spec"]["hostNetwrok"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, K8S_VERSION, strict=True)


def _set_fact(tasks, name):
    return next(t for t in tasks if t["name"] == name)["ansible.builtin.set_fact"]


ENDPOINT = _set_fact(CONFIG_TASKS, "Work out this node's labels, taints and the API server endpoint")[
    "__kubernetes_endpoint"
]


@pytest.mark.parametrize(
    ("configured", "first", "expected"),
    [
        ("lb.example.test:6443", {}, "lb.example.test:6443"),
        ("", {"ansible_facts": {"default_ipv4": {"address": "10.0.0.1"}}}, "10.0.0.1:6443"),
        ("", {"kubernetes_advertise_address": "10.9.9.9", "ansible_facts": {}}, "10.9.9.9:6443"),
        # --limit newnode: the first control-plane host's facts were not gathered.
        ("", {"ansible_facts": {}}, "head01:6443"),
    ],
    ids=["ha-endpoint", "first-host-address", "advertise-address", "limit-without-facts"],
)
def test_the_api_server_endpoint(configured, first, expected):
    found = render(
        ENDPOINT,
        kubernetes_control_plane_endpoint=configured,
        __kubernetes_first_control_plane="head01",
        hostvars={"head01": first},
    )
    assert found.strip() == expected


JOINERS = _set_fact(BOOTSTRAP_TASKS, "List the nodes of this run that still have to join")["__kubernetes_joiners"]


def test_only_nodes_without_kubelet_conf_join_and_never_the_first_control_plane():
    hostvars = {
        name: {"inventory_hostname": name, "__kubernetes_kubelet_conf_stat": {"stat": {"exists": joined}}}
        for name, joined in (("head01", False), ("head02", True), ("node01", True), ("node02", False))
    }
    found = render(
        JOINERS,
        ansible_play_hosts=list(hostvars),
        hostvars=hostvars,
        __kubernetes_first_control_plane="head01",
    )
    assert (yaml.safe_load(found) if isinstance(found, str) else found) == ["node02"]


def test_the_join_command_parsing_finds_token_and_hash():
    join = next(t for t in BOOTSTRAP_TASKS if t["name"] == "Join the cluster")["vars"]
    stdout = f"kubeadm join 10.0.0.1:6443 --token {TOKEN} --discovery-token-ca-cert-hash {CA_HASH} \n"
    certs = ["[upload-certs] Storing the certificates", "[upload-certs] Using certificate key:", CERT_KEY]
    values = {"__kubernetes_token_run": {"stdout": stdout}, "__kubernetes_certs_run": {"stdout_lines": certs}}
    assert render(join["__kubernetes_join_token"], **values) == TOKEN
    assert render(join["__kubernetes_join_ca_hash"], **values) == CA_HASH
    assert render(join["__kubernetes_join_certificate_key"], **values) == CERT_KEY


def test_every_task_that_holds_a_token_or_key_has_no_log():
    by_name = {t["name"]: t for t in BOOTSTRAP_TASKS}
    for name in (
        "Start the cluster on the first control-plane host (kubeadm init)",
        "Create a bootstrap token on the first control-plane host",
        "Upload the control-plane certificates for joining control-plane nodes",
        "Join the cluster",  # the block: its tasks inherit it
    ):
        assert by_name[name].get("no_log") is True, name


def test_the_topology_labels_are_the_ones_topology_render_writes():
    from clusterforge.topology import load
    from clusterforge.topology.render.k8s_labels import labels
    from tests.paths import SUPERPOD

    node_labels = load_plugin("plugins/filter/kubernetes.py").FilterModule().filters()["clusterforge_k8s_node_labels"]
    rendered = labels(load(SUPERPOD))
    host = next(iter(rendered))
    assert node_labels(host, str(SUPERPOD)) == rendered[host]
    assert {key.rpartition("/")[2] for key in rendered[host]} >= {"cluster", "site", "role", "node-type"}
    with pytest.raises(AnsibleFilterError, match="nohost is not in"):
        node_labels("nohost", str(SUPERPOD))
