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
    C(type_<node type>), and for the compute and storage fabrics (or those listed in the topology's
    C(ansible.leaf_groups)) C(fabric_<name>) holding a group per leaf (per scalable unit's rail
    leaves on rail-optimised fabrics), under pod groups on three-tier fabrics. Site and node-type
    groups hold role groups, not hosts."
  - "Capability groups, holding the C(type_<node type>) groups of the node types that have the
    capability (and existing, empty, when none has it): C(gpu) (the node type has GPUs),
    C(nvswitch) (its GPUs are on NVSwitches), C(infiniband) (an HCA on an InfiniBand fabric),
    C(roce) (an HCA on an Ethernet fabric of purpose compute or storage, which carries RDMA)."
  - "Orchestrator groups, holding role groups: C(slurm_controller) (head), C(slurm_compute) (compute),
    C(slurm_login) (login), C(k8s_control_plane) (head), C(k8s_workers) (compute). The topology's
    C(ansible.orchestrator_groups) replaces the roles of any of them, for example
    C(orchestrator_groups: {slurm_login: [head]})."
  - "C(gpu_software), holding the role groups the topology's C(ansible.gpu_software) lists (none by
    default): hosts without GPUs that the gpu stage still gives the GPU software
    C(clusterforge_gpu_components) chooses (a login node that builds against CUDA, the lab)."
  - "Variables of C(all): clusterforge_cluster, clusterforge_domain, clusterforge_topology_file and
    the topology's C(ansible.vars). Of C(su<n>): clusterforge_unit. Of C(type_<node type>):
    clusterforge_node_type and what the checks expect of every node of the type,
    clusterforge_expected_gpus, clusterforge_expected_gpu_model, clusterforge_expected_nvlink_generation,
    clusterforge_expected_nvswitch, clusterforge_expected_hca_rates (C({device: Gb/s})),
    clusterforge_expected_link_layers (C({device: infiniband|ethernet})), clusterforge_expected_rail_hcas
    (the HCAs on the fabric that carries GPU traffic, in rail order), clusterforge_expected_rails (how
    many; null without any), clusterforge_expected_nic_rate_gbps (the slowest of their rates) and
    clusterforge_expected_hca_gpus (C({device: GPU index}), the GPU each of those HCAs serves, for
    gpu_check's GPU-NIC affinity)."
  - "Host variables: C(ansible_host), C(clusterforge_index), and the host's address in each subnet
    the topology's addressing has: C(clusterforge_inband_address), C(clusterforge_oob_address),
    C(clusterforge_storage_address). Nothing else is set per host: IPoIB addresses and HCA details
    come from the clusterforge_topology_host filter."
  - "C(compose), C(groups) and C(keyed_groups) see a host's variables as Ansible merges them: C(all),
    then the groups above the host (node-type and unit variables included), then the host's own."
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
  ngpu: clusterforge_expected_gpus
"""

from ansible.errors import AnsibleParserError
from ansible.inventory.helpers import get_group_vars
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable
from ansible.template import trust_as_template
from ansible.utils.vars import combine_vars

try:
    from clusterforge.topology import TopologyError, load
    from clusterforge.topology.inventory import PLAIN_DATA, build
except ImportError as import_error:
    CLUSTERFORGE_IMPORT_ERROR: ImportError | None = import_error
else:
    CLUSTERFORGE_IMPORT_ERROR = None


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "topology"
    # Variables from the file's content (names, addresses, ansible.vars) are trusted templates, as
    # a YAML inventory's values are: the cluster's operators write the file. _set() marks them;
    # PLAIN_DATA (the file's path) stays data, shown by ansible-inventory --list as
    # {"__ansible_unsafe": ...}.
    trusted_by_default = False

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".topology.yml", ".topology.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache=cache)
        if CLUSTERFORGE_IMPORT_ERROR is not None:
            raise AnsibleParserError(
                f"{path}: the topology inventory plugin needs the clusterforge package "
                f"(pip install clusterforge): {CLUSTERFORGE_IMPORT_ERROR}"
            )
        # clusterforge's loader first: its limits (size, depth, repeated keys) come before
        # Ansible's YAML loader reads the file for the constructed options.
        try:
            plan = load(path, links=False)
        except TopologyError as exc:
            raise AnsibleParserError(f"invalid topology:\n{exc}") from None
        # What was built other than asked (an oversubscription no whole split reaches, a
        # dragonfly port left free): said as `topology validate` says it.
        for line in plan.warning_lines():
            self.display.warning(line)
        self._read_config_data(path)
        self._populate(build(plan))

    def _populate(self, data):
        inventory = self.inventory
        for name, value in data.all_vars.items():
            self._set("all", name, value)
        for group in data.group_names():
            inventory.add_group(group)
        for parent, kids in data.children.items():
            for kid in kids:
                inventory.add_child(parent, kid)
        for group, group_vars in data.group_vars.items():
            for name, value in group_vars.items():
                self._set(group, name, value)
        # Every host in "all" first, in the topology's order: Ansible orders the hosts of
        # nested groups by set iteration (seed-dependent), so plays over "all" (rolling
        # batches) would otherwise take the hosts in a different order from run to run.
        for host in data.host_vars:
            inventory.add_host(host, group="all")
        for group, hosts in data.group_hosts.items():
            for host in hosts:
                inventory.add_host(host, group=group)
        for host, host_vars in data.host_vars.items():
            for name, value in host_vars.items():
                self._set(host, name, value)
        if self.get_option("compose") or self.get_option("groups") or self.get_option("keyed_groups"):
            self._construct(data)

    def _set(self, entity, name, value):
        self.inventory.set_variable(entity, name, value if name in PLAIN_DATA else _trusted(value))

    def _construct(self, data):
        strict = self.get_option("strict")
        for name in data.host_vars:
            host = self.inventory.get_host(name)
            # What a play would see: all, the host's ancestor groups in Ansible's order (depth,
            # priority, name; type_<node type> holds role groups, not hosts), then the host's own.
            variables = combine_vars(get_group_vars(host.get_groups()), host.get_vars())
            self._set_composite_vars(self.get_option("compose"), variables, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, name, strict=strict)


def _trusted(value):
    """`value` with every string in it trusted as a template."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return value
