"""The inventory of a run, checked before any host is touched."""

from __future__ import annotations

import os
from pathlib import Path

from clusterforge.errors import UsageError

# The names the topology inventory plugin claims (its verify_file).
TOPOLOGY_SUFFIXES = (".topology.yml", ".topology.yaml")


def resolve(inventory: str | os.PathLike[str]) -> Path:
    """The inventory's path; a topology file in it is validated as `clusterforge topology
    validate` does, so a wrong one is named here, field by field, rather than by Ansible."""
    path = Path(inventory).expanduser()
    if not path.exists():
        raise UsageError(f"inventory not found: {path} (expected a file or directory)")
    path = path.resolve()
    sources = sorted(path.iterdir()) if path.is_dir() else [path]
    for source in sources:
        if source.name.endswith(TOPOLOGY_SUFFIXES) and source.is_file():
            validate_topology(source)
    return path


def validate_topology(path: Path) -> None:
    from clusterforge.topology import load
    from clusterforge.topology.source import TopologyError, load_yaml

    try:
        data, _lines = load_yaml(path)
        if not isinstance(data, dict) or data.get("plugin") != "topology":
            # Ansible would read it with its yaml plugin instead: an inventory without hosts.
            raise UsageError(
                f"{path}: plugin: expected `plugin: topology` at the top of a topology inventory, "
                f"got {data.get('plugin') if isinstance(data, dict) else None!r}"
            )
        load(path, links=False)
    except TopologyError as exc:
        raise UsageError(f"invalid topology inventory:\n{exc}") from None
