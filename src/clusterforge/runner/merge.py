"""One run out of the slices of a sliced run: every host's record, the tasks' counts summed, and
the worst exit code. The summary, JUnit XML and console report are then made from the merged
run by the same code as for a single run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterforge.errors import (
    EXIT_ENVIRONMENT,
    EXIT_HOSTS_FAILED,
    EXIT_HOSTS_UNREACHABLE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
)
from clusterforge.runner.playbook import RunOptions, RunResult
from clusterforge.runner.record import RunRecorder, TaskRecord

# Exit codes, worst first: the order in which RunResult.exit_code tests for them. A code not
# listed (none is expected) counts as the worst.
_EXIT_RANK = (EXIT_INTERRUPTED, EXIT_HOSTS_UNREACHABLE, EXIT_HOSTS_FAILED, EXIT_ENVIRONMENT, EXIT_USAGE, EXIT_OK)
# ansible-runner's statuses, worst first.
_STATUS_RANK = ("canceled", "timeout", "failed", "successful")


def worst_exit_code(codes: list[int]) -> int:
    """The exit code of runs taken together: the worst of theirs (none: a usage error)."""
    if not codes:
        return EXIT_USAGE
    return min(codes, key=lambda code: _EXIT_RANK.index(code) if code in _EXIT_RANK else -1)


def slices_exit_code(results: list[RunResult]) -> int:
    """The worst exit code of the slices, where a slice that matched no host of the playbook (a
    slice of infrastructure only, for a play of compute nodes) counts as fine when another ran hosts."""
    ran_hosts = any(result.hosts for result in results)
    return worst_exit_code(
        [
            result.exit_code
            for result in results
            if not (ran_hosts and not result.hosts and result.rc == 0 and result.status == "successful")
        ]
    )


def worst_status(statuses: list[str]) -> str:
    return min(statuses, key=lambda s: _STATUS_RANK.index(s) if s in _STATUS_RANK else 0, default="failed")


@dataclass
class MergedRunResult(RunResult):
    """A sliced run: its exit code is the worst of its slices', not re-derived from the merge."""

    combined_exit_code: int = EXIT_OK

    @property
    def exit_code(self) -> int:
        return self.combined_exit_code


def merge(
    results: list[RunResult],
    run_dir: Path,
    options: RunOptions,
    elapsed: float,
    slices: list[dict],
    error_codes: list[int] | None = None,
) -> MergedRunResult:
    """The slices' results (disjoint hosts) as one run in run_dir; error_codes: the exit codes of
    slices that ended without a result, which count towards the worst."""
    first = results[0]
    hosts = sorted((host for result in results for host in result.hosts), key=lambda h: h.host)
    return MergedRunResult(
        status=worst_status([result.status for result in results]),
        rc=next((result.rc for result in results if result.rc), 0),
        run_dir=run_dir,
        hosts=hosts,
        playbook=first.playbook,
        inventory=first.inventory,
        record=merge_records([result.record for result in results]),
        elapsed=elapsed,
        ansible_output="" if hosts else "\n".join(filter(None, (r.ansible_output for r in results))),
        options=options,
        slices=slices,
        combined_exit_code=worst_exit_code([slices_exit_code(results), *(error_codes or [])]),
    )


def merge_records(records: list[RunRecorder]) -> RunRecorder:
    """Hosts, messages and totals of all; a task run by several slices once, with their outcomes."""
    merged = RunRecorder(started=min((record.started for record in records), default=0.0))
    for record in records:
        merged.hosts.update(record.hosts)
        merged.messages.extend(record.messages)
        for key, value in record.totals.items():
            merged.totals[key] = merged.totals.get(key, 0) + value
        merged.failed_checks += record.failed_checks
        merged.plays_with_hosts += record.plays_with_hosts
    merged.tasks = merge_tasks([record.tasks for record in records])
    merged.tasks_started = len(merged.tasks)
    merged.finished = all(record.finished for record in records)
    return merged


def merge_tasks(task_lists: list[list[TaskRecord]]) -> list[TaskRecord]:
    """The n-th run of a (play, task) in each slice is one task: its hosts' outcomes joined, from
    the first start to the last end. Tasks in the order first seen."""
    merged: dict[tuple[str, str, int], TaskRecord] = {}
    for tasks in task_lists:
        seen: dict[tuple[str, str], int] = {}
        for task in tasks:
            nth = seen[(task.play, task.name)] = seen.get((task.play, task.name), 0) + 1
            key = (task.play, task.name, nth)
            into = merged.get(key)
            if into is None:
                into = merged[key] = TaskRecord(len(merged) + 1, task.play, task.name, task.started, task.ended)
            else:
                into.started = min(into.started, task.started)
                into.ended = None if into.ended is None or task.ended is None else max(into.ended, task.ended)
            into.hosts_started |= task.hosts_started
            into.outcomes.update(task.outcomes)
    return list(merged.values())
