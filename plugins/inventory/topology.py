# Copyright: clusterforge contributors
# Apache License 2.0
"""Inventory plugin: a clusterforge topology file as an Ansible inventory."""

from __future__ import annotations

DOCUMENTATION = r"""
name: topology
short_description: Inventory from a clusterforge cluster topology file
description:
  - Reads a clusterforge topology file (C(*.topology.yml)) that describes the cluster
    declaratively (sites, node types, roles, scalable units, fabrics, address plan),
    validates it completely, and adds every host with its groups and a few variables.
  - "Groups: one per role (head, login, compute, ...), C(site_<name>), C(su<n>) per scalable unit,
    C(type_<node type>) (with the node type's expected GPUs and HCAs as group variables), and for
    the compute and storage fabrics (or those listed in the topology's C(ansible.leaf_groups))
    C(fabric_<name>) holding a group per leaf (per scalable unit's rail leaves on rail-optimised
    fabrics), under pod groups on three-tier fabrics."
  - "Host variables: ansible_host, clusterforge_index, clusterforge_unit and the host's
    addresses (clusterforge_inband_address, clusterforge_oob_address, clusterforge_ipoib_addresses)."
  - Needs the clusterforge Python package in the Python that runs Ansible.
extends_documentation_fragment:
  - constructed
options:
  plugin:
    description: Marks the file as a clusterforge topology.
    required: true
    choices: ['topology']
"""

EXAMPLES = r"""
# inventories/mycluster.topology.yml
plugin: topology
cluster: {name: mycluster, domain: mycluster.example.com}
# ... sites, node_types, roles, fabrics, addressing (see inventories/examples/)
keyed_groups:
  - key: clusterforge_unit | string
    prefix: unit
compose:
  bmc_address: clusterforge_oob_address
"""

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable
from ansible.utils.vars import combine_vars

try:
    from clusterforge.topology import TopologyError, load
    from clusterforge.topology.inventory import build
except ImportError as import_error:
    CLUSTERFORGE_IMPORT_ERROR: ImportError | None = import_error
else:
    CLUSTERFORGE_IMPORT_ERROR = None


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "topology"
    # The topology file is written by the cluster's operators, like a YAML inventory, and its
    # values (ansible.vars included) are trusted as the yaml and toml plugins trust theirs.
    trusted_by_default = True

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".topology.yml", ".topology.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache=cache)
        if CLUSTERFORGE_IMPORT_ERROR is not None:
            raise AnsibleParserError(
                f"{path}: the topology inventory plugin needs the clusterforge package "
                f"(pip install clusterforge): {CLUSTERFORGE_IMPORT_ERROR}"
            )
        self._read_config_data(path)
        try:
            plan = load(path, links=False)
        except TopologyError as exc:
            raise AnsibleParserError(f"invalid topology:\n{exc}") from None
        data = build(plan)
        self._populate(data)

    def _populate(self, data):
        inventory = self.inventory
        for name, value in data.all_vars.items():
            inventory.set_variable("all", name, value)
        for group in (*data.children, *data.group_hosts, *data.group_vars):
            inventory.add_group(group)
        for parent, kids in data.children.items():
            for kid in kids:
                inventory.add_child(parent, kid)
        for group, group_vars in data.group_vars.items():
            for name, value in group_vars.items():
                inventory.set_variable(group, name, value)
        for group, hosts in data.group_hosts.items():
            for host in hosts:
                inventory.add_host(host, group=group)
        for host, host_vars in data.host_vars.items():
            for name, value in host_vars.items():
                inventory.set_variable(host, name, value)
        if self.get_option("compose") or self.get_option("groups") or self.get_option("keyed_groups"):
            self._construct(data)

    def _construct(self, data):
        strict = self.get_option("strict")
        type_vars = {}
        for group, group_vars in data.group_vars.items():
            for host in data.group_hosts.get(group, ()):
                type_vars[host] = group_vars
        for host, host_vars in data.host_vars.items():
            variables = combine_vars(combine_vars(data.all_vars, type_vars.get(host, {})), host_vars)
            self._set_composite_vars(self.get_option("compose"), variables, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, host, strict=strict)
