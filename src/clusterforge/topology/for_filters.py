"""The topology file as Ansible's filter plugins read it: loaded once per file version (a play
calls a filter per host), errors as AnsibleFilterError naming the filter and the file."""

from __future__ import annotations

import os
from functools import lru_cache

from ansible.errors import AnsibleFilterError

from clusterforge.topology import ClusterPlan, TopologyError, load


@lru_cache(maxsize=8)
def _load(path: str, mtime: float, links: bool) -> ClusterPlan:
    return load(path, links=links)


def topology_for_filter(filter_name: str, topology_file, links: bool = False) -> ClusterPlan:
    """The expanded topology of topology_file (without links unless asked), for filter_name."""
    try:
        mtime = os.path.getmtime(topology_file)
    except OSError as exc:
        raise AnsibleFilterError(
            f"{filter_name}: cannot read the topology file {str(topology_file)!r}: {exc.strerror}"
        ) from None
    try:
        return _load(str(topology_file), mtime, links)
    except TopologyError as exc:
        raise AnsibleFilterError(f"{filter_name}: {exc}") from None
