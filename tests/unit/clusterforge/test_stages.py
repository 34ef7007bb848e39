"""playbooks/vars/stages.yml is the one list of stages: site.yml, the stage playbooks, the runner
and the CLI follow it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterforge import cli, stages
from clusterforge.errors import UsageError
from clusterforge.runner import playbook as runner
from tests.paths import PROJECT

RAW = yaml.safe_load((PROJECT / stages.REGISTRY).read_text())
REGISTRY = stages.load(PROJECT)


def _plays(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())


def _role_entries(play: dict) -> list[tuple[str, dict]]:
    """The stage roles a play applies, in order, each with its entry: listed under roles:, or
    included by a task applying it where the host_roles variable lists it (a host skips a role it
    does not get in one task). Other included roles (preflight's gpu_stack_check) are no stage's."""
    listed = [(entry["role"], entry) if isinstance(entry, dict) else (entry, {}) for entry in play.get("roles", [])]
    included = [
        (task["ansible.builtin.include_role"]["name"], task)
        for task in play.get("tasks", [])
        if "ansible.builtin.include_role" in task
        and str(task.get("when", "")).startswith(f"'{task['ansible.builtin.include_role']['name']}' in ")
    ]
    return listed + included


def _roles(play: dict) -> list[str]:
    return [name for name, _ in _role_entries(play)]


def _gate_stage(play: dict) -> str | None:
    """The stage a play's first pre_task gates on (tasks/stage_gate.yml), if it is that import."""
    first = (play.get("pre_tasks") or [{}])[0]
    if first.get("ansible.builtin.import_tasks") != "tasks/stage_gate.yml":
        return None
    return first.get("vars", {}).get("__stage_gate_stage")


def test_the_loader_reads_every_entry_of_the_file():
    assert [
        {"name": s.name, "hosts": s.hosts, "roles": list(s.roles), "orchestrator": s.orchestrator}
        | ({"host_roles": s.host_roles} if s.host_roles else {})
        for s in REGISTRY.stages
    ] == RAW["clusterforge_stages"]
    assert REGISTRY.orchestrator_choices == {k: tuple(v) for k, v in RAW["clusterforge_orchestrator_choices"].items()}
    assert set(REGISTRY.orchestrator_choices) == {"slurm", "kubernetes", "both", "none"}
    assert REGISTRY.default_orchestrator == RAW["clusterforge_orchestrator_default"]
    assert REGISTRY.rolling_update_default_stage == RAW["clusterforge_rolling_update_default_stage"]


def test_site_imports_exactly_the_registry_stages_in_order():
    imports = [play["ansible.builtin.import_playbook"] for play in _plays(PROJECT / "site.yml")]
    assert imports == [f"playbooks/{name}.yml" for name in REGISTRY.names]


def test_every_stage_playbook_is_in_the_registry():
    playbooks = {path.stem for path in (PROJECT / "playbooks").glob("*.yml")} - {"rolling_update"}
    assert playbooks == set(REGISTRY.names)


@pytest.mark.parametrize("stage", REGISTRY.stages, ids=lambda s: s.name)
def test_each_stage_playbook_applies_exactly_its_roles_on_its_hosts(stage):
    plays = _plays(PROJECT / "playbooks" / f"{stage.name}.yml")
    assert [role for play in plays for role in _roles(play)] == list(stage.roles)
    assert {play["hosts"] for play in plays} == {stage.hosts}


@pytest.mark.parametrize("stage", [s for s in REGISTRY.stages if s.host_roles], ids=lambda s: s.name)
def test_a_stage_with_host_roles_applies_each_role_only_where_that_variable_lists_it(stage):
    """The stage playbook and rolling_update.yml read the same variable, from a vars file both load."""
    plays = _plays(PROJECT / "playbooks" / f"{stage.name}.yml")
    for play in plays:
        entries = _role_entries(play)
        assert entries
        for name, entry in entries:
            assert entry["when"] == f"'{name}' in {stage.host_roles}", entry
    rolling = _plays(PROJECT / "playbooks" / "rolling_update.yml")[0]
    defining = [
        f for f in plays[0]["vars_files"] if stage.host_roles in yaml.safe_load((PROJECT / "playbooks" / f).read_text())
    ]
    assert defining and set(defining) <= set(rolling["vars_files"])


@pytest.mark.parametrize("stage", REGISTRY.stages, ids=lambda s: s.name)
def test_an_orchestrator_stage_is_gated_in_every_play(stage):
    plays = _plays(PROJECT / "playbooks" / f"{stage.name}.yml")
    expected = stage.name if stage.orchestrator else None
    assert [_gate_stage(play) for play in plays] == [expected] * len(plays)


def test_the_gate_is_recognised_only_with_its_stage():
    gate = {"ansible.builtin.import_tasks": "tasks/stage_gate.yml", "vars": {"__stage_gate_stage": "slurm"}}
    assert _gate_stage({"pre_tasks": [gate]}) == "slurm"
    assert _gate_stage({"pre_tasks": [{"ansible.builtin.debug": {}}, gate]}) is None
    assert _gate_stage({"tasks": [gate]}) is None


def test_every_stage_resolves_to_its_playbook(project):
    for name in REGISTRY.names:
        assert runner.resolve_playbook(project, name) == project / "playbooks" / f"{name}.yml"


def test_rollable_stages_are_those_with_roles():
    assert REGISTRY.rollable == tuple(s["name"] for s in RAW["clusterforge_stages"] if s["roles"])
    assert REGISTRY.rolling_update_default_stage in REGISTRY.rollable


def test_an_unknown_stage_is_a_clear_error():
    with pytest.raises(
        UsageError,
        match=rf"unknown stage 'gpux' for a rolling update: expected one of {', '.join(REGISTRY.rollable)} "
        r"\(the stages with roles\)$",
    ):
        REGISTRY.rollable_stage("gpux")
    with pytest.raises(UsageError, match=r"unknown stage 'preflight' for a rolling update"):
        REGISTRY.rollable_stage("preflight")  # a stage, but one without roles to roll
    with pytest.raises(UsageError, match=rf"unknown stage 'gpux': expected one of {', '.join(REGISTRY.names)}$"):
        REGISTRY.stage("gpux")


def test_run_help_names_the_registry_stages_and_rolling_default(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"a stage ({', '.join(REGISTRY.names)})" in help_text
    assert f"default {REGISTRY.rolling_update_default_stage})" in help_text


def test_an_unknown_rolling_stage_is_refused_before_running(tmp_path, capsys, state_dir):
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[all]\nlocal ansible_connection=local\n")
    code = cli.main(["run", "rolling-update", "-i", str(inventory), "--stage", "gpux"])
    assert code == 4
    assert f"unknown stage 'gpux' for a rolling update: expected one of {', '.join(REGISTRY.rollable)}" in " ".join(
        capsys.readouterr().err.split()
    )
    assert not (state_dir / "runs").exists(), "nothing may run"


def _write(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "stages.yml"
    path.write_text(yaml.safe_dump({**RAW, **changes}))
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"clusterforge_stages": [*RAW["clusterforge_stages"], RAW["clusterforge_stages"][0]]}, "listed twice"),
        (
            {"clusterforge_stages": [{"name": "x", "hosts": "all", "roles": [], "orchestrator": "pbs"}]},
            "stage x: orchestrator 'pbs'",
        ),
        ({"clusterforge_orchestrator_choices": {"pbs": ["pbs"]}}, "unknown orchestrators"),
        ({"clusterforge_orchestrator_default": "lsf"}, "clusterforge_orchestrator_default 'lsf' is not a choice"),
        ({"clusterforge_rolling_update_default_stage": "validate"}, "'validate' is not a stage with roles"),
        ({"clusterforge_stages": [{"name": "x", "roles": []}]}, "'hosts'"),
    ],
)
def test_a_broken_registry_names_the_file_and_the_problem(tmp_path, changes, message):
    path = _write(tmp_path, **changes)
    with pytest.raises(UsageError, match=f"stage registry {path}: .*{message}"):
        stages.load(tmp_path, Path(path.name))
