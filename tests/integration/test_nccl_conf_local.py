"""The nccl role's /etc/nccl.conf is, byte for byte, what `clusterforge topology render` writes to
nccl/<node type>.env: for one host of every node type of every example topology (and the lab's,
which has no GPU), through the real topology inventory and ansible-playbook with the local
connection. Files go under the test's own directory; nothing on this machine is changed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clusterforge.topology import load
from clusterforge.topology.render import nccl
from tests.integration.conftest import local_inventory, local_playbook
from tests.paths import PROJECT

PLAYBOOK = PROJECT / "tests" / "integration" / "playbooks" / "nccl_conf.yml"
TOPOLOGIES = [
    *sorted((PROJECT / "inventories" / "examples").glob("*.topology.yml")),
    PROJECT / "inventories" / "lab" / "lab.topology.yml",
]


def _run(tmp_path: Path, inventory: Path, limit: list[str] | None, **extra: str):
    local = f"ansible_connection=local ansible_python_interpreter={sys.executable} ansible_become=false"
    args = ["-e", f"nccl_conf_path={tmp_path}/{{{{ inventory_hostname }}}}-nccl.conf"]
    for name, value in extra.items():
        args += ["-e", f"{name}={value}"]
    if limit:
        args += ["--limit", ",".join(limit)]
    # The connection variables of local_inventory, given to a topology inventory's hosts.
    for pair in local.split():
        args += ["-e", pair]
    return local_playbook(tmp_path, PLAYBOOK, inventory, *args)


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda path: path.name.removesuffix(".topology.yml"))
def test_each_node_file_equals_the_rendered_one(tmp_path, topology):
    plan = load(topology)
    rendered = nccl.files(plan)
    one_per_type = {}
    for host in plan.hosts:
        one_per_type.setdefault(host.node_type, host.name)
    done = _run(tmp_path, topology, sorted(one_per_type.values()))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    for type_name, host in one_per_type.items():
        node_file = tmp_path / f"{host}-nccl.conf"
        expected = rendered.get(f"nccl/{type_name}.env")
        if expected is None:
            assert not node_file.exists(), host
            assert f"skipped: {node_file}: the node type has no GPU or no HCA on the GPU fabric" in " ".join(
                done.stdout.split()
            )
        else:
            assert node_file.read_text() == expected, host
            assert "NCCL_IB_HCA=" in expected
            assert oct(node_file.stat().st_mode & 0o777) == "0o644"
    # The examples have GPU node types: the comparison above compared files.
    if topology.parent.name == "examples":
        assert any(f"nccl/{name}.env" in rendered for name in one_per_type)


def test_a_rerun_changes_nothing(tmp_path):
    topology = PROJECT / "inventories" / "examples" / "pcie-roce-small.topology.yml"
    host = next(host.name for host in load(topology).hosts if nccl.env_file(load(topology), host.node_type))
    assert _run(tmp_path, topology, [host]).returncode == 0
    done = _run(tmp_path, topology, [host])
    assert done.returncode == 0
    assert "changed=0" in done.stdout, done.stdout[-2000:]


def test_an_inventory_that_is_not_a_topology_gets_no_file_and_says_so(tmp_path):
    done = local_playbook(
        tmp_path,
        PLAYBOOK,
        local_inventory(tmp_path, {"plain": ""}),
        "-e",
        f"nccl_conf_path={tmp_path}/nccl.conf",
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert not (tmp_path / "nccl.conf").exists()
    assert "the inventory is not a topology (no clusterforge_topology_file)" in " ".join(done.stdout.split())


@pytest.mark.parametrize("path", ["/etc/ld.so.conf", "/etc", "relative/nccl.conf", "/etc/nccl.conf.d/x.txt"])
def test_a_path_that_is_not_an_nccl_conf_file_is_refused_naming_the_variable(tmp_path, path):
    done = local_playbook(tmp_path, PLAYBOOK, local_inventory(tmp_path, {"plain": ""}), "-e", f"nccl_conf_path={path}")
    assert done.returncode == 2
    assert f'nccl: nccl_conf_path is "{path}", expected an absolute path of a .conf file' in " ".join(
        done.stdout.split()
    )
