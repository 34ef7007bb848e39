"""Run a playbook through ansible-runner's Python interface and sum up every host."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner

from clusterforge import stages
from clusterforge.errors import (
    EXIT_HOSTS_FAILED,
    EXIT_HOSTS_UNREACHABLE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
)
from clusterforge.paths import state_dir
from clusterforge.runner.record import RunRecorder

# Playbooks that are not stages of site.yml but run by name.
NAMED_PLAYBOOKS = {"rolling-update": "rolling_update.yml"}

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
class RunOptions:
    inventory: str | os.PathLike[str]
    playbook: str = "site"
    limit: str | None = None
    tags: str | None = None
    skip_tags: str | None = None
    check: bool = False
    diff: bool = False
    forks: int | None = None
    extravars: dict = field(default_factory=dict)
    vault_password_file: str | None = None


@dataclass
class RunResult:
    status: str
    rc: int
    run_dir: Path
    hosts: list[HostSummary] = field(default_factory=list)
    playbook: Path | str = ""
    inventory: Path | str = ""
    record: RunRecorder = field(default_factory=RunRecorder)
    elapsed: float = 0.0

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
    """`site`, a stage name, a named playbook (rolling-update), or a path to a playbook file."""
    stage_names = stages.load(project).names
    candidates = [Path(playbook)]
    if playbook == "site":
        candidates.insert(0, project / "site.yml")
    elif playbook in stage_names:
        candidates.insert(0, project / "playbooks" / f"{playbook}.yml")
    elif playbook in NAMED_PLAYBOOKS:
        candidates.insert(0, project / "playbooks" / NAMED_PLAYBOOKS[playbook])
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise UsageError(
        f"playbook {playbook!r} not found: expected 'site', a stage ({', '.join(stage_names)}) that exists under "
        f"{project / 'playbooks'}, {', '.join(NAMED_PLAYBOOKS)}, or a playbook file"
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


class CancelOnSignal:
    """Ctrl-C or SIGTERM asks ansible-runner to stop the run (its cancel_callback) instead of
    killing this process, so the summary of what ran is still written."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: dict[int, object] = {}

    def __call__(self) -> bool:
        return self.requested.is_set()

    def _handle(self, signum, _frame) -> None:
        self.requested.set()

    def __enter__(self) -> CancelOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def run_playbook(
    project: Path,
    options: RunOptions,
    event_handler: Callable[[dict], bool] | None = None,
    recorder: RunRecorder | None = None,
    cancel: Callable[[], bool] | None = None,
) -> RunResult:
    playbook_path = resolve_playbook(project, options.playbook)
    inventory_path = resolve_inventory(options.inventory)
    cmdline = [*(["--check"] if options.check else []), *(["--diff"] if options.diff else [])]
    if options.vault_password_file:
        vault_file = Path(options.vault_password_file).expanduser()
        if not vault_file.is_file():
            raise UsageError(f"vault password file not found: {vault_file}")
        cmdline += ["--vault-password-file", str(vault_file.resolve())]
    # A fresh private data dir per run keeps runs independent and their artifacts apart.
    run_dir = state_dir() / "runs" / f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    run_dir.mkdir(parents=True)
    recorder = recorder or RunRecorder()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="clusterforge-vars-") as private:
        if options.extravars:
            # Extra vars may hold secrets: hand them over in a private file, never on the command
            # line (ps, artifacts/<id>/command) or in the run directory.
            vars_file = Path(private) / "extravars.json"
            vars_file.touch(mode=0o600)
            vars_file.write_text(json.dumps(options.extravars))
            cmdline += ["--extra-vars", f"@{vars_file}"]
        runner = _run(
            project, options, run_dir, playbook_path, inventory_path, cmdline, recorder, event_handler, cancel
        )
    _scrub_command_files(run_dir)
    return RunResult(
        status=runner.status,
        rc=runner.rc,
        run_dir=run_dir,
        hosts=summarise(runner.stats),
        playbook=playbook_path,
        inventory=inventory_path,
        record=recorder,
        elapsed=time.monotonic() - started,
    )


def _run(project, options, run_dir, playbook_path, inventory_path, cmdline, recorder, event_handler, cancel):
    return ansible_runner.run(
        private_data_dir=str(run_dir),
        project_dir=str(project),
        playbook=str(playbook_path),
        inventory=str(inventory_path),
        limit=options.limit,
        tags=options.tags,
        skip_tags=options.skip_tags,
        forks=options.forks,
        cmdline=shlex.join(cmdline) or None,
        envvars=_ansible_environment(project),
        # Extra vars and environment may hold secrets: keep them out of the run directory.
        suppress_env_files=True,
        quiet=True,
        event_handler=event_handler or recorder,
        cancel_callback=cancel or (lambda: False),
    )


def _scrub_command_files(run_dir: Path) -> None:
    """ansible-runner records the whole process environment (tokens, cloud keys) next to the
    command line in artifacts/<id>/command; keep the variable names, drop their values."""
    for command_file in run_dir.glob("artifacts/*/command"):
        try:
            record = json.loads(command_file.read_text())
        except (OSError, ValueError):
            continue
        env = record.get("env")
        if isinstance(env, dict):
            record["env"] = dict.fromkeys(sorted(env), "<not recorded>")
            command_file.write_text(json.dumps(record))


def _ansible_environment(project: Path) -> dict[str, str]:
    # The venv's bin/ holds ansible-playbook even when the venv is not activated.
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        path = os.pathsep.join([bindir, path]) if path else bindir
    return {"ANSIBLE_CONFIG": str(project / "ansible.cfg"), "PATH": path, "ANSIBLE_NOCOLOR": "1"}
