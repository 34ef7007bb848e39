"""Run a playbook through ansible-runner's Python interface and sum up every host."""

from __future__ import annotations

import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner

from clusterforge.errors import (
    EXIT_HOSTS_FAILED,
    EXIT_HOSTS_UNREACHABLE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
)
from clusterforge.paths import state_dir

STAGES = ("preflight", "base", "gpu", "containers", "kubernetes", "storage", "validate")

# ansible-runner's stats keys -> the names shown in the summary.
_STAT_KEYS = {
    "ok": "ok",
    "changed": "changed",
    "failures": "failed",
    "dark": "unreachable",
    "skipped": "skipped",
    "rescued": "rescued",
    "ignored": "ignored",
}


@dataclass
class HostSummary:
    host: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    rescued: int = 0
    ignored: int = 0


@dataclass
class RunResult:
    status: str
    rc: int
    run_dir: Path
    hosts: list[HostSummary] = field(default_factory=list)

    @property
    def failed_hosts(self) -> list[str]:
        return [h.host for h in self.hosts if h.failed]

    @property
    def unreachable_hosts(self) -> list[str]:
        return [h.host for h in self.hosts if h.unreachable]

    @property
    def changed_tasks(self) -> int:
        return sum(h.changed for h in self.hosts)

    @property
    def exit_code(self) -> int:
        if self.status in ("canceled", "timeout"):
            return EXIT_INTERRUPTED
        if self.unreachable_hosts:
            return EXIT_HOSTS_UNREACHABLE
        if self.failed_hosts or self.rc != 0 or self.status != "successful":
            return EXIT_HOSTS_FAILED
        return EXIT_OK


def resolve_playbook(project: Path, playbook: str) -> Path:
    """`site`, a stage name, or a path to a playbook file."""
    candidates = [Path(playbook)]
    if playbook == "site":
        candidates.insert(0, project / "site.yml")
    elif playbook in STAGES:
        candidates.insert(0, project / "playbooks" / f"{playbook}.yml")
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise UsageError(
        f"playbook {playbook!r} not found: expected 'site', a stage "
        f"({', '.join(STAGES)}) that exists under {project / 'playbooks'}, or a playbook file"
    )


def resolve_inventory(inventory: str | os.PathLike[str]) -> Path:
    path = Path(inventory).expanduser()
    if not path.exists():
        raise UsageError(f"inventory not found: {path} (expected a file or directory)")
    return path.resolve()


def summarise(stats: dict | None) -> list[HostSummary]:
    """Per-host counts from ansible-runner's stats (the playbook_on_stats event)."""
    hosts: dict[str, HostSummary] = {}
    for runner_key, name in _STAT_KEYS.items():
        for host, count in ((stats or {}).get(runner_key) or {}).items():
            summary = hosts.setdefault(host, HostSummary(host=host))
            setattr(summary, name, count)
    return sorted(hosts.values(), key=lambda h: h.host)


def run_playbook(
    project: Path,
    playbook: str,
    inventory: str | os.PathLike[str],
    limit: str | None = None,
    check: bool = False,
    diff: bool = False,
    extravars: dict | None = None,
    quiet: bool = False,
) -> RunResult:
    playbook_path = resolve_playbook(project, playbook)
    inventory_path = resolve_inventory(inventory)
    # A fresh private data dir per run keeps runs independent and their artifacts apart.
    run_dir = state_dir() / "runs" / f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    run_dir.mkdir(parents=True)
    cmdline = [*(["--check"] if check else []), *(["--diff"] if diff else [])]
    runner = ansible_runner.run(
        private_data_dir=str(run_dir),
        project_dir=str(project),
        playbook=str(playbook_path),
        inventory=str(inventory_path),
        limit=limit,
        extravars=extravars or None,
        cmdline=" ".join(cmdline) or None,
        envvars=_ansible_environment(project),
        quiet=quiet,
        event_handler=lambda _event: True,
    )
    return RunResult(status=runner.status, rc=runner.rc, run_dir=run_dir, hosts=summarise(runner.stats))


def _ansible_environment(project: Path) -> dict[str, str]:
    # The venv's bin/ holds ansible-playbook even when the venv is not activated.
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        path = os.pathsep.join([bindir, path]) if path else bindir
    colour = {"ANSIBLE_FORCE_COLOR": "1"} if sys.stdout.isatty() else {"ANSIBLE_NOCOLOR": "1"}
    return {"ANSIBLE_CONFIG": str(project / "ansible.cfg"), "PATH": path, **colour}
