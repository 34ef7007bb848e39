"""Files derived from a topology: Slurm topology, NCCL settings, Kubernetes labels, a
PyTorchJob per GPU node type, the cabling plan, the bill of materials, a static Ansible inventory and the summary.

Each module is a pure function of the ClusterPlan; `files(plan)` gives every output as
{relative path: text} and `write_all` writes them with clusterforge.safe_write. The cabling plan, the BOM and the
summary count links: give them a plan from `load(path)`, not `load(path, links=False)`."""

from __future__ import annotations

import json
from pathlib import Path

from clusterforge.safe_write import write_tree
from clusterforge.topology import ClusterPlan
from clusterforge.topology.render import bom, cabling, k8s_labels, nccl, nvlink, pytorchjob, slurm, static_inventory

RENDERERS = (slurm, nccl, k8s_labels, pytorchjob, nvlink, cabling, bom, static_inventory)


def files(plan: ClusterPlan) -> dict[str, str]:
    """Every output, rendered in full before anything is written."""
    from clusterforge.topology.render.summary import require_links, summarise  # summary imports render.bom

    require_links(plan)
    found: dict[str, str] = {}
    for module in RENDERERS:
        found.update(module.files(plan))
    found["summary.json"] = json.dumps(summarise(plan), indent=2) + "\n"
    return found


def write_all(plan: ClusterPlan, outdir: str | Path, *, force: bool = False) -> list[Path]:
    """Write every output under `outdir` (clusterforge.safe_write: files it did not write there are
    refused unless force, other files stay); a renderer error leaves the directory untouched."""
    return write_tree(outdir, files(plan), force=force)
