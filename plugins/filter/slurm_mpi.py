# Copyright: clusterforge contributors
# Apache License 2.0
"""Slurm's MpiDefault, decided from the MPI plugin file found (or not) on the Slurm hosts."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_slurm_mpi_default
short_description: The MpiDefault slurm.conf can name, and why not when it cannot
description:
  - "Input: host -> C({path, exists}), what that host found of Slurm's plugin file for the wanted
    type (C(mpi_<type>.so) in its plugin directory)."
  - "The wanted type is used only when every host has the file: slurm.conf is one file for the
    whole cluster, and srun (on any host) and slurmstepd (on the compute nodes) both load the
    plugin, so one host without it would fail every job step there. Otherwise C(none), Slurm's
    own default, with a message naming the hosts that lack it and where they looked."
  - C(none) wanted (or no host probed) is C(none) without a message.
positional: _input, wanted
options:
  _input:
    description: Host -> C({path, exists}) of the plugin file on that host.
    type: dict
    required: true
  wanted:
    description: The MPI plugin type asked for (slurm_mpi_default), e.g. pmix, pmi2 or none.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Decide MpiDefault
  ansible.builtin.set_fact:
    __slurm_mpi: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, '__slurm_mpi_plugin_file')))
         | clusterforge_slurm_mpi_default(slurm_mpi_default) }}
  run_once: true
"""

RETURN = r"""
_value:
  description: "value: the MpiDefault to write; missing: the hosts without the plugin file (sorted);
    message: empty, or a C(skipped:) line saying what was kept and why."
  type: dict
"""


def mpi_default(probes: Mapping, wanted: str) -> dict:
    if not isinstance(probes, Mapping):
        raise AnsibleFilterError(
            f"clusterforge_slurm_mpi_default expects host -> {{path, exists}}, got {type(probes).__name__}"
        )
    wanted = str(wanted)
    if wanted == "none" or not probes:
        return {"value": "none", "missing": [], "message": ""}
    missing: dict[str, str] = {}
    for host, probe in probes.items():
        if not isinstance(probe, Mapping) or not isinstance(probe.get("path"), str) or "exists" not in probe:
            raise AnsibleFilterError(
                f"clusterforge_slurm_mpi_default: {host}: expected {{path, exists}} of the plugin file, got {probe!r}"
            )
        if not probe["exists"]:
            missing[str(host)] = probe["path"]
    if not missing:
        return {"value": wanted, "missing": [], "message": ""}
    hosts = sorted(missing)
    paths = sorted(set(missing.values()))
    where = (
        f"{paths[0]} is missing on {', '.join(hosts)}"
        if len(paths) == 1
        else "missing: " + ", ".join(f"{host} ({missing[host]})" for host in hosts)
    )
    message = (
        f"skipped: MpiDefault={wanted}: the installed Slurm has no {wanted} plugin ({where}); "
        "slurm.conf keeps MpiDefault=none"
    )
    return {"value": "none", "missing": hosts, "message": message}


class FilterModule:
    def filters(self):
        return {"clusterforge_slurm_mpi_default": mpi_default}
