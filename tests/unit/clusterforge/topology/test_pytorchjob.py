"""kubernetes/pytorchjob-<node type>.yml from `topology render`, for every example topology, validated
against the Kubeflow Training Operator's PyTorchJob CRD schema (tests/schemas/kubernetes_crds, an excerpt
of the published CRD: see its .source) with jsonschema, and each replica's pod against Kubernetes' own
Pod schema (kubernetes-validate, strict) at the kubernetes role's version. Schemas only: no cluster runs
the job here."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from clusterforge.topology import load
from clusterforge.topology.render import files, k8s_labels, nccl, pytorchjob
from tests.paths import EXAMPLES, LAB_TOPOLOGY, PROJECT
from tests.unit.clusterforge.topology.crd_schema import crd, validator

CRD = crd("kubeflow.org_pytorchjobs")
K8S_VERSION = yaml.safe_load((PROJECT / "roles" / "kubernetes" / "defaults" / "main.yml").read_text())[
    "kubernetes_version"
]
PYTORCH_DEFAULTS = yaml.safe_load((PROJECT / "roles" / "pytorch" / "defaults" / "main.yml").read_text())
EXAMPLE_TOPOLOGIES = sorted(EXAMPLES.glob("*.topology.yml"))


VERSION = next(v for v in CRD["spec"]["versions"] if v["name"] == "v1")
VALIDATOR = validator(CRD, "v1")


def validate(job: dict) -> None:
    """Raise unless `job` is a PyTorchJob the CRD and Kubernetes' Pod schema accept."""
    assert job["apiVersion"] == f"{CRD['spec']['group']}/{VERSION['name']}"
    assert job["kind"] == CRD["spec"]["names"]["kind"]
    VALIDATOR.validate(job)
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        template = replica["template"]
        # The CRD's template.spec is core/v1's PodSpec (the part the excerpt leaves out).
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "replica", **template["metadata"]}}
        kubernetes_validate.validate({**pod, "spec": template["spec"]}, K8S_VERSION, strict=True)


def rendered_jobs(path: Path) -> dict[str, dict]:
    plan = load(path)
    return {
        name: yaml.safe_load(text) for name, text in files(plan).items() if name.startswith("kubernetes/pytorchjob-")
    }


@pytest.mark.parametrize("path", EXAMPLE_TOPOLOGIES, ids=lambda p: p.name)
def test_every_example_topology_renders_a_valid_pytorchjob_per_gpu_node_type(path):
    plan = load(path)
    jobs = rendered_jobs(path)
    gpu_types = {h.node_type for h in plan.hosts if h.role == "compute" and plan.topology.node_types[h.node_type].gpu}
    assert sorted(jobs) == sorted(f"kubernetes/pytorchjob-{name}.yml" for name in gpu_types)
    labels = k8s_labels.labels(plan)
    for type_name in gpu_types:
        job = jobs[f"kubernetes/pytorchjob-{type_name}.yml"]
        validate(job)
        nodes = [h.name for h in plan.hosts if h.role == "compute" and h.node_type == type_name]
        gpus = plan.topology.node_types[type_name].gpu.count
        worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
        pod = worker["template"]["spec"]
        container = pod["containers"][0]
        args = container["args"]
        name = job["metadata"]["name"]
        # One pod per node of the type, one process per GPU, every GPU asked for.
        assert worker["replicas"] == len(nodes)
        assert job["spec"]["elasticPolicy"]["minReplicas"] == job["spec"]["elasticPolicy"]["maxReplicas"] == len(nodes)
        assert job["spec"]["nprocPerNode"] == str(gpus)
        assert container["resources"]["limits"] == {"nvidia.com/gpu": gpus}
        assert f"--nnodes={len(nodes)}" in args and f"--nproc_per_node={gpus}" in args
        # The c10d rendezvous on the first worker's service, the port the operator is told.
        assert f"--rdzv_endpoint={name}-worker-0:{job['spec']['elasticPolicy']['rdzvPort']}" in args
        assert "--rdzv_backend=c10d" in args and job["spec"]["elasticPolicy"]["rdzvBackend"] == "c10d"
        # NCCL's settings are topology render's, nothing else.
        assert {e["name"]: e["value"] for e in container["env"]} == nccl.settings(plan, type_name)
        # The node selector picks exactly the node type's compute nodes by their rendered labels.
        selected = [h for h, found in labels.items() if pod["nodeSelector"].items() <= found.items()]
        assert selected == nodes


def test_the_job_runs_the_files_the_pytorch_role_installs():
    assert PYTORCH_DEFAULTS["pytorch_examples_dir"] == pytorchjob.EXAMPLES_DIR
    assert PYTORCH_DEFAULTS["pytorch_checkpoint_root"] == pytorchjob.CHECKPOINT_ROOT
    assert pytorchjob.IMAGE.split(":")[1].startswith(PYTORCH_DEFAULTS["pytorch_version"] + "-")


def test_a_topology_without_gpus_gets_no_pytorchjob():
    assert rendered_jobs(LAB_TOPOLOGY) == {}


def _set(path: str, value):
    def change(job):
        *parents, last = path.split(".")
        node = job
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        key = int(last) if isinstance(node, list) else last
        if value is KeyError:
            del node[key]
        else:
            node[key] = value

    return change


BROKEN = {
    "replicas as a string": _set("spec.pytorchReplicaSpecs.Worker.replicas", "8"),
    "a misspelt field": _set("spec.elasticPolicy.maxRestart", 3),
    "nprocPerNode as a number": _set("spec.nprocPerNode", 8),
    "no pytorchReplicaSpecs": _set("spec.pytorchReplicaSpecs", KeyError),
    "no containers": _set("spec.pytorchReplicaSpecs.Worker.template.spec.containers", KeyError),
    "an unknown container field": _set("spec.pytorchReplicaSpecs.Worker.template.spec.containers.0.gpus", 8),
    "limits as a list": _set("spec.pytorchReplicaSpecs.Worker.template.spec.containers.0.resources.limits", [8]),
    "an unknown volume type": _set("spec.pytorchReplicaSpecs.Worker.template.spec.volumes.3", {"name": "x", "ram": {}}),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_manifest_fails_validation(name):
    job = copy.deepcopy(rendered_jobs(EXAMPLES / "h100-superpod.topology.yml")["kubernetes/pytorchjob-dgx_h100.yml"])
    validate(copy.deepcopy(job))  # the rendered one passes
    BROKEN[name](job)
    with pytest.raises((jsonschema.ValidationError, kubernetes_validate.ValidationError)):
        validate(job)


def test_a_node_type_whose_job_name_kubernetes_would_refuse_is_named():
    too_long = r"node type 'x{43}': .*'ddp-smoke-x{43}-worker-999'.* at most 63"
    with pytest.raises(pytorchjob.PyTorchJobError, match=too_long):
        pytorchjob.job_name("x" * 43, 1000)
    assert pytorchjob.job_name("x" * 42, 1000) == "ddp-smoke-" + "x" * 42
    assert pytorchjob.job_name("DGX_H100.v2", 127) == "ddp-smoke-dgx-h100-v2"
