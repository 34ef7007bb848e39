"""The monitoring roles' templates rendered with Ansible's own templating: dcgm-exporter's counters
CSV and unit (never run here: no GPU, no registry with the image), the node exporter's flags and
the topology's expected HCA rates as textfile series, Prometheus's configuration (checked by the
real promtool) and its flags."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.paths import PROJECT
from tests.unit.roles.harness import render
from tests.unit.roles.monitoring.tools import run

ROLES = PROJECT / "roles"


def _load(path: Path):
    return yaml.safe_load(path.read_text()) or {}


def _render(role: str, template: str, **overrides) -> str:
    variables = {**_load(ROLES / role / "defaults" / "main.yml"), **_load(ROLES / role / "vars" / "main.yml")}
    variables.update(overrides)
    return render((ROLES / role / "templates" / template).read_text(), ansible_managed="managed", **variables)


def test_the_counters_csv_is_dcgm_exporters_format_with_every_field():
    text = _render("dcgm_exporter", "counters.csv.j2")
    rows = [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if row and not row[0].startswith("#")]
    metrics = _load(ROLES / "dcgm_exporter" / "defaults" / "main.yml")["dcgm_exporter_metrics"]
    assert rows == [[m["name"], m["type"], m["help"]] for m in metrics]
    assert all(len(row) == 3 and row[1] in ("gauge", "counter") for row in rows)


def test_the_unit_runs_the_pinned_image_with_the_counters_through_the_engine():
    unit = _render("dcgm_exporter", "dcgm-exporter.service.j2", dcgm_exporter_engine="podman")
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert exec_start.startswith("ExecStart=/usr/bin/podman run --rm --name dcgm-exporter --gpus all")
    assert "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04 -f /etc/dcgm-exporter/counters.csv" in exec_start
    assert "-p 9400:9400" in exec_start and "-c 30000" in exec_start
    assert "Requires=podman.service" in unit


def test_the_node_exporter_flags_enable_the_textfile_directory():
    text = _render("node_exporter", "default.j2", node_exporter_extra_args=["--collector.systemd"])
    assert text.splitlines()[-1] == (
        'ARGS="--web.listen-address=:9100 --collector.textfile.directory=/var/lib/prometheus/node-exporter'
        ' --collector.systemd"'
    )


def test_the_expected_hca_rates_become_one_series_per_hca_with_its_rail():
    text = _render(
        "node_exporter",
        "expected.prom.j2",
        node_exporter_expected_hca_rates={"mlx5_0": 400, "mlx5_3": 400, "mlx5_9": 200},
        node_exporter_expected_link_layers={"mlx5_0": "infiniband", "mlx5_3": "infiniband", "mlx5_9": "ethernet"},
        node_exporter_expected_rail_hcas=["mlx5_0", "mlx5_3"],
    )
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert {(s.labels["device"], s.labels["rail"], s.labels["link_layer"], s.value) for s in samples} == {
        ("mlx5_0", "1", "infiniband", 400),
        ("mlx5_3", "2", "infiniband", 400),
        ("mlx5_9", "", "ethernet", 200),
    }


def test_a_node_without_hcas_gets_a_file_without_series():
    text = _render("node_exporter", "expected.prom.j2", node_exporter_expected_hca_rates={})
    assert [s for family in text_string_to_metric_families(text) for s in family.samples] == []


def _prometheus_config(**overrides) -> str:
    targets = {"node": [], "dcgm": []}
    return _render(
        "prometheus",
        "prometheus.yml.j2",
        inventory_hostname="head01",
        clusterforge_cluster="lab",
        __prometheus_targets=targets,
        **overrides,
    )


def test_the_prometheus_configuration_passes_promtool(tools, tmp_path):
    path = tmp_path / "prometheus.yml"
    path.write_text(_prometheus_config())
    done = run(tools["promtool"], "check", "config", "--syntax-only", path)
    assert done.returncode == 0, done.stdout + done.stderr
    config = yaml.safe_load(path.read_text())
    assert [job["job_name"] for job in config["scrape_configs"]] == ["prometheus", "alertmanager", "node", "dcgm"]
    assert config["scrape_configs"][2]["file_sd_configs"] == [{"files": ["/etc/prometheus/file_sd/node.json"]}]
    assert config["global"]["external_labels"] == {"cluster": "lab"}
    assert config["rule_files"] == ["/etc/prometheus/rules/*.yml"]


def test_promtool_refuses_a_bad_interval_in_the_configuration(tools, tmp_path):
    path = tmp_path / "prometheus.yml"
    path.write_text(_prometheus_config(prometheus_scrape_interval="15 seconds"))
    done = run(tools["promtool"], "check", "config", "--syntax-only", path)
    assert done.returncode != 0


def test_the_prometheus_flags_set_the_retention():
    text = _render("prometheus", "default.j2", prometheus_retention_size="50GB")
    assert text.splitlines()[-1] == (
        'ARGS="--config.file=/etc/prometheus/prometheus.yml --web.listen-address=0.0.0.0:9090'
        ' --storage.tsdb.retention.time=30d --storage.tsdb.retention.size=50GB"'
    )
