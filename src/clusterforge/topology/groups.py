"""Names of the inventory groups that roles target, in one place: the inventory builder makes
them, the schema checks overrides against them, and the plugin's documentation lists them."""

from __future__ import annotations

# Capability groups: the node types that have the capability (their type_<name> groups are children).
GPU = "gpu"  # the node type has GPUs
NVSWITCH = "nvswitch"  # its GPUs sit on NVSwitches
INFINIBAND = "infiniband"  # an HCA on an InfiniBand fabric
ROCE = "roce"  # an HCA on an Ethernet fabric that carries RDMA (purpose compute or storage)
CAPABILITY_GROUPS = (GPU, NVSWITCH, INFINIBAND, ROCE)
# Hosts without GPUs that still get the GPU software clusterforge_gpu_components chooses (a login
# node that builds against CUDA, an image build, the lab): the topology's ansible.gpu_software
# roles. The gpu stage targets gpu:gpu_software.
GPU_SOFTWARE = "gpu_software"
# Rack-scale NVLink domains (the topology's nvlink_domain): this group holds one nvlink_<domain> group
# per domain, whose clusterforge_nvlink_domain names it; the gpu stage gives their hosts IMEX.
NVLINK_DOMAIN = "nvlink_domain"
# Ethernet fabrics of these purposes carry RDMA (RoCE); in-band and out-of-band ones carry TCP/IP.
RDMA_PURPOSES = ("compute", "storage")

# Orchestrator groups -> the topology roles whose groups they hold (children). The topology's
# ansible.orchestrator_groups replaces the roles of any of them.
ORCHESTRATOR_GROUPS: dict[str, tuple[str, ...]] = {
    "slurm_controller": ("head",),
    "slurm_compute": ("compute",),
    "slurm_login": ("login",),
    "k8s_control_plane": ("head",),
    "k8s_workers": ("compute",),
}
