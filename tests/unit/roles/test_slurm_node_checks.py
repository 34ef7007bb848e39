"""The slurm health hook's node checks: clusterforge-node-check runs the project's own gpu_check and
ib_check from the bundle the role writes, on real recorded nvidia-smi output (no GPU here)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.plugins.loader import init_plugin_loader

from tests.paths import FIXTURES, PROJECT, filters
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "slurm"
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
RUNNER = ROLE / "files" / "clusterforge_node_check.py"
H100_QUERY = FIXTURES / "nvidia-smi_query" / "h100-8gpu-nvidia-smi-q-535.161.08-gpud.txt"
node_check_args = filters("plugins/filter/node_checks.py")["clusterforge_node_check_args"]


def _imports(path: Path, seen: set) -> set:
    for name in re.findall(r"^from ansible\.module_utils\.(\w+) import", path.read_text(), re.M):
        if name != "basic" and name not in seen:
            seen.add(name)
            _imports(PROJECT / "plugins" / "module_utils" / f"{name}.py", seen)
    return seen


def test_the_bundle_lists_every_module_util_the_check_modules_import():
    needed = set()
    for module in ROLE_VARS["__slurm_node_check_modules"]:
        _imports(PROJECT / "plugins" / "modules" / f"{module}.py", needed)
    assert sorted(ROLE_VARS["__slurm_node_check_module_utils"]) == sorted(needed)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """The role's bundle, rendered by Ansible's templating from the role's own variables."""
    init_plugin_loader()  # the file lookup is a builtin plugin: the loader must know the collections
    variables = {**ROLE_VARS, "role_path": str(ROLE)}
    rendered = render(ROLE_VARS["__slurm_node_check_bundle"], **variables)
    path = tmp_path_factory.mktemp("bundle") / "node-checks.json"
    path.write_text(json.dumps(rendered))
    return path


def _run(config: dict | str, bundle: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "node-checks.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    # The node's python3 with nothing but the standard library: no Ansible on sys.path.
    return subprocess.run(
        [sys.executable, "-I", "-S", str(RUNNER), str(path), "--bundle", str(bundle)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_bundle_holds_the_project_sources(bundle):
    data = json.loads(bundle.read_text())
    assert data["modules"]["gpu_check"] == (PROJECT / "plugins" / "modules" / "gpu_check.py").read_text()
    assert data["module_utils"]["verdicts"] == (PROJECT / "plugins" / "module_utils" / "verdicts.py").read_text()


def test_a_node_whose_gpus_are_not_what_the_topology_expects_fails(bundle, tmp_path):
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "nvidia-smi-q.txt").write_text(H100_QUERY.read_text())
    host_vars = {"clusterforge_expected_gpus": 2, "clusterforge_expected_gpu_model": "fake-gpu"}
    done = _run({"checks": node_check_args(host_vars, replay_dir=str(replay))}, bundle, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    # Judged from a recording, not the node: the drain reason says so before the module's message.
    assert first.startswith(
        "replayed from recorded outputs: gpu_check: 3 of 14 checks failed: gpu.count: 8 of 2 expected GPUs visible"
    )
    assert "replayed from recorded outputs: ib_check: skipped (1 skipped)" in done.stdout


def test_a_node_without_gpus_is_skipped_not_failed(bundle, tmp_path):
    empty = tmp_path / "replay"
    empty.mkdir()
    done = _run({"checks": node_check_args({"clusterforge_expected_gpus": 2}, replay_dir=str(empty))}, bundle, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "replayed from recorded outputs: gpu_check: skipped (1 skipped)",
        "replayed from recorded outputs: ib_check: skipped (1 skipped)",
    ]


def test_a_live_run_does_not_say_replayed(bundle, tmp_path):
    """Without replay_dir the modules look at this machine (no NVIDIA GPU, no HCA under the given
    roots): their own verdict, with nothing before the module's name."""
    config = node_check_args({"clusterforge_expected_gpus": 2})
    config["gpu_check"]["pci_root"] = str(tmp_path / "no-pci")
    config["ib_check"]["sysfs_root"] = str(tmp_path / "no-sysfs")
    done = _run({"checks": config}, bundle, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["gpu_check: skipped (1 skipped)", "ib_check: skipped (1 skipped)"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{not json", r"node-checks.json: Expecting property name"),
        ({"checks": ["gpu_check"]}, r'expected \{"checks": \{module: \{option: value\}\}\}'),
        ({"checks": {"gpu_check": {"expected": 2}}}, r"gpu_check: unknown options \['expected'\]"),
        ({"checks": {"gpu_check": {"expected_gpus": "two"}}}, r"option expected_gpus: expected int, got 'two'"),
        ({"checks": {"nccl_check": {}}}, r"no module 'nccl_check' in the bundle"),
    ],
)
def test_a_bad_configuration_is_an_error_naming_what_is_wrong(bundle, tmp_path, config, message):
    done = _run(config, bundle, tmp_path)
    assert done.returncode == 2
    assert re.search(message, done.stdout), done.stdout


def test_a_gpu_lost_without_an_xid_drains_the_node_naming_it(bundle, tmp_path):
    """The kernel log of NVSentinel #155 (the driver found GPU 0000:b3:00.0 gone, no Xid line): the
    health hook's drain reason, its first line, names the GPU."""
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "nvidia-smi-q.txt").write_text(H100_QUERY.read_text())
    log = FIXTURES / "kernel_log_xid" / "l40-fallen-off-bus-multiline-no-xid-570-nvsentinel-155.txt"
    (replay / "kernel.log").write_text(log.read_text())
    checks = node_check_args({"clusterforge_expected_gpus": 8}, replay_dir=str(replay))
    done = _run({"checks": checks}, bundle, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("replayed from recorded outputs: gpu_check: ")
    assert "gpu.xid: 1 events: GPU 0000:b3:00.0 fell off the bus" in first
