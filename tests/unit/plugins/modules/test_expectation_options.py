"""The check modules' expectation options agree with the key tables of the judges they call: each
option that gives a key (a module's EXPECTATION_OPTIONS) has one of that key's types, and the
expectation a module builds holds only keys of those tables, with values of their types."""

from __future__ import annotations

import pytest
from ansible.module_utils import (
    acs_judge,
    cabling_judge,
    gpu_judge,
    gpudirect_host,
    ib_judge,
    mlxconfig_judge,
    nccl_judge,
    nvidia_fabric,
    training_judge,
)
from ansible.module_utils.expectation_keys import validate

from .conftest import load_module
from .test_module_docs import CHECK_MODULES, argument_spec

TABLES = {
    "gpu_check": {**gpu_judge.QUERY_KEYS, **gpu_judge.TOPOLOGY_KEYS},
    "ib_check": ib_judge.SYSFS_PORT_KEYS,
    "ib_bandwidth_check": ib_judge.PERFTEST_KEYS,
    "nccl_check": nccl_judge.NCCL_KEYS,
    "cabling_check": cabling_judge.CABLING_KEYS,
    "gpudirect_check": {
        **acs_judge.ACS_KEYS,
        **mlxconfig_judge.MLXCONFIG_KEYS,
        **gpudirect_host.PEERMEM_KEYS,
        **gpudirect_host.IOMMU_KEYS,
    },
    "dcgm_check": gpu_judge.DCGMI_KEYS,
    "training_check": training_judge.TRAINING_KEYS,
    "fabric_check": nvidia_fabric.FABRIC_KEYS,
}
# A value of each Ansible option type, for a module's every option set at once.
SAMPLES = {"int": 2, "float": 1.5, "bool": True, "str": "x", "path": "/x", "list": ["mlx5_0"], "dict": {"mlx5_0": 400}}


def test_every_check_module_has_its_table():
    assert sorted(TABLES) == CHECK_MODULES


@pytest.mark.parametrize("name", CHECK_MODULES)
def test_expectation_options_have_the_keys_types(name: str):
    spec = argument_spec(name)
    options = load_module(name).EXPECTATION_OPTIONS
    assert options
    for option, key in options.items():
        assert key in TABLES[name], f"{name}: option {option} gives {key}, which its judge does not read"
        assert spec[option].get("type", "str") in TABLES[name][key].types, f"{name}: {option} is not {key}'s type"


@pytest.mark.parametrize(
    "name", ["gpu_check", "ib_check", "ib_bandwidth_check", "nccl_check", "gpudirect_check", "dcgm_check"]
)
def test_a_modules_expectation_holds_only_its_judges_keys(name: str):
    module = load_module(name)
    keys = {option: TABLES[name].get(key) for option, key in module.EXPECTATION_OPTIONS.items()}
    params = {
        option: _sample(settings.get("type", "str"), keys.get(option))
        for option, settings in argument_spec(name).items()
    }
    expected = module.expectation(params)
    assert set(expected) >= set(module.EXPECTATION_OPTIONS.values())
    validate(name, TABLES[name], expected)


def _sample(type_name: str, key) -> object:
    """A value of the option's type inside its key's range (nvlink_generation 3 to 5, a floor <= 1)."""
    if key is not None and key.choices:
        return key.choices[0]
    value = SAMPLES[type_name]
    if key is not None and key.maximum is not None and isinstance(value, (int, float)):
        return min(value, key.maximum)
    return value
