#!/usr/bin/python
"""bench/fleet.py's fact module for simulated hosts: ansible.builtin.setup's facts of this
machine, with the few that preflight and the roles check set to a supported node's (systemd,
Debian 12). The controller does the same work as with setup: one module run per gather."""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.facts import ansible_collector, default_collectors
from ansible.module_utils.facts.namespace import PrefixFactNamespace

# What a lab node (a Debian 12 systemd container) reports, where this machine may differ.
NODE = {
    "ansible_service_mgr": "systemd",
    "ansible_distribution": "Debian",
    "ansible_distribution_major_version": "12",
    "ansible_distribution_version": "12",
    "ansible_os_family": "Debian",
    "ansible_pkg_mgr": "apt",
}
MINIMAL = frozenset(["distribution", "env", "pkg_mgr", "platform", "python", "service_mgr", "user", "date_time"])


def main():
    module = AnsibleModule(
        argument_spec={"gather_subset": {"type": "list", "elements": "str", "default": ["all"]}},
        supports_check_mode=True,
    )
    collector = ansible_collector.get_ansible_collector(
        all_collector_classes=default_collectors.collectors,
        namespace=PrefixFactNamespace(namespace_name="ansible", prefix="ansible_"),
        gather_subset=module.params["gather_subset"],
        gather_timeout=10,
        minimal_gather_subset=MINIMAL,
    )
    facts = collector.collect(module=module)
    facts.update({key: value for key, value in NODE.items() if key in facts or key == "ansible_service_mgr"})
    module.exit_json(ansible_facts=facts)


if __name__ == "__main__":
    main()
