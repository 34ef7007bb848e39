"""NCCL settings per node type: nccl/<node_type>.env, and nccl/hosts.yml mapping each host
to its file. Node types without GPUs or without HCAs on the GPU fabric (ClusterPlan.gpu_fabric) get none.

The files use NCCL's own config-file syntax (`NAME=value`, no quotes), so one file works
as /etc/nccl.conf, as NCCL_CONF_FILE, as a systemd EnvironmentFile and with
`docker --env-file`. NCCL reads every line that holds a `=` as a variable, comments
included, so comment lines here never contain one.

- NCCL_IB_HCA: the node type's HCAs on the GPU fabric in rail order, with a leading
  `=` so that mlx5_1 does not also match mlx5_10.
- NCCL_SOCKET_IFNAME (bootstrap and socket traffic): the topology has no field for the
  in-band interface, so it is the netdev of the node type's first HCA on an in-band
  fabric, else on any fabric other than compute and out-of-band; a node type that lists
  none gets `^lo,docker` (anything but loopback and Docker bridges).
- NCCL_CROSS_NIC=0 on rail-optimised fabrics: rail n only reaches rail n, so a ring must
  stay on one NIC index across nodes. Elsewhere it is left to NCCL's default.
- NCCL_IB_GID_INDEX (default 3, RoCE v2) and NCCL_IB_TC (the fabric's DSCP << 2, default 104
  for DSCP 26) on Ethernet (RoCE) fabrics only, from the fabric's `roce` settings
  (model.RoceQos); InfiniBand needs neither.
- On the compute trays of a rack-scale NVLink domain (nvlink_domain): NCCL_MNNVL_ENABLE=1
  (multi-node NVLink across the domain's trays, through IMEX), NCCL_NVLS_ENABLE=1 (NVLink
  SHARP in the NVLink switches) and NCCL_CUMEM_ENABLE=1, which MNNVL needs (NCCL's
  environment variable documentation).

NICs that NCCL reaches through a net plugin rather than verbs (libfabric's cxi on
Slingshot, through aws-ofi-nccl) ignore the NCCL_IB_* variables; the topology does not
say which transport a NIC uses, so they are written all the same.
"""

from __future__ import annotations

from clusterforge.topology import ClusterPlan
from clusterforge.topology.model import NodeType
from clusterforge.topology.render.common import dump_yaml, generated_by

SOCKET_EXCLUDE = "^lo,docker"
MNNVL = {"NCCL_MNNVL_ENABLE": "1", "NCCL_NVLS_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1"}


def socket_ifname(plan: ClusterPlan, node_type: NodeType) -> str:
    fabrics = plan.topology.fabrics
    for wanted in (("inband",), ("inband", "storage")):
        for hca in node_type.hcas:
            if fabrics[hca.fabric].purpose in wanted:
                return f"={hca.netdev}"
    return SOCKET_EXCLUDE


def settings(plan: ClusterPlan, type_name: str) -> dict[str, str] | None:
    """NCCL variables for one node type, or None when it has no GPU (a fabric manager on the
    GPU fabric runs no NCCL) or no HCA on the GPU fabric."""
    rail_hcas = plan.expectations(type_name).rail_hcas
    if not rail_hcas or plan.topology.node_types[type_name].gpu is None:
        return None
    spec = plan.topology.fabrics[plan.gpu_fabric]
    found = {
        "NCCL_IB_HCA": "=" + ",".join(rail_hcas),
        "NCCL_SOCKET_IFNAME": socket_ifname(plan, plan.topology.node_types[type_name]),
    }
    if spec.topology == "rail_optimized_fat_tree":
        found["NCCL_CROSS_NIC"] = "0"
    roce = spec.roce_qos
    if roce is not None:  # RoCE: the GID and the traffic class the switches hold lossless
        found["NCCL_IB_GID_INDEX"] = str(roce.gid_index)
        found["NCCL_IB_TC"] = str(roce.traffic_class)
    domain = plan.topology.nvlink_domain
    if domain is not None and domain.node_type == type_name:
        found.update(MNNVL)
    return found


def env_file(plan: ClusterPlan, type_name: str) -> str | None:
    values = settings(plan, type_name)
    if values is None:
        return None
    fabric_name = plan.gpu_fabric
    spec = plan.topology.fabrics[fabric_name]
    comments = [
        f"NCCL settings for node type {type_name}, {generated_by(plan)}.",
        f"GPU fabric {fabric_name}: {spec.link_layer}, {spec.topology}.",
        "Use as /etc/nccl.conf, NCCL_CONF_FILE, a systemd EnvironmentFile or a docker env file.",
    ]
    if "NCCL_CROSS_NIC" not in values:
        comments.append("NCCL_CROSS_NIC is left to NCCL: the fabric is not rail-optimised.")
    if values["NCCL_SOCKET_IFNAME"] == SOCKET_EXCLUDE:
        comments.append("The node type lists no in-band interface: sockets avoid loopback and Docker bridges.")
    # NCCL would read a comment holding '=' as a variable (the file name might hold one).
    lines = [f"# {line.replace('=', '-')}" for line in comments] + [f"{key}={value}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def files(plan: ClusterPlan) -> dict[str, str]:
    found: dict[str, str] = {}
    for type_name in plan.topology.node_types:
        text = env_file(plan, type_name)
        if text is not None:
            found[f"nccl/{type_name}.env"] = text
    hosts = {host.name: f"nccl/{host.node_type}.env" for host in plan.hosts if f"nccl/{host.node_type}.env" in found}
    header = f"# host -> its NCCL settings file (relative to the render directory), {generated_by(plan)}\n"
    found["nccl/hosts.yml"] = header + dump_yaml(hosts)
    return found
