# Copyright: clusterforge contributors
# Apache License 2.0
"""Which GPU software stacks cannot work: NVIDIA's compatibility tables and the one rule that reads them.

playbooks/preflight.yml refuses a host whose stack this finds a problem in, before any node is
touched. Standard library only: it runs on the controller, inside Ansible.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_gpu_stack_problems
short_description: Why a GPU software stack cannot work, from NVIDIA's compatibility tables
description:
  - "Returns one message per impossible combination, empty when none is found: the CUDA toolkit
    against its minimum driver, cuDNN, NCCL and PyTorch against the CUDA major (PyTorch's CUDA
    against the driver too), the GPU generation against the driver branch and kernel modules,
    Fabric Manager against the driver. Each message names both versions and the minimum or the
    match it needed."
  - A field that is absent, null or empty (not installed, not chosen) is not checked.
  - "Sibling filter: C(clusterforge_gpu_generation) (the generation of a GPU model, else of an
    NVLink generation; null when neither is known)."
positional: _input
options:
  _input:
    description:
      - "The stack: driver_version (550.163.01), driver_branch (550), kernel_modules (open or
        proprietary), cuda_version (12.4 or 12.4.1), cudnn_version, cudnn_cuda_major (the CUDA
        major of the cuDNN build), nccl_version, nccl_cuda_version (the CUDA of the NCCL build),
        fabricmanager_version, nvswitch (false: Fabric Manager is not run, so not checked),
        torch_version and torch_cuda_version (the CUDA a PyTorch build is for; empty for a CPU build),
        gpu_generation, or gpu_model and nvlink_generation to derive it from."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Refuse an impossible GPU software stack
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
  vars:
    __problems: "{{ {'driver_version': '535.104.05', 'cuda_version': '12.4'} | clusterforge_gpu_stack_problems }}"
"""

RETURN = r"""
_value:
  description: One message per problem; empty when the stack is possible.
  type: list
  elements: str
"""

# NVIDIA CUDA Toolkit release notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions",
# Linux x86_64 column: https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
# Toolkit release (GA = x.y.0, Update n = x.y.n) -> the driver it needs. This is the toolkit's own
# driver, not the minor-version-compatibility floor (525 for 12.x), which leaves PTX JIT and the
# toolkit's newer APIs failing at run time.
CUDA_DRIVER_MINIMUM = {
    "11.0.2": "450.51.05",
    "11.0.3": "450.51.06",
    "11.1.0": "455.23",
    "11.1.1": "455.32",
    "11.2.0": "460.27.03",
    "11.2.1": "460.32.03",
    "11.2.2": "460.32.03",
    "11.3.0": "465.19.01",
    "11.3.1": "465.19.01",
    "11.4.0": "470.42.01",
    "11.4.1": "470.57.02",
    "11.4.2": "470.57.02",
    "11.4.3": "470.82.01",
    "11.4.4": "470.82.01",
    "11.5.0": "495.29.05",
    "11.5.1": "495.29.05",
    "11.5.2": "495.29.05",
    "11.6.0": "510.39.01",
    "11.6.1": "510.47.03",
    "11.6.2": "510.47.03",
    "11.7.0": "515.43.04",
    "11.7.1": "515.48.07",
    "11.8.0": "520.61.05",
    "12.0.0": "525.60.13",
    "12.0.1": "525.85.12",
    "12.1.0": "530.30.02",
    "12.1.1": "530.30.02",
    "12.2.0": "535.54.03",
    "12.2.1": "535.86.09",
    "12.2.2": "535.104.05",
    "12.3.0": "545.23.06",
    "12.3.1": "545.23.08",
    "12.4.0": "550.54.14",
    "12.4.1": "550.54.15",
    "12.5.0": "555.42.02",
    "12.5.1": "555.42.06",
    "12.6.0": "560.28.03",
    "12.6.1": "560.35.03",
    "12.6.2": "560.35.03",
    "12.6.3": "560.35.05",
    "12.8.0": "570.26",
    "12.8.1": "570.124.06",
    "12.9.0": "575.51.03",
    "12.9.1": "575.57.08",
    "13.0.0": "580.65.06",
    "13.0.1": "580.82.07",
    "13.0.2": "580.95.05",
    "13.1.0": "590.44.01",
    "13.1.1": "590.48.01",
    "13.2.0": "595.45.04",
}

# cuDNN ships one build per CUDA major ("cuDNN 9.x for CUDA 12.x"). The CUDA majors each cuDNN major
# has builds for, from the cuDNN support matrices: 8.9.7 lists 11.x and 12.x
# (https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-897/support-matrix/index.html), 9.x
# lists 11.x (to 9.10.2), 12.x and 13.x
# (https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html).
CUDNN_CUDA_MAJORS = {8: (11, 12), 9: (11, 12, 13)}

# Driver branches per GPU generation (inclusive; None: no bound). Hopper (H100, H200) is supported
# from R525 and Blackwell (B200, GB200) from R570, Ampere (A100) from R450, the branch of CUDA 11.0,
# the first toolkit for it; R580 is the last branch for Volta (with Maxwell and Pascal). NVIDIA Data
# Center Drivers, "CUDA Toolkit, Driver, and Architecture Matrix" and the branches' release notes
# ("Hardware supported"): https://docs.nvidia.com/datacenter/tesla/drivers/index.html
GENERATION_BRANCHES = {
    "volta": (None, 580),
    "turing": (None, None),
    "ampere": (450, None),
    "ada": (None, None),
    "hopper": (525, None),
    "blackwell": (570, None),
}

# The last CUDA major per generation: CUDA 13.0 removed Maxwell, Pascal and Volta (CUDA Toolkit
# release notes, "Deprecated or Dropped Architectures").
GENERATION_LAST_CUDA_MAJOR = {"volta": 12}

# Kernel module flavours: the open modules drive Turing and newer only, and Blackwell only the open
# ones ("Kernel Modules", https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html;
# https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/).
KERNEL_MODULES = ("open", "proprietary")
OPEN_MODULES_UNSUPPORTED = frozenset({"volta"})
OPEN_MODULES_REQUIRED = frozenset({"blackwell"})

# GPU generation by the product name in a model string (as nvidia-smi and the topology write it:
# "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"), else by the NVLink generation (NVLink 5 is
# Blackwell's, 4 Hopper's, 3 Ampere's, 2 Volta's; PCIe-only GPUs have none).
GPU_PRODUCTS = {
    "blackwell": ("B100", "B200", "B300", "GB200", "GB300"),
    "hopper": ("H100", "H200", "H800", "H20", "GH200"),
    "ada": ("L4", "L20", "L40", "L40S"),
    "ampere": ("A100", "A800", "A40", "A30", "A16", "A10", "A2"),
    "turing": ("T4",),
    "volta": ("V100",),
}
_PRODUCT_GENERATION = {product: generation for generation, products in GPU_PRODUCTS.items() for product in products}
NVLINK_GENERATION = {5: "blackwell", 4: "hopper", 3: "ampere", 2: "volta"}

# A version, optionally followed by a package revision ("550.163.01-1", "2.22.3-1+cuda12.4").
_VERSION = re.compile(r"^(\d+(?:\.\d+)*)(?:[-+~].*)?$")


class _Invalid(ValueError):
    pass


class _Version(tuple):
    """A version's numeric parts, compared as numbers, and the text it was given as (for messages)."""

    text: str


def _parts(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _given(stack: Mapping, key: str):
    value = stack.get(key)
    return None if value is None or value == "" else value


def _version(stack: Mapping, key: str) -> _Version | None:
    """A version field; None when the field is absent."""
    value = _given(stack, key)
    if value is None:
        return None
    match = _VERSION.match(str(value).strip()) if not isinstance(value, bool) else None
    if not match:
        raise _Invalid(f"{key} {value!r} is not a version (digits and dots)")
    version = _Version(_parts(match.group(1)))
    version.text = str(value).strip()
    return version


def _pad(version: tuple[int, ...], length: int = 3) -> tuple[int, ...]:
    """570.26 and 570.26.0 are one version."""
    return version + (0,) * (length - len(version))


def cuda_driver_minimum(cuda: tuple[int, ...]) -> tuple[str, str] | None:
    """The driver a CUDA toolkit needs and the table row it comes from: the latest release of the
    same major.minor that is not newer than `cuda` (12.4 is 12.4 GA; 12.4.1 is Update 1); None for a
    major.minor the table does not list."""
    cuda = _pad(cuda)
    rows = sorted(
        (_parts(toolkit), toolkit, driver)
        for toolkit, driver in CUDA_DRIVER_MINIMUM.items()
        if _parts(toolkit)[:2] == cuda[:2]
    )
    if not rows:
        return None
    _, toolkit, driver = ([row for row in rows if row[0] <= cuda] or rows[:1])[-1]
    return driver, toolkit


def gpu_generation(model=None, nvlink_generation=None) -> str | None:
    """The generation of a GPU model (by its product name), else of its NVLink generation."""
    for token in re.split(r"[^A-Za-z0-9]+", str(model or "").upper()):
        if token.lower() in GENERATION_BRANCHES:  # "RTX PRO 6000 Blackwell", "RTX 6000 Ada Generation"
            return token.lower()
        if token in _PRODUCT_GENERATION:
            return _PRODUCT_GENERATION[token]
    try:
        return NVLINK_GENERATION.get(int(nvlink_generation)) if nvlink_generation not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _branch(stack: Mapping, driver: tuple[int, ...] | None, problems: list[str]) -> int | None:
    branch = _version(stack, "driver_branch")
    if branch is not None and len(branch) != 1:
        raise _Invalid(f"driver_branch {stack['driver_branch']!r} is not a branch number (550)")
    if branch and driver and branch[0] != driver[0]:
        problems.append(f"driver {driver.text} is not of driver branch {branch[0]}")
    return driver[0] if driver else branch[0] if branch else None


def _cuda_problems(cuda, driver, branch) -> list[str]:
    found = cuda_driver_minimum(cuda)
    if found is None:
        first, *_, last = sorted(CUDA_DRIVER_MINIMUM, key=_parts)
        return [
            f"CUDA {cuda.text} is not a release in NVIDIA's CUDA toolkit driver table (known: {first} to {last});"
            " update plugins/filter/gpu_stack.py from the CUDA release notes"
        ]
    minimum, row = found
    need = f"CUDA {cuda.text} needs NVIDIA driver {minimum} or newer (release {row} in NVIDIA's table)"
    if driver is not None and _pad(driver) < _pad(_parts(minimum)):
        return [f"{need}; the driver is {driver.text}"]
    if driver is None and branch is not None and branch < _parts(minimum)[0]:
        return [f"{need}; the driver branch is {branch}"]
    return []


def _cudnn_problems(stack, cuda) -> list[str]:
    cudnn = _version(stack, "cudnn_version")
    built_for = _version(stack, "cudnn_cuda_major")
    name = f"cuDNN {cudnn.text}" if cudnn else "cuDNN"
    problems = []
    if built_for and cuda and built_for[0] != cuda[0]:
        problems.append(
            f"{name} built for CUDA {built_for[0]} cannot run with CUDA {cuda.text}: "
            f"cuDNN is built per CUDA major (needs the build for CUDA {cuda[0]})"
        )
    if cudnn and cuda:
        majors = CUDNN_CUDA_MAJORS.get(cudnn[0])
        if majors is None:
            known = ", ".join(f"{major}.x" for major in CUDNN_CUDA_MAJORS)
            problems.append(f"cuDNN {cudnn.text} is not a cuDNN release the support matrix table holds ({known})")
        elif cuda[0] not in majors:
            supported = ", ".join(f"{major}.x" for major in majors)
            problems.append(
                f"cuDNN {cudnn.text} has no build for CUDA {cuda.text} "
                f"(cuDNN {cudnn[0]}.x is built for CUDA {supported})"
            )
    return problems


def _nccl_problems(stack, cuda) -> list[str]:
    built_for = _version(stack, "nccl_cuda_version")
    if not (built_for and cuda) or built_for[0] == cuda[0]:
        return []
    nccl = _version(stack, "nccl_version")
    name = f"NCCL {nccl.text}" if nccl else "NCCL"
    return [
        f"{name} built for CUDA {built_for.text} cannot run with CUDA {cuda.text}: "
        f"the NCCL package must be built for CUDA {cuda[0]}.x (libnccl2 x.y.z-1+cuda{cuda[0]}.N)"
    ]


def _torch_problems(stack, cuda, driver, branch) -> list[str]:
    """A PyTorch build for CUDA X.Y carries that CUDA runtime (the pip wheels) or links the installed
    one: the driver must reach the table's minimum for X.Y, and the installed CUDA (which builds
    extensions such as DeepSpeed's ops, and whose NCCL the GPU roles pinned) must be of the same major."""
    built_for = _version(stack, "torch_cuda_version")
    if built_for is None:
        return []
    torch = _version(stack, "torch_version")
    name = f"PyTorch {torch.text + ' ' if torch else ''}built for CUDA {built_for.text}"
    problems = [f"{name}: {problem}" for problem in _cuda_problems(built_for, driver, branch)]
    if cuda is not None and built_for[0] != cuda[0]:
        problems.append(
            f"{name} cannot run with the installed CUDA {cuda.text}: "
            f"it needs a build for CUDA {cuda[0]}.x (torch's +cu{cuda[0]}N wheels)"
        )
    return problems


def _generation_problems(stack, branch, modules, cuda) -> list[str]:
    generation = _given(stack, "gpu_generation")
    if generation is None:
        generation = gpu_generation(_given(stack, "gpu_model"), _given(stack, "nvlink_generation"))
        if generation is None:
            return []
    generation = str(generation).lower()
    if generation not in GENERATION_BRANCHES:
        return [f"gpu_generation {generation!r} is not one of {', '.join(GENERATION_BRANCHES)}"]
    gpu = f"{stack['gpu_model']} ({generation})" if _given(stack, "gpu_model") else f"a {generation} GPU"
    problems = []
    low, high = GENERATION_BRANCHES[generation]
    if branch is not None and low is not None and branch < low:
        problems.append(f"{gpu} needs driver branch {low} or newer; the driver branch is {branch}")
    if branch is not None and high is not None and branch > high:
        problems.append(f"{gpu} is supported up to driver branch {high}; the driver branch is {branch}")
    last_cuda = GENERATION_LAST_CUDA_MAJOR.get(generation)
    if cuda is not None and last_cuda is not None and cuda[0] > last_cuda:
        problems.append(f"{gpu} is supported up to CUDA {last_cuda}.x; CUDA is {cuda.text}")
    if modules == "proprietary" and generation in OPEN_MODULES_REQUIRED:
        problems.append(f"{gpu} needs the open kernel modules; kernel_modules is proprietary")
    if modules == "open" and generation in OPEN_MODULES_UNSUPPORTED:
        problems.append(
            f"{gpu} needs the proprietary kernel modules (the open ones start at Turing); kernel_modules is open"
        )
    return problems


def _fabricmanager_problems(stack, driver, branch) -> list[str]:
    fabricmanager = _version(stack, "fabricmanager_version")
    if fabricmanager is None or stack.get("nvswitch") is False:
        return []
    # Fabric Manager refuses to start unless its version is the driver's, exactly (Fabric Manager
    # user guide: https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html).
    if driver is not None and _pad(fabricmanager) != _pad(driver):
        return [
            f"Fabric Manager {fabricmanager.text} must be the driver's version exactly; the driver is {driver.text}"
        ]
    if driver is None and branch is not None and fabricmanager[0] != branch:
        return [
            f"Fabric Manager {fabricmanager.text} must be the driver's version exactly; the driver branch is {branch}"
        ]
    return []


def gpu_stack_problems(stack) -> list[str]:
    if not isinstance(stack, Mapping):
        raise AnsibleFilterError(f"clusterforge_gpu_stack_problems expects a dict, got {type(stack).__name__}")
    problems: list[str] = []
    try:
        driver = _version(stack, "driver_version")
        branch = _branch(stack, driver, problems)
        cuda = _version(stack, "cuda_version")
        modules = _given(stack, "kernel_modules")
        if modules is not None and modules not in KERNEL_MODULES:
            problems.append(f"kernel_modules {modules!r} is not one of {', '.join(KERNEL_MODULES)}")
        if cuda is not None:
            problems += _cuda_problems(cuda, driver, branch)
        problems += _cudnn_problems(stack, cuda)
        problems += _nccl_problems(stack, cuda)
        problems += _torch_problems(stack, cuda, driver, branch)
        problems += _generation_problems(stack, branch, modules, cuda)
        problems += _fabricmanager_problems(stack, driver, branch)
    except _Invalid as exc:
        problems.append(str(exc))
    return problems


class FilterModule:
    def filters(self):
        return {
            "clusterforge_gpu_stack_problems": gpu_stack_problems,
            "clusterforge_gpu_generation": gpu_generation,
        }
