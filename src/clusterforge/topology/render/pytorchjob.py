"""A Kubernetes PyTorchJob (Kubeflow Training Operator, kubeflow.org/v1) per GPU node type of the
compute nodes: kubernetes/pytorchjob-<node_type>.yml, the acceptance training job (ddp_smoke.py)
across every compute node of that type, which users copy for their own training job.

- one Worker pod per node (replicas = the node type's compute hosts), pinned there by the node
  labels of k8s_labels (`<label_prefix>/node-type`, `<label_prefix>/role`);
- torchrun in each pod, one process per GPU (`nprocPerNode`, `nvidia.com/gpu` limits), the c10d
  rendezvous on the first worker's service (`<job>-worker-0`, which the operator creates),
  elastic with a fixed size (min = max replicas) and `--max-restarts`, so a lost rank restarts;
- NCCL's settings of `topology render` (render.nccl: HCAs in rail order, socket interface) as
  the container's environment, with host networking and /dev/infiniband, since the HCAs and the
  interface named there are the node's;
- the acceptance job and the checkpoints from the node (hostPath), where the pytorch role puts
  them (pytorch_examples_dir and pytorch_checkpoint_root's defaults; a test holds them equal).

Rendered and validated against the CRD's schema and Kubernetes' Pod schema by the tests; no
cluster runs it here. Node types without GPUs, or without NCCL settings, get none."""

from __future__ import annotations

import re

from clusterforge.topology import ClusterPlan
from clusterforge.topology.render import nccl
from clusterforge.topology.render.common import dump_yaml, generated_by

# PyTorch's own image for the pytorch role's version (2.6.0) and CUDA 12.4; a site points it at its
# registry's copy, or at an image holding its training code.
IMAGE = "pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime"
# The pytorch role's defaults (pytorch_examples_dir, pytorch_checkpoint_root): the job runs the
# ddp_smoke.py that the role installs on every node and checkpoints where torchrun.sbatch does.
EXAMPLES_DIR = "/opt/clusterforge/examples"
CHECKPOINT_ROOT = "/scratch/checkpoints"
RDZV_PORT = 29500
MAX_RESTARTS = 3
# The operator names pods and services <job>-worker-<index>: DNS-1035 labels of at most 63
# characters, so the job's name leaves room for the longest index.
_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


class PyTorchJobError(ValueError):
    """A node type whose job name Kubernetes would refuse."""


def job_name(type_name: str, workers: int) -> str:
    name = "ddp-smoke-" + re.sub(r"[^a-z0-9-]+", "-", type_name.lower()).strip("-")
    longest = f"{name}-worker-{workers - 1}"
    if len(longest) > 63 or not _DNS_1035.fullmatch(name):
        raise PyTorchJobError(
            f"node type {type_name!r}: PyTorchJob name {name!r} gives pods and services such as {longest!r}, "
            "expected DNS-1035 labels (lower-case alphanumerics and '-', starting with a letter, at most 63 characters)"
        )
    return name


def manifest(plan: ClusterPlan, type_name: str) -> dict | None:
    """The PyTorchJob for one node type, or None when it has no GPU, no NCCL settings or no compute host."""
    node_type = plan.topology.node_types[type_name]
    settings = nccl.settings(plan, type_name)
    workers = sum(1 for host in plan.hosts if host.role == "compute" and host.node_type == type_name)
    if node_type.gpu is None or settings is None or workers == 0:
        return None
    gpus = node_type.gpu.count
    name = job_name(type_name, workers)
    prefix = plan.topology.label_prefix
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "clusterforge"}
    torchrun = [
        f"--nnodes={workers}",
        f"--nproc_per_node={gpus}",
        "--rdzv_backend=c10d",
        f"--rdzv_endpoint={name}-worker-0:{RDZV_PORT}",
        f"--rdzv_id={name}",
        f"--max-restarts={MAX_RESTARTS}",
        f"{EXAMPLES_DIR}/ddp_smoke.py",
        "--backend=nccl",
        f"--checkpoint-dir={CHECKPOINT_ROOT}/{name}",
    ]
    container = {
        "name": "pytorch",  # the operator finds the training container by this name
        "image": IMAGE,
        "command": ["torchrun"],
        "args": torchrun,
        "env": [{"name": key, "value": value} for key, value in settings.items()],
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
        # RDMA needs locked memory; the HCAs are the node's (/dev/infiniband, host network).
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "volumeMounts": [
            {"name": "examples", "mountPath": EXAMPLES_DIR, "readOnly": True},
            {"name": "checkpoints", "mountPath": CHECKPOINT_ROOT},
            {"name": "infiniband", "mountPath": "/dev/infiniband"},
            {"name": "shm", "mountPath": "/dev/shm"},
        ],
    }
    pod = {
        "metadata": {"labels": dict(labels)},
        "spec": {
            "hostNetwork": True,
            "dnsPolicy": "ClusterFirstWithHostNet",
            "nodeSelector": {f"{prefix}/role": "compute", f"{prefix}/node-type": type_name},
            "containers": [container],
            "volumes": [
                {"name": "examples", "hostPath": {"path": EXAMPLES_DIR, "type": "Directory"}},
                {"name": "checkpoints", "hostPath": {"path": CHECKPOINT_ROOT, "type": "DirectoryOrCreate"}},
                {"name": "infiniband", "hostPath": {"path": "/dev/infiniband", "type": "Directory"}},
                # NCCL's shared-memory transport wants more than a container's default 64 MiB.
                {"name": "shm", "emptyDir": {"medium": "Memory"}},
            ],
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nprocPerNode": str(gpus),
            "elasticPolicy": {
                "rdzvBackend": "c10d",
                "rdzvPort": RDZV_PORT,
                "minReplicas": workers,
                "maxReplicas": workers,
                "maxRestarts": MAX_RESTARTS,
            },
            "runPolicy": {"backoffLimit": MAX_RESTARTS, "cleanPodPolicy": "None"},
            "pytorchReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "OnFailure", "template": pod}},
        },
    }


def files(plan: ClusterPlan) -> dict[str, str]:
    found: dict[str, str] = {}
    for type_name in plan.topology.node_types:
        job = manifest(plan, type_name)
        if job is not None:
            header = (
                f"# PyTorchJob (Kubeflow Training Operator) for node type {type_name}, {generated_by(plan)}.\n"
                "# Validated against the CRD's schema, not run here: kubectl apply -f on a cluster with the operator.\n"
            )
            found[f"kubernetes/pytorchjob-{type_name}.yml"] = header + dump_yaml(job)
    return found
