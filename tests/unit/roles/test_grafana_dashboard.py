"""The Grafana dashboard for GPU and fabric health (roles/prometheus/files/grafana): valid against
the dashboard schema there (written from Grafana's documented JSON model, not Grafana's own), laid
out on Grafana's 24-column grid, and every query accepted by the real promtool. No Grafana ran:
none is installable here."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.monitoring.tools import run as _run
from tests.unit.roles.test_monitoring_rules import render_rules

GRAFANA = PROJECT / "roles" / "prometheus" / "files" / "grafana"
DASHBOARD = json.loads((GRAFANA / "clusterforge-gpu-fabric.json").read_text())
SCHEMA = json.loads((GRAFANA / "dashboard.schema.json").read_text())


def _queries() -> list[str]:
    return [target["expr"] for panel in DASHBOARD["panels"] for target in panel.get("targets", [])]


def test_the_dashboard_is_valid_against_the_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(DASHBOARD)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d["panels"][1].pop("targets"), "targets"),
        (lambda d: d["panels"][1]["gridPos"].update(w=25), "25"),
        (lambda d: d["panels"][1].update(type="graph"), "graph"),
        (lambda d: d.update(schemaVersion=16), "16"),
    ],
)
def test_the_schema_refuses_a_broken_dashboard(change, where):
    broken = json.loads(json.dumps(DASHBOARD))
    change(broken)
    with pytest.raises(jsonschema.ValidationError, match=where):
        jsonschema.Draft202012Validator(SCHEMA).validate(broken)


def test_panels_have_unique_ids_and_fit_the_grid_without_overlapping():
    ids = [panel["id"] for panel in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for panel in DASHBOARD["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not mine & cells, f"{panel['title']} overlaps another panel"
        cells |= mine


def test_the_dashboard_shows_what_every_alert_watches():
    queries = "\n".join(_queries())
    for series in re.findall(r"\b(?:DCGM_FI_[A-Z_]+|node_infiniband_[a-z_]+|clusterforge_[a-z_]+)\b", render_rules()):
        if series.endswith("_total") or series == "clusterforge_expected_ib_rate_gbps":
            continue  # counters are shown through the recording rule; the expected rate through the rate panel
        assert series in queries, series
    assert "clusterforge_expected_ib_rate_gbps" in queries


def test_every_query_is_promql_that_promtool_accepts(tools, tmp_path):
    # Grafana's variables become what they stand for: a regex of node names.
    rules = [
        {"record": f"clusterforge:dashboard_query_{index}", "expr": expr.replace("$node", ".+")}
        for index, expr in enumerate(_queries())
    ]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = _run(tools["promtool"], "check", "rules", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout
