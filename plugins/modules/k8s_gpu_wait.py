#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_gpu_wait
short_description: Wait until every GPU node advertises its expected count of GPUs
description:
  - Polls the nodes until each node of O(expected) advertises exactly its count of O(resource)
    as allocatable, and fails after O(timeout) seconds naming every node that does not (not
    registered, no such resource, or another count).
  - Reads only; never changes anything.
  - Needs the Kubernetes Python client (C(kubernetes)) where it runs.
options:
  kubeconfig:
    description: The kubeconfig the client reads.
    type: path
    required: true
  expected:
    description: Node name -> the count it must advertise.
    type: dict
    required: true
  resource:
    description: The extended resource counted.
    type: str
    default: nvidia.com/gpu
  timeout:
    description: Seconds to wait.
    type: int
    default: 600
  interval:
    description: Seconds between reads.
    type: int
    default: 10
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Wait for the device plugin on two 8-GPU nodes
  k8s_gpu_wait:
    kubeconfig: /etc/kubernetes/admin.conf
    expected: {gpu001: 8, gpu002: 8}
"""

RETURN = r"""
polls:
  description: How many times the nodes were read.
  type: int
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.k8s_nodes import shortfall_message, wait_for_gpus


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "kubeconfig": {"type": "path", "required": True},
            "expected": {"type": "dict", "required": True},
            "resource": {"type": "str", "default": "nvidia.com/gpu"},
            "timeout": {"type": "int", "default": 600},
            "interval": {"type": "int", "default": 10},
        },
        supports_check_mode=True,
    )
    try:
        from kubernetes import client, config
    except ImportError as exc:
        module.fail_json(msg=f"k8s_gpu_wait needs the Kubernetes Python client (python3-kubernetes): {exc}")
    params = module.params
    api = client.CoreV1Api(config.new_client_from_config(config_file=params["kubeconfig"]))
    expected = {name: int(count) for name, count in params["expected"].items()}
    shortfall, polls = wait_for_gpus(api, expected, params["timeout"], params["interval"], params["resource"])
    if shortfall:
        module.fail_json(
            msg=shortfall_message(shortfall, params["resource"], params["timeout"]), shortfall=shortfall, polls=polls
        )
    module.exit_json(changed=False, polls=polls)


if __name__ == "__main__":
    main()
