"""k8s_nvidia_device_plugin's manifest, rendered by Ansible's own templating for each MIG strategy,
time-slicing and GFD setting, validated strictly against Kubernetes' schemas (kubernetes-validate,
offline); and the expected-count arithmetic of its tasks. No cluster, no GPU."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "k8s_nvidia_device_plugin"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
K8S_VERSION = yaml.safe_load((PROJECT / "roles" / "kubernetes" / "defaults" / "main.yml").read_text())[
    "kubernetes_version"
]


def manifest(**overrides) -> list[dict]:
    variables = {**DEFAULTS, "ansible_managed": "Ansible managed", **overrides}
    text = render((ROLE / "templates" / "nvidia-device-plugin.yml.j2").read_text(), **variables)
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.mark.parametrize("mig", ["none", "single", "mixed"])
@pytest.mark.parametrize("replicas", [1, 4])
@pytest.mark.parametrize("gfd", [True, False])
def test_every_variant_validates_strictly(mig, replicas, gfd):
    resources = manifest(
        k8s_nvidia_device_plugin_mig_strategy=mig,
        k8s_nvidia_device_plugin_time_slicing_replicas=replicas,
        k8s_nvidia_device_plugin_gfd=gfd,
    )
    kinds = [r["kind"] for r in resources]
    assert kinds == ["ConfigMap", "DaemonSet"] + (["DaemonSet"] if gfd else [])
    for resource in resources:
        kubernetes_validate.validate(resource, K8S_VERSION, strict=True)
    config = yaml.safe_load(resources[0]["data"]["config.yaml"])
    assert config["version"] == "v1"
    assert config["flags"]["migStrategy"] == mig
    if replicas > 1:
        assert config["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": replicas}]
    else:
        assert "sharing" not in config


def test_images_are_pinned_and_the_node_selector_is_the_variable():
    resources = manifest(k8s_nvidia_device_plugin_node_selector={"clusterforge.io/node-type": "dgx_h100"})
    for daemonset in resources[1:]:
        pod = daemonset["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"clusterforge.io/node-type": "dgx_h100"}
        (container,) = pod["containers"]
        assert container["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
        assert {"name": "CONFIG_FILE", "value": "/etc/nvidia-device-plugin/config.yaml"} in container["env"]
    assert resources[2]["spec"]["template"]["spec"]["containers"][0]["command"] == ["/usr/bin/gpu-feature-discovery"]


def test_a_misspelt_field_fails_strict_validation():
    daemonset = manifest()[1]
    daemonset["spec"]["template"]["spec"]["nodeSelecter"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, K8S_VERSION, strict=True)


def _fact(name):
    return next(t for t in TASKS if t["name"] == name)["ansible.builtin.set_fact"]


@pytest.mark.parametrize(
    ("expected_gpus", "replicas", "in_gpu_group", "count"),
    [(8, 1, True, 8), (8, 4, True, 32), ("4", 2, True, 8), (8, 1, False, 0), (0, 1, True, 0)],
    ids=["plain", "time-sliced", "string-from-ini", "not-a-gpu-node", "no-gpus"],
)
def test_what_each_node_must_advertise(expected_gpus, replicas, in_gpu_group, count):
    expression = _fact("Work out what this node must advertise")["__k8s_nvidia_device_plugin_gpus"]
    found = render(
        expression,
        k8s_nvidia_device_plugin_expected_gpus=expected_gpus,
        k8s_nvidia_device_plugin_time_slicing_replicas=replicas,
        k8s_nvidia_device_plugin_gpu_group="gpu",
        inventory_hostname="gpu001",
        groups={"gpu": ["gpu001"] if in_gpu_group else []},
    )
    assert int(found) == count


def test_the_expected_map_holds_only_gpu_nodes_of_the_run():
    expression = _fact("Collect the GPU nodes of this run")["__k8s_nvidia_device_plugin_expected"]
    found = render(
        expression,
        ansible_play_hosts=["head01", "gpu001", "gpu002"],
        hostvars={
            "head01": {"__k8s_nvidia_device_plugin_gpus": 0},
            "gpu001": {"__k8s_nvidia_device_plugin_gpus": 8},
            "gpu002": {"__k8s_nvidia_device_plugin_gpus": "32"},
        },
    )
    assert found == {"gpu001": 8, "gpu002": 32}
