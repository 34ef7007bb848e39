#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_node_metadata
short_description: Set labels and taints of Kubernetes nodes, changing only what differs
description:
  - Reads every node once and patches each listed node whose labels or taints differ from
    O(nodes); a node already as wanted is not written, so a re-run changes nothing.
  - A label whose value is null is removed. Taints are added or have their value replaced by key
    and effect; taints the node has besides those are left alone.
  - Fails naming the listed nodes the API server does not know.
  - Needs the Kubernetes Python client (C(kubernetes)) where it runs.
options:
  kubeconfig:
    description: The kubeconfig the client reads (e.g. C(/etc/kubernetes/admin.conf)).
    type: path
    required: true
  nodes:
    description: Node name -> C({labels, taints}); labels a mapping, taints a list of C({key, value, effect}).
    type: dict
    required: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Label a GPU node and keep other pods off it
  k8s_node_metadata:
    kubeconfig: /etc/kubernetes/admin.conf
    nodes:
      gpu001:
        labels: {clusterforge.io/unit: su1}
        taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
"""

RETURN = r"""
changed_nodes:
  description: The nodes patched (in check mode, that would be).
  type: list
  elements: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.k8s_nodes import apply_metadata


def main() -> None:
    module = AnsibleModule(
        argument_spec={"kubeconfig": {"type": "path", "required": True}, "nodes": {"type": "dict", "required": True}},
        supports_check_mode=True,
    )
    try:
        from kubernetes import client, config
    except ImportError as exc:
        module.fail_json(msg=f"k8s_node_metadata needs the Kubernetes Python client (python3-kubernetes): {exc}")
    api = client.CoreV1Api(config.new_client_from_config(config_file=module.params["kubeconfig"]))
    result = apply_metadata(api, module.params["nodes"], check_mode=module.check_mode)
    if result["missing_nodes"]:
        module.fail_json(
            msg=f"nodes not registered with the API server: {', '.join(result['missing_nodes'])}",
            changed=bool(result["changed_nodes"]),
            **result,
        )
    module.exit_json(changed=bool(result["changed_nodes"]), **result)


if __name__ == "__main__":
    main()
