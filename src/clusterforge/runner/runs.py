"""Where runs live: one directory per run under the state directory, named by the run's id, that
holds the run's summary, JUnit XML, Ansible's artifacts and, for a validation run, its results:

    <state>/runs/<id>/summary.json, junit.xml, artifacts/, validation/<id>/<host>.json, report/

`clusterforge run` hands playbooks/validate.yml that results directory and id (as defaults an
`-e clusterforge_report_dir=... -e clusterforge_validation_run_id=...` overrides)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from clusterforge.errors import UsageError
from clusterforge.paths import state_dir

SUMMARY = "summary.json"
VALIDATION = "validation"
REPORT = "report"
# How many earlier runs are read for the task count of the same playbook.
_LOOKBACK = 30
_MAX_SUMMARY_BYTES = 8 * 1024 * 1024


def runs_dir() -> Path:
    root = state_dir() / "runs"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def validation_defaults(run_dir: Path) -> dict[str, str]:
    """validate.yml writes to <report dir>/<run id>: here <run dir>/validation/<run dir's name>."""
    return {
        "clusterforge_report_dir": str(run_dir / VALIDATION),
        "clusterforge_validation_run_id": run_dir.name,
    }


def options_key(options: Any, playbook: Path, inventory: Path) -> dict[str, Any]:
    """What makes two runs run the same tasks, as far as clusterforge can tell."""
    return {
        "playbook": str(playbook),
        "inventory": str(inventory),
        "limit": options.limit,
        "tags": options.tags,
        "skip_tags": options.skip_tags,
        "check": options.check,
    }


def _read_summary(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / SUMMARY
    try:
        if path.is_symlink() or path.stat().st_size > _MAX_SUMMARY_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _newest_first(exclude: Path | None = None) -> list[Path]:
    try:
        entries = [p for p in runs_dir().iterdir() if p.is_dir() and not p.is_symlink() and p != exclude]
    except OSError:
        return []
    # Run ids start with their UTC start time.
    return sorted(entries, key=lambda p: p.name, reverse=True)


def previous_task_count(run_dir: Path, key: dict[str, Any]) -> int:
    """Tasks the last finished run with the same options ran (0 when there is none): the N of
    the live panel's "task n/N", an estimate as conditions and includes may differ."""
    for other in _newest_first(exclude=run_dir)[:_LOOKBACK]:
        summary = _read_summary(other)
        if summary and summary.get("options") == key and summary.get("status") in ("successful", "failed"):
            count = summary.get("tasks_run")
            return count if isinstance(count, int) and count > 0 else 0
    return 0


def results_dir_of(run_dir: Path) -> Path | None:
    """The validation results of a run directory: what its summary names, else validation/<id>."""
    summary = _read_summary(run_dir) or {}
    named = (
        (summary.get("validation") or {}).get("results_dir") if isinstance(summary.get("validation"), dict) else None
    )
    candidates = [Path(named)] if isinstance(named, str) else []
    candidates.append(run_dir / VALIDATION / run_dir.name)
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    return None


def latest_validation() -> tuple[Path, Path]:
    """(run dir, results dir) of the newest run that has validation results."""
    for run_dir in _newest_first():
        results = results_dir_of(run_dir)
        if results is not None:
            return run_dir, results
    raise UsageError(
        f"no run with validation results under {runs_dir()} (run `clusterforge run validate` first, "
        "or name a results directory)"
    )


def resolve_results(given: str) -> tuple[Path | None, Path]:
    """(run dir or None, results dir) for `clusterforge report DIR`: DIR is a results directory,
    or a run directory of `clusterforge run` that holds one."""
    path = Path(given).expanduser()
    if (path / SUMMARY).is_file() and not any(p for p in path.glob("*.json") if p.name != SUMMARY):
        results = results_dir_of(path)
        if results is not None:
            return path, results
    parent = path.resolve().parent.parent if path.exists() else None
    if parent is not None and path.resolve().parent.name == VALIDATION and (parent / SUMMARY).is_file():
        return parent, path
    return None, path


def validation_counts(results_dir: str | os.PathLike[str]) -> dict[str, int] | None:
    """Checks per status in a validation results directory, and how many of the skipped say
    "no hardware"; None when the directory cannot be read as one."""
    try:
        from clusterforge.validation.report import load_run

        run = load_run(results_dir)
    except (UsageError, OSError, ValueError, KeyError, TypeError):
        return None
    counts = {"pass": 0, "warn": 0, "fail": 0, "skipped": 0, "skipped_no_hardware": 0, "replayed": 0}
    for node in run.nodes:
        for check in node.checks:
            counts[check.status] = counts.get(check.status, 0) + 1
            if check.status == "skipped" and "no hardware" in (check.message or ""):
                counts["skipped_no_hardware"] += 1
            counts["replayed"] += check.replayed  # judged from recorded outputs, not measured
    counts["nodes"] = len(run.nodes)
    counts["nodes_failed"] = sum(1 for node in run.nodes if node.status in ("fail", "unreachable"))
    return counts


def default_report_dir(run_dir: Path) -> Path:
    """Where `clusterforge report` writes a run's report when -o is not given: report/ in the
    run's directory."""
    return run_dir / REPORT
