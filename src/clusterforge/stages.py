"""The stage registry (roles/clusterforge/vars/main.yml): the stages of site.yml, in order, with their
roles, hosts and orchestrator. Ansible loads the same file (the role vars of the clusterforge role
every stage play lists), so the runner and the
playbooks cannot disagree about which stages exist."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterforge.errors import UsageError

# Relative to the project directory (the one holding site.yml).
REGISTRY = Path("roles") / "clusterforge" / "vars" / "main.yml"
ORCHESTRATORS = ("slurm", "kubernetes")


@dataclass(frozen=True)
class Stage:
    name: str
    hosts: str
    roles: tuple[str, ...]
    orchestrator: str | None
    # A variable naming, per host, which of the roles that host gets (an engine choice, GPUs);
    # None: every host of the stage gets every role.
    host_roles: str | None = None


@dataclass(frozen=True)
class Registry:
    stages: tuple[Stage, ...]
    orchestrator_choices: dict[str, tuple[str, ...]]
    default_orchestrator: str
    rolling_update_default_stage: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(stage.name for stage in self.stages)

    @property
    def rollable(self) -> tuple[str, ...]:
        """Stages a rolling update can apply: those with roles."""
        return tuple(stage.name for stage in self.stages if stage.roles)

    def rollable_stage(self, name: str) -> Stage:
        if name not in self.rollable:
            raise UsageError(
                f"unknown stage {name!r} for a rolling update: expected one of {', '.join(self.rollable)} "
                "(the stages with roles)"
            )
        return self.stage(name)

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise UsageError(f"unknown stage {name!r}: expected one of {', '.join(self.names)}")


def load(project: Path, path: Path = REGISTRY) -> Registry:
    """The registry of the project at `project` (or the file `path`, relative to it)."""
    source = project / path
    try:
        document = yaml.safe_load(source.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"stage registry {source}: {exc}") from None
    try:
        return _parse(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"stage registry {source}: {exc}") from None


def _parse(document: dict) -> Registry:
    choices = {
        name: tuple(orchestrators) for name, orchestrators in document["__clusterforge_orchestrator_choices"].items()
    }
    unknown = {o for orchestrators in choices.values() for o in orchestrators} - set(ORCHESTRATORS)
    if unknown:
        raise ValueError(f"unknown orchestrators {sorted(unknown)}: expected {', '.join(ORCHESTRATORS)}")
    registry = Registry(
        stages=tuple(_stage(entry) for entry in document["__clusterforge_stages"]),
        orchestrator_choices=choices,
        default_orchestrator=document["__clusterforge_orchestrator_default"],
        rolling_update_default_stage=document["__clusterforge_rolling_update_default_stage"],
    )
    if len(set(registry.names)) != len(registry.names):
        raise ValueError(f"a stage is listed twice: {', '.join(registry.names)}")
    if registry.default_orchestrator not in choices:
        raise ValueError(f"__clusterforge_orchestrator_default {registry.default_orchestrator!r} is not a choice")
    default_stage = registry.rolling_update_default_stage
    if default_stage not in registry.rollable:
        raise ValueError(f"__clusterforge_rolling_update_default_stage {default_stage!r} is not a stage with roles")
    return registry


def _stage(entry: dict) -> Stage:
    stage = Stage(
        name=str(entry["name"]),
        hosts=str(entry["hosts"]),
        roles=tuple(entry["roles"]),
        orchestrator=entry["orchestrator"],
        host_roles=entry.get("host_roles"),
    )
    if stage.orchestrator not in (None, *ORCHESTRATORS):
        raise ValueError(
            f"stage {stage.name}: orchestrator {stage.orchestrator!r}, expected null or one of {ORCHESTRATORS}"
        )
    return stage
