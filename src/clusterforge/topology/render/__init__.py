"""Files derived from a topology: Slurm topology, NCCL settings, Kubernetes labels, the
cabling plan, the bill of materials, a static Ansible inventory and the summary.

Each module is a pure function of the ClusterPlan; `files(plan)` gives every output as
{relative path: text} and `write_all` writes them. The cabling plan, the BOM and the
summary count links: give them a plan from `load(path)`, not `load(path, links=False)`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from clusterforge.topology import ClusterPlan
from clusterforge.topology.render import bom, cabling, k8s_labels, nccl, slurm, static_inventory

RENDERERS = (slurm, nccl, k8s_labels, cabling, bom, static_inventory)


def files(plan: ClusterPlan) -> dict[str, str]:
    """Every output, rendered in full before anything is written."""
    from clusterforge.topology.render.summary import require_links, summarise  # summary imports render.bom

    require_links(plan)
    found: dict[str, str] = {}
    for module in RENDERERS:
        found.update(module.files(plan))
    found["summary.json"] = json.dumps(summarise(plan), indent=2) + "\n"
    return found


def write_all(plan: ClusterPlan, outdir: str | Path) -> list[Path]:
    """Write every output under `outdir`; a renderer error leaves the directory untouched."""
    return write_files(files(plan), outdir)


def write_files(rendered: dict[str, str], outdir: str | Path) -> list[Path]:
    """Write {relative path: text} under `outdir`, replacing only those files; other files
    there stay. Each file is replaced whole, so a reader never sees half of one."""
    outdir = Path(outdir)
    written = []
    for relative, text in rendered.items():
        path = outdir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(text)
        os.replace(partial, path)
        written.append(path)
    return written
