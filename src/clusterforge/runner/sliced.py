"""`clusterforge run --slices N` and `--slice I/N`: a playbook over disjoint slices of the
inventory (clusterforge.runner.slices), each an ansible-playbook process of its own.

--slices N runs every slice at once, each in a worker process (forked: ansible-runner's process
supervision patches module state, which threads would share), and merges their results into one
run. The sliced run's directory holds the merged summary.json and junit.xml, and each slice's
own run directory (summary, JUnit, Ansible's artifacts) under slices/:

    <state>/runs/<id>/summary.json, junit.xml, slices/<id>-s1of3/{summary.json, junit.xml, artifacts/, ...}
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import time
from collections.abc import Callable
from pathlib import Path

from clusterforge.errors import EXIT_ENVIRONMENT, ClusterforgeError, EnvironmentProblem, UsageError
from clusterforge.runner import inventory as run_inventory
from clusterforge.runner import merge, slices
from clusterforge.runner import playbook as runner
from clusterforge.runner import report as run_report
from clusterforge.runner.process import CancelOnSignal, die_with
from clusterforge.runner.record import RunRecorder

SLICES_DIR = "slices"
# The hosts of a slice, the file `--limit @FILE` reads: in the slice's private run directory.
LIMIT_FILE = "slice-hosts.txt"
_POLL_S = 0.5


def plan(
    project: Path, options: runner.RunOptions, count: int, cancel: Callable[[], bool] = lambda: False
) -> list[list[str]]:
    """Each slice's hosts (index 0 is slice 1). Slices are made from the whole inventory, so a
    host's slice does not depend on --limit; --limit then takes from each the hosts it matches."""
    slices.check_count(count)
    inventory_path = run_inventory.resolve(options.inventory)
    inventory = slices.load_inventory(project, inventory_path, cancel=cancel)
    # More slices than hosts only adds empty ones (and a list per slice: 10**9 of them fill memory).
    if count > max(len(inventory.hosts), 1):
        raise UsageError(
            f"--slices {count}: the inventory {inventory_path} has {len(inventory.hosts)} hosts; "
            f"expected N from 1 to {max(len(inventory.hosts), 1)}"
        )
    assigned = slices.assign(inventory, count)
    if options.limit:
        wanted = set(slices.load_inventory(project, inventory_path, options.limit, cancel=cancel).hosts)
        assigned = [[host for host in hosts if host in wanted] for hosts in assigned]
    if not any(assigned):
        limited = f" and --limit {options.limit}" if options.limit else ""
        raise UsageError(f"no host to slice: the inventory {inventory_path}{limited} match no host")
    return assigned


def describe(index: int, count: int, hosts: int, result: runner.RunResult | None = None, error=None) -> dict:
    """A slice as the summaries name it: which, how many hosts, its run and how it ended."""
    entry: dict = {"slice": f"{index}/{count}", "index": index, "of": count, "hosts": hosts}
    if result is not None:
        entry.update(
            run_id=result.run_id,
            **run_report.paths(result),
            status=result.status,
            exit_code=result.exit_code,
            validation=run_report.validation(result),
        )
    if error is not None:
        entry.update(status="error", exit_code=getattr(error, "exit_code", EXIT_ENVIRONMENT), error=str(error))
    return entry


def run_one(
    project: Path,
    options: runner.RunOptions,
    index: int,
    hosts: list[str],
    count: int,
    run_dir: Path | None = None,
    **run_kwargs,
) -> runner.RunResult:
    """Slice `index` of `count` (its hosts given) as a run of its own; its record names the slice."""
    run_dir = run_dir or runner.new_run_dir()
    limit = slices.write_limit_file(run_dir / LIMIT_FILE, hosts)
    result = runner.run_playbook(project, dataclasses.replace(options, limit=limit), run_dir=run_dir, **run_kwargs)
    result.slices = [describe(index, count, len(hosts))]
    return result


def run_all(
    project: Path,
    options: runner.RunOptions,
    count: int,
    cancel: Callable[[], bool],
    say: Callable[[str], None] = lambda _text: None,
) -> merge.MergedRunResult:
    """Every non-empty slice at once; their merged result, written like a single run's."""
    runner.resolve_playbook(project, options.playbook)  # a wrong name is refused once, here
    assigned = plan(project, options, count, cancel)
    started = time.monotonic()
    run_dir = runner.new_run_dir()
    (run_dir / SLICES_DIR).mkdir(mode=0o700)
    context = multiprocessing.get_context("fork")
    waiting: dict[multiprocessing.connection.Connection, tuple[int, multiprocessing.Process, int]] = {}
    for index, hosts in enumerate(assigned, start=1):
        if not hosts:
            say(f"slice {index}/{count}: no host, not run")
            continue
        slice_dir = run_dir / SLICES_DIR / f"{run_dir.name}-s{index}of{count}"
        slice_dir.mkdir(mode=0o700)
        receive, send = context.Pipe(duplex=False)
        worker = context.Process(
            target=_work,
            args=(project, options, index, hosts, count, slice_dir, send, os.getpid()),
            name=f"clusterforge slice {index}/{count}",
        )
        worker.start()
        send.close()
        waiting[receive] = (index, worker, len(hosts))
        say(f"slice {index}/{count}: {len(hosts)} hosts, {slice_dir}")
    outcomes = _collect(waiting, count, cancel, say)
    results = [result for _index, _hosts, result, _error in outcomes if result is not None]
    entries = [describe(index, count, hosts, result, error) for index, hosts, result, error in outcomes]
    ran = {entry["index"] for entry in entries}
    empty = [{**describe(index, count, 0), "status": "no host"} for index in range(1, count + 1) if index not in ran]
    entries = sorted(entries + empty, key=lambda entry: entry["index"])
    if not results:
        raise next(error for *_rest, error in outcomes if error is not None)
    error_codes = [getattr(error, "exit_code", EXIT_ENVIRONMENT) for *_rest, error in outcomes if error is not None]
    return merge.merge(results, run_dir, options, time.monotonic() - started, entries, error_codes)


def _collect(waiting, count, cancel, say) -> list[tuple[int, int, runner.RunResult | None, Exception | None]]:
    """Each slice's (index, hosts, result, error) as it ends, in slice order; on cancel, every
    worker is asked to stop (they cancel their ansible-playbook as a single run does)."""
    found = []
    asked_to_stop = False
    while waiting:
        for receive in multiprocessing.connection.wait(list(waiting), timeout=_POLL_S):
            index, worker, hosts = waiting.pop(receive)
            try:
                result, error = receive.recv()
            except (EOFError, OSError):
                worker.join()  # its exit status, for the error
                result = None
                status = worker.exitcode
                error = EnvironmentProblem(f"slice {index}/{count} ended without a result (exit status {status})")
            receive.close()
            worker.join()
            found.append((index, hosts, result, error))
            said = f"{result.status}, exit code {result.exit_code}" if result is not None else f"error: {error}"
            say(f"slice {index}/{count} done: {said}")
        if cancel() and not asked_to_stop:
            asked_to_stop = True
            for _index, worker, _hosts in waiting.values():
                worker.terminate()  # SIGTERM: the worker's CancelOnSignal
    return sorted(found, key=lambda item: item[0])


def _work(project, options, index, hosts, count, run_dir, send, parent) -> None:
    """In the worker: the slice's run and its own record; (result, error) back to the parent."""
    die_with(parent)  # a worker left alone would run on unseen
    result = error = None
    try:
        with CancelOnSignal() as cancel:
            result = run_one(project, options, index, hosts, count, run_dir, recorder=RunRecorder(), cancel=cancel)
        run_report.write(result)
    except ClusterforgeError as exc:
        error = exc
    except Exception as exc:  # reported as the slice's error; the other slices go on
        error = EnvironmentProblem(f"slice {index}/{count}: {type(exc).__name__}: {exc}")
    send.send((result, error))
    send.close()
