"""Integration fixtures: a real Docker engine and a lab of real containers."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from clusterforge.errors import ClusterforgeError
from clusterforge.lab import engine

CLUSTERFORGE = [sys.executable, "-m", "clusterforge.cli"]
# Its own name, so the suite never touches a lab the user has up; CLUSTERFORGE_TEST_LAB names another
# (a lab of the same name left up by another checkout is refused by `lab up`).
TEST_LAB = os.environ.get("CLUSTERFORGE_TEST_LAB", "cftest")
# The limit of a subprocess the lab tests run (ansible, clusterforge): a hang guard, not a time
# target. CI runs pytest beside a Molecule scenario on two cores, where a playbook can take minutes.
HANG_GUARD_S = 900


def local_inventory(tmp: Path, hosts: dict[str, str]) -> Path:
    """An INI inventory of hosts reached with the local connection, as this Python, without become.
    hosts: name -> the host's extra inventory variables ("key=value ...")."""
    path = tmp / "hosts.ini"
    lines = [
        f"{host} ansible_connection=local ansible_python_interpreter={sys.executable} ansible_become=false {extra}"
        for host, extra in hosts.items()
    ]
    path.write_text("[all]\n" + "\n".join(lines) + "\n")
    return path


def put_files(container, directory: str, files: dict[str, bytes]) -> None:
    """Write files (name -> content) into a directory of a lab container, creating it."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert container.exec_run(["mkdir", "-p", directory]).exit_code == 0
    assert container.put_archive(directory, archive.getvalue())


def ansible_playbook(inventory: Path, playbook: Path, *extra: str, env: dict) -> subprocess.CompletedProcess:
    """ansible-playbook of this Python's environment, run from the project (its ansible.cfg)."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook), *extra],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=HANG_GUARD_S,
    )


def local_playbook(tmp_path: Path, playbook: Path, inventory: Path, *extra: str) -> subprocess.CompletedProcess:
    """ansible_playbook with the project's ansible.cfg, this run's facts kept out of the user's fact
    cache and no colour in the output."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(Path(__file__).resolve().parents[2] / "ansible.cfg"),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"),
        "ANSIBLE_NOCOLOR": "1",
    }
    return ansible_playbook(inventory, playbook, *extra, env=env)


def clusterforge(*args: str, check: bool = True, env: dict | None = None):
    done = subprocess.run(
        [*CLUSTERFORGE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if check and done.returncode != 0:
        pytest.fail(f"clusterforge {' '.join(args)} -> rc {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def run_replayed(tmp_path: Path, playbook: str, inventory: Path, run_id: str, *extra_vars: str):
    """`clusterforge run PLAYBOOK` judging recorded outputs, whatever it exits with: each host's
    outputs from tmp_path/replay/<host>, the reports in tmp_path/reports/<run_id>, the state
    directory tmp_path/state (never the user's); extra_vars: more NAME=value for -e."""
    extra = [arg for value in extra_vars for arg in ("-e", value)]
    return clusterforge(
        "run",
        playbook,
        "-i",
        str(inventory),
        "-e",
        f"clusterforge_validation_replay_dir={tmp_path / 'replay'}/{{{{ inventory_hostname }}}}",
        "-e",
        f"clusterforge_report_dir={tmp_path / 'reports'}",
        "-e",
        f"clusterforge_validation_run_id={run_id}",
        *extra,
        env={"CLUSTERFORGE_STATE_DIR": str(tmp_path / "state")},
        check=False,
    )


def run_playbook(env: dict, *args: str) -> subprocess.CompletedProcess:
    """`clusterforge run ARGS` in a process of its own, with exactly `env`, whatever it exits with."""
    return subprocess.run(
        [sys.executable, "-m", "clusterforge.cli", "run", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=HANG_GUARD_S,
    )


@pytest.fixture(scope="session")
def docker_client():
    try:
        return engine.connect()
    except ClusterforgeError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Docker engine: {exc}")


@pytest.fixture(scope="session")
def lab_state(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("clusterforge-state")


@pytest.fixture(scope="session")
def lab(docker_client, lab_state):
    """A small lab (a head and two compute nodes: Slurm's two-node jobs), removed after the session."""
    env = {"CLUSTERFORGE_STATE_DIR": str(lab_state)}
    clusterforge("lab", "up", "--size", "small", "--name", TEST_LAB, env=env)
    yield {"env": env, "inventory": lab_state / "labs" / TEST_LAB / "lab.topology.yml"}
    clusterforge("lab", "down", "--name", TEST_LAB, env=env)
