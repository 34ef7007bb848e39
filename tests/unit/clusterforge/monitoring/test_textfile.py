"""The validation's verdicts as node_exporter textfile metrics (clusterforge.monitoring.textfile),
parsed back with prometheus_client's own parser of the text format."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from clusterforge.monitoring import textfile
from tests.paths import filters

render_filter = filters("plugins/filter/monitoring.py")["clusterforge_validation_textfile"]

RECORDS = [
    {
        "module": "gpu_check",
        "status": "fail",
        "checks": [
            {"check": "gpu_count", "status": "fail", "measured": 7, "expected": 8, "message": "7 of 8 GPUs"},
            {
                "check": "gpu_model",
                "status": "pass",
                "measured": "NVIDIA H100",
                "expected": "NVIDIA H100",
                "message": "",
            },
            {"check": "nvlink", "status": "skipped", "measured": None, "expected": None, "message": "no hardware"},
        ],
    },
    {
        "module": "nccl_check",
        "status": "pass",
        "scope": "node",
        "checks": [
            {
                "check": "busbw",
                "status": "warn",
                "measured": {"busbw_gbps": 350.5, "sizes": [1, 2.5]},
                "expected": {"busbw_gbps": 360},
                "message": 'slow "a bit"',
            }
        ],
    },
    {"module": "ib_check", "status": "fail", "error": "the module returned no verdict"},
]


LIVE = ("origin", "live")
REPLAYED = ("origin", "replayed from recorded outputs")


def _samples(text: str) -> dict:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_each_check_is_one_ok_series_and_each_number_it_measured_one_more():
    samples = _samples(render_filter(RECORDS, "fail", 1796326215.5))
    ok = {labels: value for (name, labels), value in samples.items() if name == "clusterforge_validation_check_ok"}
    assert ok == {
        (("check", "gpu_count"), ("module", "gpu_check"), LIVE, ("run", "0"), ("status", "fail")): 0,
        (("check", "gpu_model"), ("module", "gpu_check"), LIVE, ("run", "0"), ("status", "pass")): 1,
        (("check", "nvlink"), ("module", "gpu_check"), LIVE, ("run", "0"), ("status", "skipped")): 1,
        (("check", "busbw"), ("module", "nccl_check"), LIVE, ("run", "1"), ("status", "warn")): 1,
        # A module that crashed before judging anything is a failed check too.
        (("check", "run"), ("module", "ib_check"), LIVE, ("run", "2"), ("status", "fail")): 0,
    }
    measured = {
        dict(labels)["field"]: value for (name, labels), value in samples.items() if name.endswith("_check_measured")
    }
    assert measured == {"value": 7, "busbw_gbps": 350.5, "sizes.0": 1, "sizes.1": 2.5}
    assert samples[("clusterforge_validation_host_ok", (LIVE,))] == 0
    assert samples[("clusterforge_validation_last_run_timestamp_seconds", ())] == 1796326215.5


def test_a_passing_host_is_ok_and_an_empty_run_still_says_when_it_ran():
    text = textfile.render([], "skipped", 1796326215)
    samples = _samples(text)
    assert samples == {
        ("clusterforge_validation_host_ok", (LIVE,)): 1,
        ("clusterforge_validation_last_run_timestamp_seconds", ()): 1796326215,
    }
    assert text.endswith("\n")


def test_label_values_are_escaped():
    records = [{"module": "m", "checks": [{"check": 'a"b\\c\nd', "status": "pass", "measured": float("inf")}]}]
    samples = _samples(textfile.render(records, "pass", 0))
    assert [dict(labels)["check"] for (name, labels) in samples if name.endswith("_check_ok")] == ['a"b\\c\nd']
    # inf is not a measurement a check makes: left out rather than exported.
    assert not [name for (name, _) in samples if name.endswith("_check_measured")]


def test_verdicts_judged_from_recorded_outputs_say_so_on_every_series_of_the_check_and_the_host():
    """A module in replay mode ("source": "replay" or "replay:<reader>") measured nothing on this
    node: its series, and the host's, carry origin="replayed from recorded outputs"."""
    records = [
        {**RECORDS[0], "source": "replay"},
        {**RECORDS[1], "source": "live"},
        {"module": "ib_check", "status": "pass", "source": "replay:sysfs", "checks": [RECORDS[0]["checks"][1]]},
    ]
    samples = _samples(render_filter(records, "fail", 0))
    origin = {
        (name, dict(labels)["module"], dict(labels)["check"], dict(labels).get("field")): dict(labels)["origin"]
        for (name, labels), _ in samples.items()
        if "check" in dict(labels)
    }
    replayed = {key for key, value in origin.items() if value == REPLAYED[1]}
    assert replayed == {
        ("clusterforge_validation_check_ok", "gpu_check", "gpu_count", None),
        ("clusterforge_validation_check_ok", "gpu_check", "gpu_model", None),
        ("clusterforge_validation_check_ok", "gpu_check", "nvlink", None),
        ("clusterforge_validation_check_measured", "gpu_check", "gpu_count", "value"),
        ("clusterforge_validation_check_ok", "ib_check", "gpu_model", None),
    }
    assert {value for key, value in origin.items() if key[1] == "nccl_check"} == {"live"}
    assert ("clusterforge_validation_host_ok", (REPLAYED,)) in samples
    # A host whose every run was live says so.
    assert ("clusterforge_validation_host_ok", (LIVE,)) in _samples(render_filter([records[1]], "pass", 0))
