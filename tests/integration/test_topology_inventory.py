"""The topology inventory plugin as Ansible runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterforge.topology import load
from clusterforge.topology.render import static_inventory
from tests.paths import PROJECT

BIN = Path(sys.executable).parent
EXAMPLES = PROJECT / "inventories" / "examples"
GOLDEN = PROJECT / "tests" / "golden"


def ansible(tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, cwd=PROJECT, check=False)
    if check and done.returncode != 0:
        pytest.fail(f"{tool} {' '.join(args)} -> rc {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def _normalised_list(source: Path) -> dict:
    inventory = json.loads(ansible("ansible-inventory", "-i", str(source), "--list").stdout)
    for hostvars in inventory["_meta"]["hostvars"].values():
        path = hostvars["clusterforge_topology_file"]
        # The plugin marks the path plain data, never a template (the static YAML has no mark).
        if source.name.endswith(".topology.yml"):
            path = path["__ansible_unsafe"]
        hostvars["clusterforge_topology_file"] = Path(path).name
    return inventory


def test_superpod_inventory_matches_the_golden_file():
    """The golden file is fixed, reviewed by hand and held to hand-computed counts
    (test_superpod_reference.py); this test never writes it (tests/golden/README.md)."""
    golden = GOLDEN / "h100-superpod.inventory.json"
    inventory = _normalised_list(EXAMPLES / "h100-superpod.topology.yml")
    assert inventory == json.loads(golden.read_text()), "the plugin's inventory differs from tests/golden/"


def test_superpod_groups_and_host_variables():
    inventory = _normalised_list(EXAMPLES / "h100-superpod.topology.yml")
    assert len(inventory["compute"]["hosts"]) == 127
    assert inventory["su4"]["hosts"][-1] == "dgx127"
    assert inventory["type_dgx_h100"]["children"] == ["compute"]
    dgx = inventory["_meta"]["hostvars"]["dgx127"]
    assert dgx["clusterforge_unit"] == 4
    assert dgx["clusterforge_expected_gpus"] == 8
    assert set(dgx["clusterforge_expected_hca_rates"].values()) == {400}
    assert len(dgx["clusterforge_expected_hca_rates"]) == 8


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.topology.yml")), ids=lambda p: p.name)
def test_site_syntax_check_on_every_example(example):
    done = ansible("ansible-playbook", "-i", str(example), "site.yml", "--syntax-check")
    assert "playbook: site.yml" in done.stdout


def test_constructed_options_are_applied(tmp_path):
    source = (EXAMPLES / "h100-superpod.topology.yml").read_text()
    extended = tmp_path / "constructed.topology.yml"
    extended.write_text(
        source
        + "keyed_groups:\n  - key: clusterforge_unit | string\n    prefix: unit\n"
        + "compose:\n  bmc_address: clusterforge_oob_address\n"
        + "groups:\n  first_unit: clusterforge_unit == 1\n"
    )
    inventory = json.loads(ansible("ansible-inventory", "-i", str(extended), "--list").stdout)
    assert len(inventory["unit_2"]["hosts"]) == 32
    assert len(inventory["first_unit"]["hosts"]) == 32
    # dgx001 is host 6 (2 head, the UFM, 2 login before it): offset 10 + 5.
    assert inventory["_meta"]["hostvars"]["dgx001"]["bmc_address"] == "10.131.0.15"


def test_constructed_options_see_node_type_variables_with_strict(tmp_path):
    # Node-type variables live on type_<node type>, which holds role groups, not hosts. all's
    # clusterforge_expected_gpus loses to the deeper type group's, as in a play.
    source = (EXAMPLES / "h100-superpod.topology.yml").read_text()
    extended = tmp_path / "strict.topology.yml"
    extended.write_text(
        source
        + "ansible:\n  vars:\n    clusterforge_expected_gpus: 99\n"
        + "strict: true\n"
        + "compose:\n  ngpu: clusterforge_expected_gpus\n  rails: clusterforge_expected_rails\n"
        + "groups:\n  nvswitch_nodes: clusterforge_expected_nvswitch\n"
        + "keyed_groups:\n  - key: clusterforge_node_type\n    prefix: kind\n"
    )
    inventory = json.loads(ansible("ansible-inventory", "-i", str(extended), "--list").stdout)
    hostvars = inventory["_meta"]["hostvars"]
    assert (hostvars["dgx001"]["ngpu"], hostvars["dgx001"]["rails"]) == (8, 8)
    assert (hostvars["head01"]["ngpu"], hostvars["head01"]["rails"]) == (0, None)
    assert len(inventory["nvswitch_nodes"]["hosts"]) == 127
    assert len(inventory["kind_dgx_h100"]["hosts"]) == 127
    assert inventory["kind_mgmt_server"]["hosts"] == ["head01", "head02", "login01", "login02"]


def test_strict_compose_of_an_undefined_variable_fails(tmp_path):
    source = (EXAMPLES / "h100-superpod.topology.yml").read_text()
    extended = tmp_path / "undefined.topology.yml"
    extended.write_text(source + "strict: true\ncompose:\n  ngpu: clusterforge_expected_gpu_count\n")
    done = ansible("ansible-inventory", "-i", str(extended), "--list", check=False)
    assert done.returncode != 0
    assert "clusterforge_expected_gpu_count" in done.stderr


def test_the_static_yaml_gives_the_golden_inventory(tmp_path):
    """The static renderer against the fixed golden file, not against the plugin: both read the
    same plan, so comparing them with each other would pass on a mistake they share."""
    plan = load(EXAMPLES / "h100-superpod.topology.yml", links=False)
    static = tmp_path / "hosts.yml"
    static.write_text(static_inventory.inventory_yaml(plan))
    golden = json.loads((GOLDEN / "h100-superpod.inventory.json").read_text())
    assert _member_sets(_normalised_list(static)) == _member_sets(golden)


def _member_sets(inventory: dict) -> dict:
    """The order of groups differs between the plugin and the static YAML; their content must not."""
    return {
        name: {key: sorted(value) if key in ("hosts", "children") else value for key, value in group.items()}
        for name, group in inventory.items()
    }


def test_a_role_without_hosts_is_an_empty_group(tmp_path):
    # The lab's compute role with count 0: its group is still a child of its site, node type and
    # orchestrator groups.
    lab = tmp_path / "zero.topology.yml"
    text = (PROJECT / "inventories" / "lab" / "lab.topology.yml").read_text()
    lab.write_text(text.replace("    count: 2\n", "    count: 0\n"))
    inventory = json.loads(ansible("ansible-inventory", "-i", str(lab), "--list").stdout)
    assert inventory["k8s_workers"]["children"] == ["compute"]
    assert "compute" not in inventory or "hosts" not in inventory["compute"]
    assert sorted(inventory["_meta"]["hostvars"]) == ["head01"]


def test_a_broken_topology_names_file_line_and_field(tmp_path):
    broken = tmp_path / "broken.topology.yml"
    text = (EXAMPLES / "h100-superpod.topology.yml").read_text()
    line = text.splitlines().index('    hostname: "login{index:02d}"') + 1
    broken.write_text(text.replace('hostname: "login{index:02d}"', 'hostname: "head{index:02d}"'))
    done = ansible("ansible-inventory", "-i", str(broken), "--list", check=False)
    assert done.returncode != 0
    assert (
        f"{broken}:{line}: roles.login.hostname: produces head01, head02, already produced by role head" in done.stderr
    )


@pytest.mark.parametrize("seed", ["0", "3", "5"])
def test_plays_over_all_take_the_hosts_in_topology_order(seed):
    """Rolling batches follow the topology whatever Python's hash seed (Ansible orders the hosts
    of nested groups by set iteration; seed 3 put node01 before head01 before the fix)."""
    source = PROJECT / "inventories" / "lab" / "lab.topology.yml"
    done = subprocess.run(
        [str(BIN / "ansible"), "all", "-i", str(source), "--list-hosts"],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    listed = [line.strip() for line in done.stdout.splitlines()[1:]]
    assert listed == [host.name for host in load(source, links=False).hosts]


def test_the_plugin_says_what_was_built_other_than_asked(tmp_path):
    """The warnings `topology validate` prints (here: 2.5:1 on 64-port leaves, built 46 down and
    18 up) reach whoever builds the inventory, with the file, line and field."""
    data = yaml.safe_load((EXAMPLES / "h100-superpod.topology.yml").read_text())
    data["fabrics"]["inband"]["oversubscription"] = 2.5
    source = tmp_path / "ratio.topology.yml"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1) if "oversubscription: 2.5" in text)
    done = ansible("ansible-inventory", "-i", str(source), "--graph")
    warning = " ".join(done.stderr.split())  # Ansible wraps its warnings
    assert f"{source}:{line}: fabrics.inband.oversubscription: 2.5:1 asked" in warning
    assert "built 46 down and 18 up" in warning
