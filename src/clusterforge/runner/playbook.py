"""Run a playbook through ansible-runner's Python interface and sum up every host."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner

from clusterforge import stages
from clusterforge.errors import (
    EXIT_ENVIRONMENT,
    EXIT_HOSTS_FAILED,
    EXIT_HOSTS_UNREACHABLE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
)
from clusterforge.runner import artifacts, extravars, mitogen, quiet, runs
from clusterforge.runner import inventory as run_inventory
from clusterforge.runner.process import Supervisor
from clusterforge.runner.record import RunRecorder
from clusterforge.text import plain

# Playbooks that are not stages of site.yml but run by name.
NAMED_PLAYBOOKS = {"rolling-update": "rolling_update.yml", "acceptance": "acceptance.yml"}

# How often the run checks for a Ctrl-C or SIGTERM while ansible-playbook prints nothing.
CANCEL_POLL_S = 0.25
# pexpect's exit status when ansible-playbook could not be started.
_RC_NOT_FOUND = 127
# ansible-core refuses to start without a UTF-8 locale (LC_ALL=C): a machine problem.
_LOCALE_ERROR = "requires the locale encoding to be UTF-8"
_ERROR_PREFIXES = ("[ERROR]", "ERROR")
_NOTICE_PREFIXES = ("[WARNING]", "skipping:")
_MAX_ERROR_LINES = 40

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
    # -e values as ansible-playbook takes them (see extravars.check), then clusterforge's own.
    extra_vars: list[str] = field(default_factory=list)
    clusterforge_vars: dict = field(default_factory=dict)
    vault_password_file: str | None = None
    # Mitogen's linear strategy instead of Ansible's (opt-in; see runner.mitogen and docs/performance.md).
    mitogen: bool = False
    # clusterforge's opt-in accelerations (plugins/callback/accelerate.py), on for this run.
    accelerate: bool = False


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
    # Ansible's own output when it stopped before any host ran (a syntax error, a --limit
    # matching nothing, an unusable locale).
    ansible_output: str = ""
    options: RunOptions | None = None
    # A sliced run (clusterforge.runner.sliced): one entry per slice, or this slice's own.
    slices: list[dict] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        """The run's one id: its directory's name, and its validation run's id too."""
        return self.run_dir.name

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
        if self.failed_hosts:
            return EXIT_HOSTS_FAILED
        if not self.hosts:
            return EXIT_ENVIRONMENT if self.machine_problem else EXIT_USAGE
        if self.rc != 0 or self.status != "successful":
            return EXIT_HOSTS_FAILED
        return EXIT_OK

    @property
    def machine_problem(self) -> bool:
        """ansible-playbook could not start (not installed) or refused this machine's locale."""
        return self.rc == _RC_NOT_FOUND or _LOCALE_ERROR in self.ansible_output

    @property
    def no_host_reason(self) -> str:
        """Why no host ran, for a run that ran none."""
        if self.hosts or self.status in ("canceled", "timeout"):
            return ""
        if self.rc == 0:
            tags = self.options and (self.options.tags or self.options.skip_tags)
            if tags and self.record.plays_with_hosts > 0 and self.record.tasks_started == 0:
                given = " ".join(
                    f"{flag} {value}"
                    for flag, value in (("--tags", self.options.tags), ("--skip-tags", self.options.skip_tags))
                    if value
                )
                return f"no task matched the tags: the plays matched hosts, but {given} selected none of their tasks"
            return "no host matched: the inventory has no hosts, or none in the playbook's hosts and --limit"
        return f"ansible-playbook stopped before any host ran (exit status {self.rc})"


def resolve_playbook(project: Path, playbook: str) -> Path:
    """`site`, a stage name, a named playbook (rolling-update), or a path to a playbook file."""
    stage_names = stages.load(project).names
    candidates = [Path(playbook)]
    if playbook == "site":
        candidates.insert(0, project / "site.yml")
    elif playbook in stage_names:
        candidates.insert(0, project / "playbooks" / f"{playbook}.yml")
    elif playbook in NAMED_PLAYBOOKS or playbook in NAMED_PLAYBOOKS.values():
        # `acceptance` or `acceptance.yml`: the file under playbooks/ (before one in the current directory).
        candidates.insert(0, project / "playbooks" / NAMED_PLAYBOOKS.get(playbook, playbook))
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise UsageError(
        f"playbook {playbook!r} not found: expected 'site', a stage ({', '.join(stage_names)}) that exists under "
        f"{project / 'playbooks'}, {', '.join(NAMED_PLAYBOOKS)}, or a playbook file"
    )


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
    options: RunOptions,
    event_handler: Callable[[dict], bool] | None = None,
    recorder: RunRecorder | None = None,
    cancel: Callable[[], bool] | None = None,
    run_dir: Path | None = None,
) -> RunResult:
    """run_dir: a new, empty directory for the run (a slice's, under its sliced run); by default
    a new one under the state directory."""
    playbook_path = resolve_playbook(project, options.playbook)
    inventory_path = run_inventory.resolve(options.inventory)
    cmdline = [*(["--check"] if options.check else []), *(["--diff"] if options.diff else [])]
    if options.vault_password_file:
        vault_file = Path(options.vault_password_file).expanduser()
        if not vault_file.is_file():
            raise UsageError(f"vault password file not found: {vault_file}")
        cmdline += ["--vault-password-file", str(vault_file.resolve())]
    run_dir = run_dir or new_run_dir()
    recorder = recorder or RunRecorder()
    recorder.expected_tasks = runs.previous_task_count(
        run_dir, runs.options_key(options, playbook_path, inventory_path)
    )
    supervisor = Supervisor(cancel)
    started = time.monotonic()
    # Extra vars may hold secrets: they go in files inside the private run directory, removed
    # after the run, never on the command line (ps, artifacts/<id>/command).
    vars_dir = run_dir / "extravars"
    vars_dir.mkdir(mode=0o700)
    try:
        cmdline += extravars.write(
            options.extra_vars, options.clusterforge_vars, vars_dir, defaults=runs.validation_defaults(run_dir)
        )
        with supervisor.spawning():
            runner = _run(
                project,
                options,
                run_dir,
                playbook_path,
                inventory_path,
                cmdline,
                recorder,
                event_handler,
                supervisor.cancel_callback,
            )
    finally:
        shutil.rmtree(vars_dir, ignore_errors=True)
    artifacts.scrub(run_dir)
    artifacts.make_private(run_dir)
    hosts = summarise(runner.stats)
    return RunResult(
        # ansible-playbook may end on its own while it is being cancelled.
        status="canceled" if supervisor.canceled else runner.status,
        rc=runner.rc,
        run_dir=run_dir,
        hosts=hosts,
        playbook=playbook_path,
        inventory=inventory_path,
        record=recorder,
        elapsed=time.monotonic() - started,
        ansible_output="" if hosts else _ansible_output(run_dir),
        options=options,
    )


def new_run_dir() -> Path:
    """A fresh directory per run keeps runs apart; private, as what runs write can hold secrets.
    Named in UTC, like the times in summary.json."""
    root = runs.runs_dir()
    run_dir = root / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    run_dir.mkdir(mode=0o700)
    return run_dir


def _run(project, options, run_dir, playbook_path, inventory_path, cmdline, recorder, event_handler, cancel):
    _write_settings(run_dir)
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
        envvars=_ansible_environment(project, options.mitogen, options.accelerate),
        # Extra vars and environment may hold secrets: keep them out of the run directory.
        suppress_env_files=True,
        quiet=True,
        event_handler=event_handler or recorder,
        cancel_callback=cancel,
        # ansible-runner points Ansible's fact cache at the run's artifacts (kept with every run,
        # forever, whatever was gathered) unless told not to: then ansible.cfg's cache applies, the
        # one plain ansible-playbook uses, with its lifetime (fact_caching_timeout).
        fact_cache_type="ansible.cfg",
    )


def _write_settings(run_dir: Path) -> None:
    """ansible-runner asks cancel_callback only between reads of the output, at most
    pexpect_timeout (5 s by default) apart: a Ctrl-C then waited up to 5 s while new tasks
    started. A quarter of a second stops a run well within 1 s of the signal. It is set in
    env/settings: ansible-runner 2.4 drops a `settings` argument when that file is missing."""
    env_dir = run_dir / "env"
    env_dir.mkdir(mode=0o700, exist_ok=True)
    (env_dir / "settings").write_text(f"pexpect_timeout: {CANCEL_POLL_S}\n")


def _ansible_output(run_dir: Path) -> str:
    """What ansible-playbook said about stopping: from its first error on, or its warnings and
    skipped plays when it stopped without an error ("no hosts matched")."""
    text = "".join(plain(path.read_text(errors="replace")) for path in sorted(run_dir.glob("artifacts/*/stdout")))
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    first_error = next((i for i, line in enumerate(lines) if line.startswith(_ERROR_PREFIXES)), None)
    if first_error is None:
        lines = [line for line in lines if line.startswith(_NOTICE_PREFIXES)]
    return "\n".join(lines[first_error or 0 :][:_MAX_ERROR_LINES])


def _ansible_environment(project: Path, use_mitogen: bool = False, accelerate: bool = False) -> dict[str, str]:
    # The venv's bin/ holds ansible-playbook even when the venv is not activated.
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        path = os.pathsep.join([bindir, path]) if path else bindir
    # ansible-runner sets ANSIBLE_CALLBACK_PLUGINS to its own directory, which would hide
    # ansible.cfg's callback_plugins: name the project's here, and it appends its own.
    callbacks = os.pathsep.join(
        filter(None, [str(project / "plugins/callback"), os.environ.get("ANSIBLE_CALLBACK_PLUGINS")])
    )
    env = {
        "ANSIBLE_CONFIG": str(project / "ansible.cfg"),
        "ANSIBLE_CALLBACK_PLUGINS": callbacks,
        "PATH": path,
        "ANSIBLE_NOCOLOR": "1",
        "PYTHONWARNINGS": quiet.pythonwarnings(os.environ.get("PYTHONWARNINGS")),
    }
    # ansible-runner turns host key checking off unless the environment names it, overriding
    # ansible.cfg's host_key_checking = True: keep ansible.cfg's choice (or the user's own).
    if "ANSIBLE_HOST_KEY_CHECKING" not in os.environ:
        env["ANSIBLE_HOST_KEY_CHECKING"] = _config_value(project, "host_key_checking", "True")
    if accelerate:
        env["CLUSTERFORGE_ACCELERATE"] = "1"  # read by the accelerate callback, as for ansible-playbook
    return {**env, **mitogen.environment()} if use_mitogen else env


def _config_value(project: Path, key: str, default: str) -> str:
    """A [defaults] setting of the project's ansible.cfg, as written there."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(project / "ansible.cfg")
    return parser.get("defaults", key, fallback=default)
