# Copyright: clusterforge contributors
# Apache License 2.0
"""The ipoib role's renderings of a host's IPoIB interfaces: the netplan document and the partition
child interfaces, from the interfaces clusterforge_topology_host gives (ipoib_interfaces)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_ipoib_netplan
short_description: The netplan document of a host's IPoIB interfaces, or their partition child interfaces
description:
  - "C(clusterforge_ipoib_netplan): the netplan (version 2) document for the interfaces, one
    C(ethernets) entry per interface with the networkd renderer: the topology's address and MTU, no
    DHCP, no router advertisements, no link-local address, up without carrier and optional (boot does
    not wait for a port the subnet manager has not brought up). The IPoIB mode is not in it (the role
    sets it with a udev rule for both renderers). Refuses an interface with partition keys: netplan has
    no IPoIB child (partition) interface type."
  - "C(clusterforge_ipoib_children): the partition child interfaces, one per interface and partition
    key (ipoib_pkeys, the full-membership bit set): name C(<parent>.<key without 0x>) as Linux's ipoib
    driver names them (ibp12s0.8010), parent, pkey, mode, mtu, rail and fabric. Refuses a child name
    longer than the kernel's 15 characters."
positional: _input
options:
  _input:
    description: The host's IPoIB interfaces (ipoib_interfaces), each with netdev, ipoib_address, ipoib_prefix,
      ipoib_mode, ipoib_mtu, rail, fabric and optionally ipoib_pkeys.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the netplan file
  ansible.builtin.copy:
    content: "{{ ipoib_interfaces | clusterforge_ipoib_netplan | to_nice_yaml(indent=2) }}"
    dest: /etc/netplan/60-clusterforge-ipoib.yaml
    mode: "0600"
"""

RETURN = r"""
_value:
  description: The netplan document (a mapping), or the list of child interfaces.
  type: raw
"""

# The kernel's limit on an interface name (IFNAMSIZ less the terminating NUL).
IFNAME_MAX = 15


def netplan(interfaces: list[dict]) -> dict:
    with_keys = [item["netdev"] for item in interfaces if item.get("ipoib_pkeys")]
    if with_keys:
        raise AnsibleFilterError(
            f"clusterforge_ipoib_netplan: {', '.join(with_keys)} have partition keys (the fabric's ipoib_pkeys); "
            "netplan has no IPoIB partition (child) interface type, so it cannot express them: use "
            "ipoib_renderer networkd on these hosts, or remove ipoib_pkeys from the fabric"
        )
    ethernets = {
        item["netdev"]: {
            "renderer": "networkd",
            "addresses": [f"{item['ipoib_address']}/{item['ipoib_prefix']}"],
            "mtu": int(item["ipoib_mtu"]),
            "dhcp4": False,
            "dhcp6": False,
            "accept-ra": False,
            "link-local": [],
            "ignore-carrier": True,
            "optional": True,
        }
        for item in interfaces
    }
    return {"network": {"version": 2, "ethernets": ethernets}}


def children(interfaces: list[dict]) -> list[dict]:
    found = []
    for item in interfaces:
        for pkey in item.get("ipoib_pkeys") or []:
            name = f"{item['netdev']}.{pkey.removeprefix('0x')}"
            if len(name) > IFNAME_MAX:
                raise AnsibleFilterError(
                    f"clusterforge_ipoib_children: the child interface {name} of {item['netdev']} for partition "
                    f"key {pkey} is longer than the kernel's {IFNAME_MAX} characters; rename the HCA's netdev "
                    "in the node type"
                )
            found.append(
                {
                    "name": name,
                    "parent": item["netdev"],
                    "pkey": pkey,
                    "mode": item["ipoib_mode"],
                    "mtu": int(item["ipoib_mtu"]),
                    "rail": item["rail"],
                    "fabric": item["fabric"],
                }
            )
    return found


class FilterModule:
    def filters(self):
        return {"clusterforge_ipoib_netplan": netplan, "clusterforge_ipoib_children": children}
