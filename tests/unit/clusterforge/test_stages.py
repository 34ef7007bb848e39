"""roles/clusterforge/vars/main.yml holds the one list of stages: site.yml, the stage playbooks, their
task files (playbooks/stages/), rolling_update.yml, the runner and the CLI follow it."""

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


def _stage_tasks(name: str) -> list[dict]:
    """playbooks/stages/<name>.yml: the stage's one definition ([] for a stage without roles)."""
    path = PROJECT / "playbooks" / "stages" / f"{name}.yml"
    return (yaml.safe_load(path.read_text()) or []) if path.exists() else []


def _role_entries(tasks: list[dict]) -> list[tuple[str, dict]]:
    """The stage roles a task list applies, in order, each with its task: imported (every host of
    the stage gets it) or included where a `when` names the role (a host skips a role it does not
    get in one task). Other included roles (preflight's gpu_stack_check) are no stage's."""
    found = []
    for task in tasks:
        if "ansible.builtin.import_role" in task:
            found.append((task["ansible.builtin.import_role"]["name"], task))
        elif "ansible.builtin.include_role" in task:
            name = task["ansible.builtin.include_role"]["name"]
            if str(task.get("when", "")).startswith(f"'{name}' in "):
                found.append((name, task))
    return found


def _gate_stage(tasks: list[dict]) -> str | None:
    """The stage a task list's first task gates on (tasks/stage_gate.yml), if it is that import."""
    first = (tasks or [{}])[0]
    if first.get("ansible.builtin.import_tasks") not in ("tasks/stage_gate.yml", "../tasks/stage_gate.yml"):
        return None
    return first.get("vars", {}).get("__stage_gate_stage")


def test_the_loader_reads_every_entry_of_the_file():
    assert [
        {"name": s.name, "hosts": s.hosts, "roles": list(s.roles), "orchestrator": s.orchestrator}
        | ({"host_roles": s.host_roles} if s.host_roles else {})
        for s in REGISTRY.stages
    ] == RAW["__clusterforge_stages"]
    assert REGISTRY.orchestrator_choices == {k: tuple(v) for k, v in RAW["__clusterforge_orchestrator_choices"].items()}
    assert set(REGISTRY.orchestrator_choices) == {"slurm", "kubernetes", "both", "none"}
    assert REGISTRY.default_orchestrator == RAW["__clusterforge_orchestrator_default"]
    assert REGISTRY.rolling_update_default_stage == RAW["__clusterforge_rolling_update_default_stage"]


def test_site_imports_exactly_the_registry_stages_in_order():
    # Before them, one play of its own: the check that the inventory has hosts (no stage's).
    check, *plays = _plays(PROJECT / "site.yml")
    assert check["name"].startswith("Check the inventory has hosts")
    imports = [play["ansible.builtin.import_playbook"] for play in plays]
    assert imports == [f"playbooks/{name}.yml" for name in REGISTRY.names]


def test_every_stage_playbook_is_in_the_registry():
    # The named playbooks (rolling-update, acceptance) run by name, not as stages.
    named = {name.removesuffix(".yml") for name in runner.NAMED_PLAYBOOKS.values()}
    playbooks = {path.stem for path in (PROJECT / "playbooks").glob("*.yml")} - named
    assert playbooks == set(REGISTRY.names)
    task_files = {path.stem for path in (PROJECT / "playbooks" / "stages").glob("*.yml")}
    assert task_files == set(REGISTRY.rollable)


@pytest.mark.parametrize("stage", REGISTRY.stages, ids=lambda s: s.name)
def test_each_stage_playbook_targets_its_hosts_with_the_registry_loaded_once(stage):
    plays = _plays(PROJECT / "playbooks" / f"{stage.name}.yml")
    assert {play["hosts"] for play in plays} == {stage.hosts}
    for play in plays:
        # The registry comes from the constants role's vars (read once), never from vars_files.
        assert "vars_files" not in play
        if stage.roles or stage.orchestrator:
            assert play["roles"] == [{"role": "clusterforge"}]


@pytest.mark.parametrize("stage", [s for s in REGISTRY.stages if s.roles], ids=lambda s: s.name)
def test_a_stage_with_roles_is_its_task_file_and_nothing_else(stage):
    """playbooks/<stage>.yml runs exactly playbooks/stages/<stage>.yml, the file rolling_update.yml
    imports: one definition of the stage, its gate and checks included."""
    (play,) = _plays(PROJECT / "playbooks" / f"{stage.name}.yml")
    assert play["tasks"] == [
        {"name": f"Stage {stage.name}", "ansible.builtin.import_tasks": f"stages/{stage.name}.yml"}
    ]
    assert not {"pre_tasks", "post_tasks", "handlers"} & set(play)
    assert [name for name, _ in _role_entries(_stage_tasks(stage.name))] == list(stage.roles)


def test_rolling_update_imports_the_stage_task_file():
    (play,) = _plays(PROJECT / "playbooks" / "rolling_update.yml")
    assert play["roles"] == [{"role": "clusterforge"}]
    assert "vars_files" not in play
    (apply,) = play["tasks"]
    assert apply["ansible.builtin.import_tasks"].startswith("stages/{{ __rolling_update_stage if")


@pytest.mark.parametrize("stage", [s for s in REGISTRY.stages if s.host_roles], ids=lambda s: s.name)
def test_a_stage_with_host_roles_includes_each_role_only_where_that_variable_lists_it(stage):
    entries = _role_entries(_stage_tasks(stage.name))
    assert [name for name, _ in entries] == list(stage.roles)
    for name, task in entries:
        assert "ansible.builtin.include_role" in task, name
        assert task["when"] == f"'{name}' in {stage.host_roles}", task
    assert stage.host_roles in RAW, f"{stage.host_roles} is not defined next to the registry"


@pytest.mark.parametrize("stage", [s for s in REGISTRY.stages if s.roles and not s.host_roles], ids=lambda s: s.name)
def test_a_stage_without_host_roles_imports_its_roles_for_every_host(stage):
    for name, task in _role_entries(_stage_tasks(stage.name)):
        assert "ansible.builtin.import_role" in task and "when" not in task, name


@pytest.mark.parametrize("stage", REGISTRY.stages, ids=lambda s: s.name)
def test_an_orchestrator_stage_is_gated_first(stage):
    expected = stage.name if stage.orchestrator else None
    assert _gate_stage(_stage_tasks(stage.name)) == expected
    for play in _plays(PROJECT / "playbooks" / f"{stage.name}.yml"):
        assert _gate_stage(play.get("pre_tasks", [])) is None, "the gate belongs in the stage's task file"


def test_the_gate_is_recognised_only_with_its_stage():
    gate = {"ansible.builtin.import_tasks": "../tasks/stage_gate.yml", "vars": {"__stage_gate_stage": "slurm"}}
    assert _gate_stage([gate]) == "slurm"
    assert _gate_stage([{"ansible.builtin.debug": {}}, gate]) is None
    assert _gate_stage([]) is None


def test_every_stage_resolves_to_its_playbook(project):
    for name in REGISTRY.names:
        assert runner.resolve_playbook(project, name) == project / "playbooks" / f"{name}.yml"


def test_rollable_stages_are_those_with_roles():
    assert REGISTRY.rollable == tuple(s["name"] for s in RAW["__clusterforge_stages"] if s["roles"])
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
        ({"__clusterforge_stages": [*RAW["__clusterforge_stages"], RAW["__clusterforge_stages"][0]]}, "listed twice"),
        (
            {"__clusterforge_stages": [{"name": "x", "hosts": "all", "roles": [], "orchestrator": "pbs"}]},
            "stage x: orchestrator 'pbs'",
        ),
        ({"__clusterforge_orchestrator_choices": {"pbs": ["pbs"]}}, "unknown orchestrators"),
        ({"__clusterforge_orchestrator_default": "lsf"}, "__clusterforge_orchestrator_default 'lsf' is not a choice"),
        ({"__clusterforge_rolling_update_default_stage": "validate"}, "'validate' is not a stage with roles"),
        ({"__clusterforge_stages": [{"name": "x", "roles": []}]}, "'hosts'"),
    ],
)
def test_a_broken_registry_names_the_file_and_the_problem(tmp_path, changes, message):
    path = _write(tmp_path, **changes)
    with pytest.raises(UsageError, match=f"stage registry {path}: .*{message}"):
        stages.load(tmp_path, Path(path.name))
