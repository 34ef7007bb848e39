"""The summary of the SuperPOD example, and the `topology show` / `validate` commands."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml
from rich.console import Console

from clusterforge import cli
from clusterforge.cli import topology as topology_cli
from clusterforge.errors import EXIT_USAGE, UsageError
from clusterforge.topology import load
from clusterforge.topology.render.summary import summarise
from tests.paths import PROJECT

SUPERPOD = PROJECT / "inventories" / "examples" / "h100-superpod.topology.yml"


@pytest.fixture(scope="module")
def plan():
    return load(SUPERPOD)


@pytest.fixture(scope="module")
def summary(plan):
    return summarise(plan)


def parse(*argv: str) -> argparse.Namespace:
    parser = cli._Parser(prog="clusterforge")
    topology_cli.add_parser(parser.add_subparsers(dest="command", required=True, parser_class=cli._Parser))
    return parser.parse_args(list(argv))


def test_hosts_and_gpus(summary):
    assert summary["cluster"] == "superpod"
    assert summary["hosts"] == {
        "total": 132,
        "by_role": {"head": 2, "management": 1, "login": 2, "compute": 127},
        "by_node_type": {"dgx_h100": 127, "mgmt_server": 4, "ufm_appliance": 1},
    }
    assert summary["gpus"] == {"total": 1016, "by_model": {"NVIDIA H100 80GB HBM3": 1016}}
    assert summary["scalable_units"] == {"count": 4, "nodes_per_unit": 32, "reserved_slots": 1}


def test_compute_fabric_counts(summary):
    compute = summary["fabrics"]["compute"]
    assert compute["topology"] == "rail_optimized_fat_tree"
    assert compute["rails"] == 8
    assert compute["attached_hosts"] == 128  # 127 DGX and the UFM appliance
    assert compute["switches"] == {"leaf": 32, "spine": 16}
    # NVIDIA's table for 4 SUs: 1,020 compute-and-UFM cables (127 x 8 + 4), 1,024 spine-leaf.
    assert compute["links"] == {"node-leaf": 1020, "leaf-spine": 1024}
    # Rail leaves serve a whole unit, so node links leave the rack: AOCs; uplinks are optics.
    assert compute["cables"] == {"aoc": 1020, "fibre": 1024, "transceivers": 2048}


def test_service_fabrics_and_switch_total(summary):
    inband, oob = summary["fabrics"]["inband"], summary["fabrics"]["oob"]
    assert inband["links"]["node-leaf"] == 132 and oob["links"]["node-leaf"] == 132
    assert inband["cables"] == {"dac": 132, "fibre": 80, "transceivers": 160}
    assert oob["cables"] == {"cat6": 132 + 40, "transceivers": 0}
    per_fabric = sum(sum(f["switches"].values()) for f in summary["fabrics"].values())
    assert summary["switches"] == per_fabric == 48 + 7 + 6


def test_key_order_is_stable_and_json_round_trips(plan, summary):
    assert list(summary) == [
        "cluster",
        "domain",
        "hosts",
        "gpus",
        "scalable_units",
        "switches",
        "nvlink",
        "fabrics",
        "bom",
    ]
    assert summary["nvlink"] is None  # no rack-scale NVLink in the H100 SuperPOD
    assert list(summary["fabrics"]) == ["compute", "inband", "oob"]
    assert json.loads(json.dumps(summary)) == summary
    assert json.dumps(summarise(plan)) == json.dumps(summary)


def test_bom_totals_are_in_the_summary(summary):
    assert summary["bom"]["power_kw"] > 0
    # Servers and GPUs alone: 127 * 160k + 4 * 15k + 1 * 60k (UFM) + 1016 * 30k.
    assert summary["bom"]["price_usd"] > 127 * 160_000 + 4 * 15_000 + 60_000 + 1016 * 30_000


def test_show_json_prints_the_summary(capsys, summary):
    assert topology_cli.run(parse("topology", "show", "--json", str(SUPERPOD))) == 0
    assert json.loads(capsys.readouterr().out) == summary


def test_show_tables(capsys):
    assert topology_cli.run(parse("topology", "show", str(SUPERPOD))) == 0
    out = capsys.readouterr().out
    assert "compute" in out and "1016" in out and "leaf-spine: 1024" in out


def test_show_says_how_many_cores_each_spine_reaches(tmp_path, capsys, monkeypatch):
    # 16 SUs: 4 pods of 32 leaves; each spine's 32 uplinks reach 32 of the 64 cores.
    data = yaml.safe_load(SUPERPOD.read_text())
    data["scalable_units"]["count"] = 16
    data["scalable_units"]["reserved_slots"][0]["unit"] = 16
    data["addressing"].update(inband="10.128.0.0/20", oob="10.129.0.0/20")
    data["addressing"]["ipoib"] = [f"10.{140 + rail}.0.0/22" for rail in range(8)]
    path = tmp_path / "sixteen.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert summarise(load(path))["fabrics"]["compute"]["cores_per_spine"] == {"min": 32, "max": 32}
    monkeypatch.setattr(topology_cli, "console", Console(width=200))  # no wrapping inside table cells
    assert topology_cli.run(parse("topology", "show", str(path))) == 0
    assert "cores per spine: 32" in capsys.readouterr().out


def test_validate_ok(capsys):
    assert topology_cli.run(parse("topology", "validate", str(SUPERPOD))) == 0
    assert capsys.readouterr().out.strip() == "ok: 132 hosts, 1016 GPUs, 61 switches"


@pytest.mark.parametrize("command", [("validate",), ("show", "--json")])
def test_a_ratio_built_other_than_asked_is_a_warning_with_its_field(tmp_path, capsys, command):
    data = yaml.safe_load(SUPERPOD.read_text())
    data["fabrics"]["inband"]["oversubscription"] = 2.5  # 64 ports: 46 down, 18 up at best
    path = tmp_path / "ratio.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "oversubscription: 2.5" in text)
    assert topology_cli.run(parse("topology", *command, str(path))) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith(f"warning: {path}:{line}: fabrics.inband.oversubscription: 2.5:1 asked")
    assert "built 46 down and 18 up, 2.56:1" in captured.err
    assert "warning" not in captured.out


def test_validate_turns_a_topology_error_into_a_usage_error(tmp_path):
    data = yaml.safe_load(SUPERPOD.read_text())
    data["node_types"]["dgx_h100"]["gpu"]["count"] = 99
    bad = tmp_path / "bad.topology.yml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(UsageError) as raised:
        topology_cli.run(parse("topology", "validate", str(bad)))
    assert raised.value.exit_code == EXIT_USAGE
    message = str(raised.value)
    assert "bad.topology.yml:" in message and "node_types.dgx_h100.gpu.count" in message


def test_validate_catches_what_only_rendering_shows(tmp_path):
    data = yaml.safe_load(SUPERPOD.read_text())
    data["fabrics"]["compute"]["cable_price_usd"] = {"leaf-spin": 100}
    bad = tmp_path / "typo.topology.yml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(UsageError, match=r"cable_price_usd"):
        topology_cli.run(parse("topology", "validate", str(bad)))


def test_missing_subcommand_uses_the_usage_exit_code():
    with pytest.raises(SystemExit) as exit_info:
        parse("topology")
    assert exit_info.value.code == EXIT_USAGE


def _odd_dragonfly(tmp_path):
    """5 groups of 3 routers with 3 global ports each: 45 ports, so 22 links and one port free."""
    data = yaml.safe_load(SUPERPOD.read_text())
    data["fabrics"]["compute"] = {
        "purpose": "compute",
        "link_layer": "infiniband",
        "topology": "dragonfly",
        # 127 nodes of 8 HCAs: 1,016 terminals of the 5 * 3 * 68 = 1,020
        "dragonfly": {"terminals_per_router": 68, "routers_per_group": 3, "global_links_per_router": 3, "groups": 5},
        "switch": {"model": "r", "radix": 68 + 2 + 3, "port_speed_gbps": 400},
    }
    del data["addressing"]["ipoib"]  # IPoIB is for a rail-optimised InfiniBand fabric
    path = tmp_path / "odd.topology.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_show_reports_dragonfly_global_ports(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(topology_cli.console, "width", 200)  # wide enough that no cell wraps
    path = _odd_dragonfly(tmp_path)
    assert summarise(load(path))["fabrics"]["compute"]["global_ports"] == {"used": 44, "available": 45}
    assert "global_ports" not in summarise(load(SUPERPOD))["fabrics"]["compute"]
    assert topology_cli.run(parse("topology", "show", str(path))) == 0
    assert "global ports: 44 of 45 used" in capsys.readouterr().out


@pytest.mark.parametrize("command", [("validate",), ("show", "--json")], ids=["validate", "show"])
def test_a_free_global_port_is_a_warning_on_stderr(tmp_path, capsys, command):
    path = _odd_dragonfly(tmp_path)
    assert topology_cli.run(parse("topology", *command, str(path))) == 0
    captured = capsys.readouterr()
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip() == "dragonfly:")
    assert captured.err.strip() == (
        f"warning: {path}:{line}: fabrics.compute.dragonfly: global port 73 of router compute-g05-r03 stays free: "
        "g*a*h = 5*3*3 = 45 global ports is odd and a link takes two"
    )
    assert "warning" not in captured.out
