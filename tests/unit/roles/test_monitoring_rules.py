"""The prometheus role's alert rules and the alertmanager role's configuration, checked by the real
promtool and amtool (the versions the roles pin on Debian 13; tests/tools/monitoring-tools.sh
unpacks them from Debian's packages). Without them these tests fail: they never skip."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render
from tests.unit.roles.monitoring.tools import run as _run

PROMETHEUS = PROJECT / "roles" / "prometheus"
ALERTMANAGER = PROJECT / "roles" / "alertmanager"
RULES_TEST = PROJECT / "tests" / "unit" / "roles" / "monitoring" / "rules_test.yml"


def _load(path: Path):
    return yaml.safe_load(path.read_text())


def render_rules(**overrides) -> str:
    defaults = _load(PROMETHEUS / "defaults" / "main.yml")
    variables = {name: value for name, value in defaults.items() if name.startswith("prometheus_alert_")}
    variables.update(overrides)
    template = (PROMETHEUS / "templates" / "clusterforge.rules.yml.j2").read_text()
    return render(template, ansible_managed="rendered by the test", **variables)


def _rules_dir(tmp_path: Path, **overrides) -> Path:
    (tmp_path / "clusterforge.yml").write_text(render_rules(**overrides))
    shutil.copy(RULES_TEST, tmp_path / "rules_test.yml")
    return tmp_path


def _alerts() -> list[str]:
    rules = yaml.safe_load(render_rules())
    return [rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule]


def test_rules_pass_promtool_check(tools, tmp_path):
    rules = _rules_dir(tmp_path) / "clusterforge.yml"
    done = _run(tools["promtool"], "check", "rules", rules)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 14 rules found" in done.stdout


def test_each_alert_fires_past_its_threshold_and_duration_only(tools, tmp_path):
    done = _run(tools["promtool"], "test", "rules", _rules_dir(tmp_path) / "rules_test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_firing_and_a_silent_case():
    cases = [case for test in _load(RULES_TEST)["tests"] for case in test["alert_rule_test"]]
    for alert in _alerts():
        mine = [case for case in cases if case["alertname"] == alert]
        assert any(case["exp_alerts"] for case in mine), f"{alert}: no case where it fires"
        assert any(not case["exp_alerts"] for case in mine), f"{alert}: no case where it stays silent"
    assert len(_alerts()) == 12


@pytest.mark.parametrize(
    ("overrides", "alert"),
    [
        ({"prometheus_alert_gpu_temp_high_celsius": 86}, "GpuTemperatureHigh"),  # 86 C no longer crosses it
        ({"prometheus_alert_gpu_util_low_for": "2h"}, "GpuUtilizationLow"),  # 61 minutes no longer last long enough
        ({"prometheus_alert_filesystem_free_percent": 11}, "FilesystemNearlyFull"),  # 10% free now alerts too
    ],
)
def test_the_variables_reach_the_rules_and_the_tests_can_fail(tools, tmp_path, overrides, alert):
    done = _run(tools["promtool"], "test", "rules", _rules_dir(tmp_path, **overrides) / "rules_test.yml")
    assert done.returncode != 0
    assert f"alertname: {alert}" in done.stdout + done.stderr


def test_the_rules_read_only_dcgm_series_the_exporter_exports():
    used = set(re.findall(r"DCGM_FI_[A-Z0-9_]+", render_rules()))
    role = PROJECT / "roles" / "dcgm_exporter"
    exported = {metric["name"] for metric in _load(role / "defaults" / "main.yml")["dcgm_exporter_metrics"]}
    required = set(_load(role / "vars" / "main.yml")["__dcgm_exporter_required_metrics"])
    assert used == required
    assert used <= exported


def render_alertmanager(**overrides) -> str:
    variables = {**_load(ALERTMANAGER / "defaults" / "main.yml"), **_load(ALERTMANAGER / "vars" / "main.yml")}
    variables.update(overrides)
    template = (ALERTMANAGER / "templates" / "alertmanager.yml.j2").read_text()
    return render(template, ansible_managed="rendered by the test", **variables)


def test_the_default_alertmanager_configuration_passes_amtool(tools, tmp_path):
    config = tmp_path / "alertmanager.yml"
    config.write_text(render_alertmanager())
    done = _run(tools["amtool"], "check-config", config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    assert yaml.safe_load(config.read_text())["route"]["receiver"] == "default"


def test_amtool_refuses_a_route_to_a_missing_receiver(tools, tmp_path):
    config = tmp_path / "alertmanager.yml"
    config.write_text(render_alertmanager(alertmanager_route={"receiver": "pager"}))
    done = _run(tools["amtool"], "check-config", config)
    assert done.returncode != 0
    assert "pager" in done.stdout + done.stderr


def test_webhook_receivers_render_and_pass_amtool(tools, tmp_path):
    receivers = [
        {"name": "default"},
        {"name": "oncall", "webhook_configs": [{"url": "http://alerts.example.test/hook", "send_resolved": True}]},
    ]
    route = {"receiver": "default", "routes": [{"receiver": "oncall", "matchers": ['severity = "critical"']}]}
    config = tmp_path / "alertmanager.yml"
    config.write_text(render_alertmanager(alertmanager_receivers=receivers, alertmanager_route=route))
    done = _run(tools["amtool"], "check-config", config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 receivers" in done.stdout
