"""clusterforge_gpu_stack_problems: the GPU software stacks the preflight refuses, against NVIDIA's tables."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.paths import filters as filters_of
from tests.paths import load_plugin

PLUGIN = "plugins/filter/gpu_stack.py"

# Transcribed by hand from NVIDIA's CUDA Toolkit release notes, Table 3 "CUDA Toolkit and
# Corresponding Driver Versions", Linux x86_64 column
# (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html): the row's name, the
# toolkit version a site writes for it (GA as major.minor), the minimum driver, and the driver
# just below it.
CUDA_TABLE = [
    ("CUDA 13.2 GA", "13.2", "595.45.04", "595.45.03"),
    ("CUDA 13.1 Update 1", "13.1.1", "590.48.01", "590.48.00"),
    ("CUDA 13.1 GA", "13.1", "590.44.01", "590.44.00"),
    ("CUDA 13.0 Update 2", "13.0.2", "580.95.05", "580.95.04"),
    ("CUDA 13.0 Update 1", "13.0.1", "580.82.07", "580.82.06"),
    ("CUDA 13.0 GA", "13.0", "580.65.06", "580.65.05"),
    ("CUDA 12.9 Update 1", "12.9.1", "575.57.08", "575.57.07"),
    ("CUDA 12.9 GA", "12.9", "575.51.03", "575.51.02"),
    ("CUDA 12.8 Update 1", "12.8.1", "570.124.06", "570.124.05"),
    ("CUDA 12.8 GA", "12.8", "570.26", "570.25"),
    ("CUDA 12.6 Update 3", "12.6.3", "560.35.05", "560.35.04"),
    ("CUDA 12.6 Update 2", "12.6.2", "560.35.03", "560.35.02"),
    ("CUDA 12.6 Update 1", "12.6.1", "560.35.03", "560.35.02"),
    ("CUDA 12.6 GA", "12.6", "560.28.03", "560.28.02"),
    ("CUDA 12.5 Update 1", "12.5.1", "555.42.06", "555.42.05"),
    ("CUDA 12.5 GA", "12.5", "555.42.02", "555.42.01"),
    ("CUDA 12.4 Update 1", "12.4.1", "550.54.15", "550.54.14"),
    ("CUDA 12.4 GA", "12.4", "550.54.14", "550.54.13"),
    ("CUDA 12.3 Update 1", "12.3.1", "545.23.08", "545.23.07"),
    ("CUDA 12.3 GA", "12.3", "545.23.06", "545.23.05"),
    ("CUDA 12.2 Update 2", "12.2.2", "535.104.05", "535.104.04"),
    ("CUDA 12.2 Update 1", "12.2.1", "535.86.09", "535.86.08"),
    ("CUDA 12.2 GA", "12.2", "535.54.03", "535.54.02"),
    ("CUDA 12.1 Update 1", "12.1.1", "530.30.02", "530.30.01"),
    ("CUDA 12.1 GA", "12.1", "530.30.02", "530.30.01"),
    ("CUDA 12.0 Update 1", "12.0.1", "525.85.12", "525.85.11"),
    ("CUDA 12.0 GA", "12.0", "525.60.13", "525.60.12"),
    ("CUDA 11.8 GA", "11.8", "520.61.05", "520.61.04"),
    ("CUDA 11.7 Update 1", "11.7.1", "515.48.07", "515.48.06"),
    ("CUDA 11.7 GA", "11.7", "515.43.04", "515.43.03"),
    ("CUDA 11.6 Update 2", "11.6.2", "510.47.03", "510.47.02"),
    ("CUDA 11.6 Update 1", "11.6.1", "510.47.03", "510.47.02"),
    ("CUDA 11.6 GA", "11.6", "510.39.01", "510.39.00"),
    ("CUDA 11.5 Update 2", "11.5.2", "495.29.05", "495.29.04"),
    ("CUDA 11.5 Update 1", "11.5.1", "495.29.05", "495.29.04"),
    ("CUDA 11.5 GA", "11.5", "495.29.05", "495.29.04"),
    ("CUDA 11.4 Update 4", "11.4.4", "470.82.01", "470.82.00"),
    ("CUDA 11.4 Update 3", "11.4.3", "470.82.01", "470.82.00"),
    ("CUDA 11.4 Update 2", "11.4.2", "470.57.02", "470.57.01"),
    ("CUDA 11.4 Update 1", "11.4.1", "470.57.02", "470.57.01"),
    ("CUDA 11.4.0 GA", "11.4", "470.42.01", "470.42.00"),
    ("CUDA 11.3.1 Update 1", "11.3.1", "465.19.01", "465.19.00"),
    ("CUDA 11.3.0 GA", "11.3", "465.19.01", "465.19.00"),
    ("CUDA 11.2.2 Update 2", "11.2.2", "460.32.03", "460.32.02"),
    ("CUDA 11.2.1 Update 1", "11.2.1", "460.32.03", "460.32.02"),
    ("CUDA 11.2.0 GA", "11.2", "460.27.03", "460.27.02"),
    ("CUDA 11.1.1 Update 1", "11.1.1", "455.32", "455.31"),
    ("CUDA 11.1 GA", "11.1", "455.23", "455.22"),
    ("CUDA 11.0.3 Update 1", "11.0.3", "450.51.06", "450.51.05"),
    ("CUDA 11.0.2 GA", "11.0.2", "450.51.05", "450.51.04"),
]


@pytest.fixture(scope="module")
def problems():
    return filters_of(PLUGIN)["clusterforge_gpu_stack_problems"]


@pytest.fixture(scope="module")
def generation():
    return filters_of(PLUGIN)["clusterforge_gpu_generation"]


@pytest.mark.parametrize(("row", "cuda", "minimum", "below"), CUDA_TABLE, ids=[row[0] for row in CUDA_TABLE])
def test_cuda_needs_exactly_the_driver_of_nvidias_table(problems, row, cuda, minimum, below):
    assert problems({"cuda_version": cuda, "driver_version": minimum}) == []
    found = problems({"cuda_version": cuda, "driver_version": below})
    assert len(found) == 1, found
    assert f"CUDA {cuda} needs NVIDIA driver {minimum} or newer" in found[0]
    assert f"the driver is {below}" in found[0]


def test_every_encoded_row_is_in_the_transcribed_table():
    """A row added to the plugin without its row here (or a row here the plugin lacks) fails."""
    encoded = load_plugin(PLUGIN).CUDA_DRIVER_MINIMUM
    transcribed = {cuda if cuda.count(".") == 2 else f"{cuda}.0": minimum for _, cuda, minimum, _ in CUDA_TABLE}
    assert encoded == transcribed


def test_the_issue_example_names_both_versions_and_the_minimum(problems):
    assert problems({"cuda_version": "12.4", "driver_version": "535.104.05", "driver_branch": 535}) == [
        "CUDA 12.4 needs NVIDIA driver 550.54.14 or newer (release 12.4.0 in NVIDIA's table); the driver is 535.104.05"
    ]


def test_a_later_update_of_a_minor_release_needs_its_own_row(problems):
    # 12.4.1 (Update 1) needs 550.54.15: the GA's 550.54.14 is not enough.
    assert problems({"cuda_version": "12.4.1", "driver_version": "550.54.14"}) != []
    # A component version past the last Update (cudart 12.4.127) takes the last Update's row.
    assert problems({"cuda_version": "12.4.127", "driver_version": "550.54.15"}) == []


def test_a_driver_branch_alone_is_refused_only_when_no_driver_of_it_is_new_enough(problems):
    assert problems({"cuda_version": "12.4", "driver_branch": 550}) == []
    assert problems({"cuda_version": "12.4", "driver_branch": "535"}) == [
        "CUDA 12.4 needs NVIDIA driver 550.54.14 or newer (release 12.4.0 in NVIDIA's table); the driver branch is 535"
    ]


def test_a_driver_of_another_branch_than_chosen(problems):
    assert problems({"driver_branch": 550, "driver_version": "535.104.05"}) == [
        "driver 535.104.05 is not of driver branch 550"
    ]


def test_a_cuda_release_nvidia_never_made_is_refused(problems):
    (message,) = problems({"cuda_version": "12.7", "driver_version": "580.95.05"})
    assert message.startswith(
        "CUDA 12.7 is not a release in NVIDIA's CUDA toolkit driver table (known: 11.0.2 to 13.2.0);"
    )


def test_absent_values_are_not_checked(problems):
    assert problems({}) == []
    fields = "driver_version driver_branch kernel_modules cuda_version cudnn_version cudnn_cuda_major nccl_version"
    fields += " nccl_cuda_version fabricmanager_version gpu_generation gpu_model nvlink_generation nvswitch"
    fields += " torch_version torch_cuda_version"
    absent = dict.fromkeys(fields.split(), None)
    assert problems(absent) == []
    assert problems({**absent, "cuda_version": ""}) == []
    # CUDA without a driver chosen: nothing to compare
    assert problems({"cuda_version": "13.0", "gpu_model": "NVIDIA B200"}) == []


def test_a_good_hopper_stack_passes(problems):
    stack = {
        "driver_version": "550.163.01",
        "driver_branch": 550,
        "kernel_modules": "open",
        "cuda_version": "12.4",
        "cudnn_version": "9.1.0",
        "cudnn_cuda_major": 12,
        "nccl_version": "2.22.3",
        "nccl_cuda_version": "12.4",
        "fabricmanager_version": "550.163.01",
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "nvswitch": True,
    }
    assert problems(stack) == []


# cuDNN ships per CUDA major: "cuDNN 9.x for CUDA 12.x" (cuDNN support matrix,
# https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html); 8.9.7 was built for
# CUDA 11.x and 12.x only.
def test_cudnn_built_for_another_cuda_major(problems):
    assert problems({"cuda_version": "12.4", "cudnn_version": "9.1.0", "cudnn_cuda_major": 11}) == [
        "cuDNN 9.1.0 built for CUDA 11 cannot run with CUDA 12.4: cuDNN is built per CUDA major "
        "(needs the build for CUDA 12)"
    ]
    assert problems({"cuda_version": "13.0", "cudnn_version": "9.13.0", "cudnn_cuda_major": 13}) == []


def test_cudnn_without_a_build_for_the_cuda_major(problems):
    assert problems({"cuda_version": "13.0", "cudnn_version": "8.9.7"}) == [
        "cuDNN 8.9.7 has no build for CUDA 13.0 (cuDNN 8.x is built for CUDA 11.x, 12.x)"
    ]
    assert problems({"cuda_version": "12.2", "cudnn_version": "8.9.7"}) == []
    assert problems({"cuda_version": "12.2", "cudnn_version": "7.6.5"}) == [
        "cuDNN 7.6.5 is not a cuDNN release the support matrix table holds (8.x, 9.x)"
    ]


def test_nccl_built_for_another_cuda_major(problems):
    (message,) = problems({"cuda_version": "13.0", "nccl_version": "2.22.3", "nccl_cuda_version": "12.4"})
    assert message.startswith("NCCL 2.22.3 built for CUDA 12.4 cannot run with CUDA 13.0")
    assert problems({"cuda_version": "12.4", "nccl_version": "2.22.3", "nccl_cuda_version": "12.6"}) == []


def test_a_torch_build_for_a_cuda_the_driver_cannot_run_names_both_versions(problems):
    # torch 2.6.0+cu126 carries CUDA 12.6's runtime: NVIDIA's table asks 560.28.03 for 12.6 GA.
    assert problems({"driver_version": "550.163.01", "torch_version": "2.6.0", "torch_cuda_version": "12.6"}) == [
        "PyTorch 2.6.0 built for CUDA 12.6: CUDA 12.6 needs NVIDIA driver 560.28.03 or newer"
        " (release 12.6.0 in NVIDIA's table); the driver is 550.163.01"
    ]
    assert problems({"driver_branch": 535, "torch_version": "2.6.0", "torch_cuda_version": "12.4"}) == [
        "PyTorch 2.6.0 built for CUDA 12.4: CUDA 12.4 needs NVIDIA driver 550.54.14 or newer"
        " (release 12.4.0 in NVIDIA's table); the driver branch is 535"
    ]
    assert problems({"driver_version": "550.163.01", "torch_version": "2.6.0", "torch_cuda_version": "12.4"}) == []


def test_a_torch_build_for_another_cuda_major_than_the_installed_one(problems):
    stack = {"driver_version": "580.95.05", "cuda_version": "13.0"}
    stack |= {"torch_version": "2.6.0", "torch_cuda_version": "12.4"}
    assert problems(stack) == [
        "PyTorch 2.6.0 built for CUDA 12.4 cannot run with the installed CUDA 13.0: it needs a build for CUDA 13.x"
        " (torch's +cu13N wheels)"
    ]
    assert problems({**stack, "torch_cuda_version": "13.0"}) == []


def test_a_cpu_torch_build_is_not_checked(problems):
    assert problems({"driver_version": "535.104.05", "torch_version": "2.6.0", "torch_cuda_version": ""}) == []
    assert problems({"driver_version": "535.104.05", "torch_version": "2.6.0", "torch_cuda_version": None}) == []


@pytest.mark.parametrize(
    ("gpu_model", "branch", "expected"),
    [
        # Hopper from R525, Blackwell from R570 (NVIDIA data center driver release notes)
        (
            "NVIDIA H100 80GB HBM3",
            520,
            "NVIDIA H100 80GB HBM3 (hopper) needs driver branch 525 or newer; the driver branch is 520",
        ),
        ("NVIDIA H100 80GB HBM3", 525, None),
        ("NVIDIA B200", 565, "NVIDIA B200 (blackwell) needs driver branch 570 or newer; the driver branch is 565"),
        ("NVIDIA B200", 570, None),
        (
            "NVIDIA A100-SXM4-40GB",
            440,
            "NVIDIA A100-SXM4-40GB (ampere) needs driver branch 450 or newer; the driver branch is 440",
        ),
        ("NVIDIA A100-SXM4-40GB", 450, None),
        # R580 is the last branch for Volta
        (
            "Tesla V100-SXM2-32GB",
            590,
            "Tesla V100-SXM2-32GB (volta) is supported up to driver branch 580; the driver branch is 590",
        ),
        ("Tesla V100-SXM2-32GB", 580, None),
    ],
)
def test_gpu_generation_against_the_driver_branch(problems, gpu_model, branch, expected):
    assert problems({"gpu_model": gpu_model, "driver_branch": branch}) == ([expected] if expected else [])


def test_blackwell_needs_the_open_kernel_modules(problems):
    stack = {"gpu_model": "NVIDIA B200", "driver_branch": 570}
    assert problems({**stack, "kernel_modules": "proprietary"}) == [
        "NVIDIA B200 (blackwell) needs the open kernel modules; kernel_modules is proprietary"
    ]
    assert problems({**stack, "kernel_modules": "open"}) == []
    assert problems({"gpu_model": "NVIDIA H100 80GB HBM3", "kernel_modules": "proprietary"}) == []


def test_volta_cannot_run_the_open_kernel_modules(problems):
    assert problems({"gpu_generation": "volta", "kernel_modules": "open"}) == [
        "a volta GPU needs the proprietary kernel modules (the open ones start at Turing); kernel_modules is open"
    ]


def test_volta_ends_with_cuda_12(problems):
    # CUDA 13.0 removed Volta (CUDA Toolkit release notes, "Deprecated or Dropped Architectures")
    assert problems({"gpu_model": "Tesla V100-SXM2-32GB", "cuda_version": "13.0"}) == [
        "Tesla V100-SXM2-32GB (volta) is supported up to CUDA 12.x; CUDA is 13.0"
    ]
    assert problems({"gpu_model": "Tesla V100-SXM2-32GB", "cuda_version": "12.9.1"}) == []


def test_fabric_manager_must_be_the_drivers_version(problems):
    stack = {"driver_version": "550.163.01", "nvswitch": True}
    assert problems({**stack, "fabricmanager_version": "550.163.01"}) == []
    assert problems({**stack, "fabricmanager_version": "550.144.03"}) == [
        "Fabric Manager 550.144.03 must be the driver's version exactly; the driver is 550.163.01"
    ]
    assert problems({"driver_branch": 550, "fabricmanager_version": "535.104.05"}) == [
        "Fabric Manager 535.104.05 must be the driver's version exactly; the driver branch is 550"
    ]
    # No NVSwitch: Fabric Manager does not run
    assert problems({**stack, "nvswitch": False, "fabricmanager_version": "550.144.03"}) == []


@pytest.mark.parametrize(
    ("model", "nvlink", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 4, "hopper"),
        ("NVIDIA H200", None, "hopper"),
        ("NVIDIA GH200 480GB", None, "hopper"),
        ("NVIDIA B200", 5, "blackwell"),
        ("NVIDIA GB200", None, "blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", None, "blackwell"),
        ("NVIDIA A100-SXM4-40GB", 3, "ampere"),
        ("NVIDIA L40S", None, "ada"),
        ("Tesla T4", None, "turing"),
        ("Tesla V100-SXM2-32GB", 2, "volta"),
        # Unknown model: the NVLink generation decides
        ("Custom HGX board", 5, "blackwell"),
        ("Custom HGX board", "4", "hopper"),
        ("docker-bridge", None, None),
        (None, None, None),
    ],
)
def test_gpu_generation_from_the_model_else_nvlink(generation, model, nvlink, expected):
    assert generation(model, nvlink) == expected


def test_the_topology_examples_models_have_a_generation(generation):
    """Every GPU model in inventories/examples maps to a generation the branch rules know."""
    from tests.paths import EXAMPLES

    models = {
        node_type["gpu"]["model"]
        for path in EXAMPLES.glob("*.topology.yml")
        for node_type in yaml.safe_load(path.read_text())["node_types"].values()
        if node_type.get("gpu")
    }
    assert models
    assert {model: generation(model) for model in models} == {
        "NVIDIA H100 80GB HBM3": "hopper",
        "NVIDIA L40S": "ada",
        "NVIDIA A100-SXM4-40GB": "ampere",
        "NVIDIA GB200": "blackwell",
    }


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        ({"driver_version": "latest"}, "driver_version 'latest' is not a version (digits and dots)"),
        ({"driver_branch": "550.54"}, "driver_branch '550.54' is not a branch number (550)"),
        ({"kernel_modules": "closed"}, "kernel_modules 'closed' is not one of open, proprietary"),
        (
            {"gpu_generation": "kepler"},
            "gpu_generation 'kepler' is not one of volta, turing, ampere, ada, hopper, blackwell",
        ),
    ],
)
def test_values_that_are_not_versions_or_choices(problems, stack, expected):
    assert problems(stack) == [expected]


def test_package_versions_are_read_as_their_version(problems):
    assert problems({"cuda_version": "12.4", "driver_version": "550.54.14-1"}) == []
    assert problems({"cuda_version": "12.4", "driver_version": "550.54.13-0ubuntu1"}) != []


def test_not_a_dict_is_an_error(problems):
    with pytest.raises(AnsibleFilterError, match="expects a dict, got list"):
        problems(["12.4"])


def test_documentation_names_the_filter():
    assert yaml.safe_load(load_plugin(PLUGIN).DOCUMENTATION)["name"] == "clusterforge_gpu_stack_problems"
