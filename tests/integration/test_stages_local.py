"""The stage registry as Ansible reads it, on hosts reached with the local connection: the
orchestrator gate of a stage, preflight's check of clusterforge_orchestrator, and the stages
rolling_update.yml accepts. No containers, nothing on this machine is changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from clusterforge import stages
from tests.integration.conftest import local_inventory
from tests.integration.conftest import local_playbook as playbook
from tests.paths import PROJECT

GATE_PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "stage_gate.yml"
# One host per value of clusterforge_orchestrator; `unset` takes the registry's default.
CHOICES = ("slurm", "kubernetes", "both", "none", "unset")


def inventory(tmp_path: Path, **host_vars: str) -> Path:
    return local_inventory(tmp_path, host_vars)


@pytest.fixture
def registry_with_orchestrator_stages() -> Path:
    """The project's registry, which holds a Slurm and a Kubernetes stage."""
    registry = stages.load(PROJECT)
    assert {"slurm", "kubernetes"} <= set(registry.names)
    assert registry.stage("slurm").orchestrator == "slurm"
    assert registry.stage("kubernetes").orchestrator == "kubernetes"
    return PROJECT / stages.REGISTRY


def ran_on(output: str, stage: str) -> set[str]:
    return set(re.findall(rf"msg: stage {stage} ran on (\S+)", output))


@pytest.mark.parametrize(
    ("stage", "runs_on"),
    [
        ("slurm", {"slurm", "both", "unset"}),
        ("kubernetes", {"kubernetes", "both"}),
        ("base", set(CHOICES)),
    ],
)
def test_the_orchestrator_choice_decides_which_stages_run(tmp_path, registry_with_orchestrator_stages, stage, runs_on):
    hosts = {choice: "" if choice == "unset" else f"clusterforge_orchestrator={choice}" for choice in CHOICES}
    done = playbook(
        tmp_path,
        GATE_PLAYBOOK,
        inventory(tmp_path, **hosts),
        "-e",
        f"stage_registry={registry_with_orchestrator_stages}",
        "-e",
        f"stage={stage}",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert ran_on(done.stdout, stage) == runs_on
    for host in set(CHOICES) - runs_on:
        assert f"{host}: stage {stage} belongs to {stage}, which clusterforge_orchestrator=" in done.stdout


def test_the_default_orchestrator_is_slurm():
    # The `unset` host above runs the Slurm stage because of this default (documented in site.yml).
    assert stages.load(PROJECT).default_orchestrator == "slurm"


def test_an_unknown_stage_at_the_gate_is_a_clear_error(tmp_path, registry_with_orchestrator_stages):
    done = playbook(
        tmp_path,
        GATE_PLAYBOOK,
        inventory(tmp_path, local=""),
        "-e",
        f"stage_registry={registry_with_orchestrator_stages}",
        "-e",
        "stage=lsf",
    )
    assert done.returncode == 2
    names = [s["name"] for s in yaml.safe_load(registry_with_orchestrator_stages.read_text())["__clusterforge_stages"]]
    assert f"unknown stage lsf: expected one of {', '.join(names)}" in done.stdout


@pytest.mark.parametrize("value", ["pbs", "Slurm", "[slurm]"])
def test_preflight_rejects_a_bad_orchestrator(tmp_path, value):
    inventory_path = inventory(tmp_path, local=f"clusterforge_orchestrator='{value}'")
    done = playbook(tmp_path, PROJECT / "playbooks" / "preflight.yml", inventory_path)
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr
    message = " ".join(done.stdout.split())
    assert (
        f'local: clusterforge_orchestrator is "{value}"; expected one of slurm, kubernetes, both, none (default slurm)'
        in message.replace("'", "")
    ), message[-3000:]


def test_preflight_accepts_each_orchestrator_choice(tmp_path):
    hosts = {choice: f"clusterforge_orchestrator={choice}" for choice in CHOICES if choice != "unset"}
    done = playbook(tmp_path, PROJECT / "playbooks" / "preflight.yml", inventory(tmp_path, **hosts, unset=""))
    # Later checks (operating system, systemd) depend on this machine; the orchestrator check must pass.
    task = done.stdout.split("TASK [Check the orchestrator choice]", 1)[1].split("TASK [", 1)[0]
    assert sorted(re.findall(r"ok: \[(\w+)\]", task)) == sorted(CHOICES), done.stdout[-3000:]


def test_rolling_update_accepts_exactly_the_stages_with_roles(tmp_path):
    registry = stages.load(PROJECT)
    done = playbook(
        tmp_path,
        PROJECT / "playbooks" / "rolling_update.yml",
        inventory(tmp_path, local=""),
        "-e",
        "rolling_update_hosts=all",
        "-e",
        "rolling_update_stage=preflight",
    )
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr
    expected = f"rolling update: unknown stage preflight; expected one of {', '.join(registry.rollable)}"
    assert expected in " ".join(done.stdout.split())


def listed_tasks(done) -> list[str]:
    """Task names of `ansible-playbook --list-tasks` output, in order (every play's)."""
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    return re.findall(r"^ {6}(.+?)\tTAGS: ", done.stdout, flags=re.MULTILINE)


@pytest.mark.parametrize("stage", stages.load(PROJECT).rollable)
def test_a_stage_runs_the_same_tasks_alone_and_in_a_rolling_update(tmp_path, stage):
    """One definition of each stage: between the drain and the node checks, rolling_update.yml runs
    exactly the tasks of the stage's own playbook (gate, checks and role includes alike)."""
    hosts = inventory(tmp_path, local="")
    alone = listed_tasks(playbook(tmp_path, PROJECT / "playbooks" / f"{stage}.yml", hosts, "--list-tasks"))
    rolled = listed_tasks(
        playbook(
            tmp_path,
            PROJECT / "playbooks" / "rolling_update.yml",
            hosts,
            "--list-tasks",
            "-e",
            f"rolling_update_stage={stage}",
        )
    )
    start = rolled.index("Drain the batch from its scheduler") + 1
    end = rolled.index("Reboot where the stage requires it and reboots are allowed")
    assert alone, f"{stage}.yml lists no task"
    assert rolled[start:end] == alone
