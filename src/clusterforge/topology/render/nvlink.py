"""Files for rack-scale NVLink domains (nvlink_domain in the topology), one set per domain:

- imex/<domain>/nodes_config.cfg: the IMEX service's node list, one in-band address of a
  compute tray per line (NVIDIA IMEX guide: every tray of a domain lists the same addresses);
- slurm/topology.block.conf: Slurm's topology/block config, one BlockName= per NVLink domain
  and BlockSizes= in trays (install it as topology.conf with TopologyPlugin=topology/block);
- kubernetes/compute-domains.yml: one NVIDIA DRA driver ComputeDomain (resource.nvidia.com)
  per domain, and kubernetes/nvlink-domain-labels.yml: each tray's domain label.

The NCCL settings of domain members are in render/nccl.py (one node-type file feeds
/etc/nccl.conf). Nothing is written for a topology without nvlink_domain."""

from __future__ import annotations

from hostlist import collect_hostlist

from clusterforge.topology import ClusterPlan, nvlink
from clusterforge.topology.render.common import dump_yaml, generated_by

COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"


def domain_names(plan: ClusterPlan) -> list[tuple[str, list[str]]]:
    """(domain name, its tray host names) per NVLink domain, in host order."""
    return [(name, [host.name for host in trays]) for name, trays in nvlink.named_domains(plan.topology, plan.hosts)]


def nodes_config(plan: ClusterPlan, trays: list[str]) -> str:
    # Addresses only: the IMEX guide documents no comment syntax for this file.
    return "".join(f"{plan.interface_addresses(plan.host(name))['inband']}\n" for name in trays)


def tray_domain(plan: ClusterPlan, host_name: str) -> str | None:
    """The NVLink domain whose trays include host_name, or None (the inventory's domain groups)."""
    return next((name for name, trays in domain_names(plan) if host_name in trays), None)


def imex_nodes_config(plan: ClusterPlan, host_name: str, domain: str) -> str:
    """nodes_config.cfg for host_name as a member of domain: the text `files()` renders for that
    domain. ValueError names what is wrong: an unknown domain, or a host outside its list."""
    names = dict(domain_names(plan))
    if domain not in names:
        known = ", ".join(names) or "none: the topology has no nvlink_domain"
        raise ValueError(f"unknown NVLink domain {domain!r}; expected one of {known}")
    if host_name not in names[domain]:
        own = tray_domain(plan, host_name)
        where = f"its domain is {own}" if own else "it is no tray of any NVLink domain"
        raise ValueError(
            f"{host_name} is not in NVLink domain {domain}'s node list ({', '.join(names[domain])}); "
            f"expected a domain the host belongs to ({where})"
        )
    return nodes_config(plan, names[domain])


def block_conf(plan: ClusterPlan) -> str:
    domain, _ = nvlink.resolve(plan.topology.nvlink_domain)
    lines = [
        f"# Slurm topology.conf for cluster {plan.topology.cluster.name}, {generated_by(plan)}.",
        "# One block per NVLink domain. Needs TopologyPlugin=topology/block in slurm.conf.",
    ]
    lines += [f"BlockName={name} Nodes={collect_hostlist(trays)}" for name, trays in domain_names(plan)]
    lines.append("BlockSizes=" + ",".join(str(size) for size in domain.block_sizes))
    return "\n".join(lines) + "\n"


def label_key(plan: ClusterPlan) -> str:
    return f"{plan.topology.label_prefix}/nvlink-domain"


def compute_domains(plan: ClusterPlan) -> list[dict]:
    """One ComputeDomain per NVLink domain: numNodes its trays, a channel claim template of its name."""
    return [
        {
            "apiVersion": COMPUTE_DOMAIN_API,
            "kind": "ComputeDomain",
            "metadata": {"name": f"{plan.topology.cluster.name.replace('_', '-')}-{name}"},
            "spec": {
                "numNodes": len(trays),
                "channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}},
            },
        }
        for name, trays in domain_names(plan)
    ]


def files(plan: ClusterPlan) -> dict[str, str]:
    if plan.topology.nvlink_domain is None:
        return {}
    found = {f"imex/{name}/nodes_config.cfg": nodes_config(plan, trays) for name, trays in domain_names(plan)}
    found["slurm/topology.block.conf"] = block_conf(plan)
    header = f"# NVIDIA DRA driver ComputeDomains, one per NVLink domain, {generated_by(plan)}\n"
    found["kubernetes/compute-domains.yml"] = header + "---\n".join(dump_yaml(cd) for cd in compute_domains(plan))
    labels = {name: {label_key(plan): domain} for domain, trays in domain_names(plan) for name in trays}
    header = f"# Kubernetes node label naming each tray's NVLink domain, {generated_by(plan)}\n"
    found["kubernetes/nvlink-domain-labels.yml"] = header + dump_yaml(labels)
    return found
