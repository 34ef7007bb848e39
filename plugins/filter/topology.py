# Copyright: clusterforge contributors
# Apache License 2.0
"""Filters that derive per-host details from the topology file, so the inventory stays small."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_topology_host
short_description: Everything the topology says about one host
description:
  - Loads the topology file the inventory came from (C(clusterforge_topology_file)) once per
    process and returns the host's role, index, unit, node type, what the checks expect of it
    (the same values as the inventory's clusterforge_expected_* variables), its addresses (IPoIB
    included, one per rail) and its HCAs in rail order with netdev, PCI address, NUMA node,
    nearest GPU, rate, rail, link layer, IPoIB address (with its prefix length, and the fabric's
    IPoIB mode and MTU), on a RoCE fabric C(roce) (the netdev with the fabric's priority, dscp,
    ecn, mtu and gid_index), and its subnet manager duties per InfiniBand fabric.
positional: _input, topology_file
options:
  _input:
    description: The host name (inventory_hostname).
    type: str
    required: true
  topology_file:
    description: Path of the topology file (clusterforge_topology_file).
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Show the HCAs NCCL should use, in rail order
  ansible.builtin.debug:
    msg: >-
      {{ (inventory_hostname | clusterforge_topology_host(clusterforge_topology_file)).hcas
         | map(attribute='device') }}
"""

RETURN = r"""
_value:
  description: >-
    name, role, index, unit, slot, site, node_type, addresses, hcas, subnet_managers (per InfiniBand
    fabric the host is cabled to: fabric, kind (opensm, ufm or null), runs_opensm, priority, guids,
    routing_engine), and expected (gpus, gpu_model,
    nvlink_generation, nvswitch, hca_rates, link_layers, rail_hcas, rails, nic_rate_gbps: the inventory's
    clusterforge_expected_* values).
  type: dict
"""


def topology_host(hostname, topology_file):
    try:
        from clusterforge.topology.for_filters import topology_for_filter
    except ImportError as exc:
        raise AnsibleFilterError(f"clusterforge_topology_host needs the clusterforge package: {exc}") from None
    plan = topology_for_filter("clusterforge_topology_host", topology_file)
    try:
        host = plan.host(hostname)
    except KeyError:
        raise AnsibleFilterError(f"clusterforge_topology_host: {hostname} is not in {topology_file}") from None
    addresses = plan.addresses(host)
    return {
        "name": host.name,
        "role": host.role,
        "index": host.index,
        "unit": host.unit,
        "slot": host.slot,
        "site": host.site,
        "node_type": host.node_type,
        "expected": plan.expectations(host).as_dict(),
        "addresses": addresses,
        "hcas": _hcas(plan, host, addresses.get("ipoib", [])),
        "subnet_managers": plan.subnet_managers(host),
    }


def _hcas(plan, host, ipoib):
    """The node type's HCAs in rail order, each with its rail on its fabric, the fabric's link
    layer, on the IPoIB fabric the rail's IPoIB address, and on a RoCE fabric (Ethernet, compute
    or storage) `roce`: the netdev with the fabric's lossless settings (the roce_qos role's input)."""
    from clusterforge.topology import groups  # the package is loaded by now (topology_for_filter)

    rails = {}
    found = []
    for hca in plan.topology.node_types[host.node_type].hcas:
        rails[hca.fabric] = rails.get(hca.fabric, 0) + 1
        entry = hca.model_dump()
        entry["rail"] = rails[hca.fabric]
        fabric = plan.topology.fabrics[hca.fabric]
        entry["link_layer"] = fabric.link_layer
        roce = fabric.roce_qos if fabric.purpose in groups.RDMA_PURPOSES else None  # the roce group's rule
        if roce is not None:
            entry["roce"] = {"netdev": hca.netdev, **roce.model_dump()}
        if hca.fabric == plan.ipoib_fabric and rails[hca.fabric] <= len(ipoib):
            entry["ipoib_address"] = ipoib[rails[hca.fabric] - 1]
            entry["ipoib_prefix"] = plan.subnets[f"ipoib_rail{rails[hca.fabric]}"].network.prefixlen
            entry["ipoib_mode"] = fabric.ipoib_mode
            entry["ipoib_mtu"] = fabric.ipoib_mtu
            entry["ipoib_pkeys"] = fabric.ipoib_child_pkeys
        found.append(entry)
    return found


class FilterModule:
    def filters(self):
        return {"clusterforge_topology_host": topology_host}
