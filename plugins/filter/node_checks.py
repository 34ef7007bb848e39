# Copyright: clusterforge contributors
# Apache License 2.0
"""The node checks' options from a host's clusterforge_expected_* variables, for roles that run the
checks on the node itself (the slurm role's health hook)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_node_check_args
short_description: gpu_check and ib_check options from a host's expected-hardware variables
description:
  - The options C(playbooks/tasks/validate_node_checks.yml) gives gpu_check and ib_check, from the
    same variables (the topology inventory's C(clusterforge_expected_*) and the
    C(clusterforge_validation_*) pins), as a mapping of module name to options. A variable the host
    does not set is left out, so the module's own default applies, as in validate.yml.
  - tests/unit/plugins/filter/test_node_checks.py holds this table to validate_node_checks.yml.
positional: _input
options:
  _input:
    description: The host's variables (C(hostvars[inventory_hostname])).
    type: dict
    required: true
  replay_dir:
    description: Recorded tool outputs to judge instead of running the tools (the modules' replay mode).
    type: str
"""

EXAMPLES = r"""
- name: Write the node checks' configuration
  ansible.builtin.copy:
    content: "{{ {'checks': hostvars[inventory_hostname] | clusterforge_node_check_args} | to_nice_json }}"
    dest: /etc/clusterforge/node-checks.json
    mode: "0644"
"""

RETURN = r"""
_value:
  description: "{gpu_check: {option: value}, ib_check: {option: value}}"
  type: dict
"""

# Module -> option -> the host variable it comes from (as in validate_node_checks.yml).
NODE_CHECK_OPTIONS = {
    "gpu_check": {
        "expected_gpus": "clusterforge_expected_gpus",
        "model": "clusterforge_expected_gpu_model",
        "nvlink_generation": "clusterforge_expected_nvlink_generation",
        "nvswitch": "clusterforge_expected_nvswitch",
        "driver_version": "clusterforge_validation_driver_version",
        "cuda_version": "clusterforge_validation_cuda_version",
        "hca_gpus": "clusterforge_expected_hca_gpus",
        "nic_affinity_severity": "clusterforge_validation_nic_affinity_severity",
    },
    "ib_check": {
        "expected_hcas": "clusterforge_expected_hca_rates",
        "link_layers": "clusterforge_expected_link_layers",
        "firmware": "clusterforge_validation_hca_firmware",
    },
}


def node_check_args(host_vars, replay_dir=None):
    if not isinstance(host_vars, Mapping):
        raise AnsibleFilterError(
            f"clusterforge_node_check_args: expected the host's variables (a mapping), got {type(host_vars).__name__}"
        )
    checks = {}
    for module, options in NODE_CHECK_OPTIONS.items():
        args = {option: host_vars[variable] for option, variable in options.items() if variable in host_vars}
        if replay_dir:
            args["replay_dir"] = str(replay_dir)
        checks[module] = args
    return checks


class FilterModule:
    def filters(self):
        return {"clusterforge_node_check_args": node_check_args}
