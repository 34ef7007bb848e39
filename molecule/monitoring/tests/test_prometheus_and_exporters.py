"""The monitoring stage on a head and a GPU node (molecule/monitoring/molecule.yml), read through the
packages' holds and Prometheus's and Alertmanager's HTTP APIs on the head: both exporters scraped with
the topology's labels, the node's expected HCAs (its inputs) exported, the rules loaded, the missing
HCAs alerting, and Alertmanager running the role's configuration."""

from __future__ import annotations

import json

import pytest
import yaml

API = "http://localhost:9090/api/v1"
HEAD, NODE = "monitoring-head", "monitoring-node"


def _get(host, url: str):
    fetch = (
        "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"
    )
    return host.check_output(f"python3 -c '{fetch}' '{url}'")


def _api(host, path: str):
    return json.loads(_get(host, f"{API}/{path}"))["data"]


@pytest.fixture
def head(node):
    return node(HEAD)[0]


def test_the_node_s_exporter_is_held_and_dcgm_exporter_skipped_without_gpus(node):
    host, _ = node(NODE)
    held = host.check_output("apt-mark showhold").splitlines()
    assert "prometheus-node-exporter" in held
    assert "prometheus" not in held
    assert not host.file("/etc/systemd/system/dcgm-exporter.service").exists


def test_prometheus_promtool_alertmanager_and_the_exporter_are_held_on_the_head(head):
    held = head.check_output("apt-mark showhold").splitlines()
    assert {"prometheus", "promtool", "prometheus-alertmanager", "prometheus-node-exporter"} <= set(held)


# Only series with a node label: the package's first start scraped localhost:9100 with Debian's own
# configuration, and that series stays visible for Prometheus's 5 minute look-back after the restart.
def test_each_exporter_is_up_with_the_topology_s_labels(head, node, until):
    _, node_inputs = node(NODE)
    query = "query?query=" + "up%7Bjob%3D%22node%22%2Cnode%3D~%22.%2B%22%7D%20%3D%3D%201"
    result = until(lambda: _api(head, query)["result"], lambda up: len(up) == 2)
    labels = {series["metric"]["node"]: series["metric"] for series in result}
    assert labels[HEAD]["role"] == "head"
    assert labels[HEAD]["node_type"] == node(HEAD)[1]["clusterforge_node_type"]
    assert "unit" not in labels[HEAD]
    assert labels[NODE]["role"] == "compute"
    assert labels[NODE]["node_type"] == node_inputs["clusterforge_node_type"]
    assert labels[NODE]["unit"] == "1"
    assert labels[NODE]["leaf"] == "compute_svc_leaf1"
    assert labels[NODE]["instance"] == f"{NODE}:9100"


def test_prometheus_scrapes_the_two_exporters_itself_and_alertmanager_all_up(head, until):
    # A target's health is "unknown" until its first scrape (every 15 s, later on a loaded machine).
    active = until(
        lambda: _api(head, "targets?state=active")["activeTargets"],
        lambda targets: len(targets) == 4 and all(t["health"] == "up" for t in targets),
    )
    assert sorted(t["labels"]["instance"] for t in active if t["scrapePool"] == "node") == [
        f"{HEAD}:9100",
        f"{NODE}:9100",
    ]
    assert sorted(t["scrapePool"] for t in active) == ["alertmanager", "node", "node", "prometheus"]
    assert [t["health"] for t in active] == ["up"] * 4


def test_the_node_s_expected_hcas_are_exported_with_their_rails_and_rates(head, node):
    _, inputs = node(NODE)
    series = _api(head, "query?query=clusterforge_expected_ib_rate_gbps")["result"]
    assert {s["metric"]["node"] for s in series} == {NODE}
    rates = {s["metric"]["device"]: s["value"][-1] for s in series}
    assert rates == {device: str(rate) for device, rate in inputs["clusterforge_expected_hca_rates"].items()}
    assert sorted(s["metric"]["rail"] for s in series) == [
        str(n + 1) for n in range(len(inputs["clusterforge_expected_rail_hcas"]))
    ]


def test_the_cluster_s_alerts_and_recording_rules_are_loaded_and_healthy(head, until):
    # A rule's health is "unknown" until its group's first evaluation.
    rules = until(
        lambda: [rule for group in _api(head, "rules")["groups"] for rule in group["rules"]],
        lambda found: found and {r["health"] for r in found} == {"ok"},
    )
    assert len([r for r in rules if r["type"] == "alerting"]) == 12
    assert len([r for r in rules if r["type"] == "recording"]) == 2
    assert {r["health"] for r in rules} == {"ok"}


# The node's expected HCAs do not exist here, so the rule sees them missing.
def test_the_missing_hcas_raise_infiniband_port_down(head, node, until):
    expected = sorted(node(NODE)[1]["clusterforge_expected_rail_hcas"])

    def down():
        alerts = _api(head, "alerts")["alerts"]
        return sorted(a["labels"]["device"] for a in alerts if a["labels"]["alertname"] == "InfinibandPortDown")

    assert until(down, lambda devices: devices == expected) == expected


def test_the_retention_is_the_role_s_default(head):
    assert _api(head, "status/flags")["storage.tsdb.retention.time"] == "30d"


def test_alertmanager_is_ready_and_prometheus_sends_it_alerts(head):
    _get(head, "http://localhost:9093/-/ready")
    assert len(_api(head, "alertmanagers")["activeAlertmanagers"]) == 1


# The role's route and inhibit rule, not the package's sample configuration.
def test_alertmanager_runs_the_role_s_configuration(head):
    running = yaml.safe_load(json.loads(_get(head, "http://localhost:9093/api/v2/status"))["config"]["original"])
    assert running["route"]["receiver"] == "default"
    assert running["route"]["group_by"] == ["alertname", "node"]
    assert "NodeExporterDown" in json.dumps(running["inhibit_rules"])
    assert [r["name"] for r in running["receivers"]] == ["default"]
