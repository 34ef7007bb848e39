"""The validation playbook's filters: clusterforge_validation_busbw_floor (the acceptance job's
all-reduce is held to the floor the multi-node NCCL all_reduce runs were held to, read from their
records) and clusterforge_validation_one_nvlink_domain (a run inside one NVLink domain)."""

from __future__ import annotations

import importlib.util

from tests.paths import PROJECT

_spec = importlib.util.spec_from_file_location("validation_filters", PROJECT / "plugins" / "filter" / "validation.py")
validation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(validation)


def _run(label: str, floor, status: str = "pass") -> dict:
    return {"module": "nccl_check", "label": label, "status": status, "busbw": {"measured": 300.0, "floor": floor}}


def test_the_lowest_all_reduce_floor_of_the_runs_is_the_job_s_floor():
    runs = [_run("all_reduce:a+b", 310.0), _run("all_reduce:c+d", 290.5, "fail"), _run("all_gather:a+b", 100.0)]
    assert validation.busbw_floor(runs) == 290.5


def test_without_an_all_reduce_run_with_a_floor_there_is_none():
    assert validation.busbw_floor([]) is None
    assert validation.busbw_floor(None) is None
    assert validation.busbw_floor([_run("all_gather:a+b", 100.0), _run("all_reduce:a+b", None)]) is None
    assert validation.busbw_floor([{"module": "nccl_check", "label": "all_reduce:a+b", "status": "skipped"}]) is None


def test_the_filter_is_registered_under_its_documented_name():
    assert validation.FilterModule().filters()["clusterforge_validation_busbw_floor"] is validation.busbw_floor


def test_a_run_is_inside_one_nvlink_domain_only_when_every_host_is_a_tray_of_it():
    hostvars = {
        "gb001": {"clusterforge_nvlink_domain": "nvl01"},
        "gb002": {"clusterforge_nvlink_domain": "nvl01"},
        "gb019": {"clusterforge_nvlink_domain": "nvl02"},
        "head01": {},
    }
    assert validation.one_nvlink_domain(["gb001", "gb002"], hostvars) is True
    assert validation.one_nvlink_domain(["gb001", "gb019"], hostvars) is False  # across racks: the rails
    assert validation.one_nvlink_domain(["gb001", "head01"], hostvars) is False
    assert validation.one_nvlink_domain(["head01"], hostvars) is False
    assert validation.one_nvlink_domain([], hostvars) is False
