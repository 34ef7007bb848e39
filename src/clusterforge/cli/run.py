"""`clusterforge run`: a playbook on an inventory, with progress, artifacts and CI exit codes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from clusterforge import stages
from clusterforge.cli.tables import print_table
from clusterforge.errors import EXIT_OK, UsageError
from clusterforge.paths import project_dir
from clusterforge.runner import extravars, mitogen, present, sliced, slices
from clusterforge.runner import playbook as runner
from clusterforge.runner import report as run_report
from clusterforge.runner.process import CancelOnSignal
from clusterforge.runner.progress import change_title, choose
from clusterforge.runner.record import RunRecorder
from clusterforge.text import plain

console = Console()


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    registry = _registry_for_help()
    run = subparsers.add_parser("run", help="run site.yml, a stage or rolling-update on an inventory")
    run.add_argument(
        "playbook",
        nargs="?",
        default="site",
        help=f"site (default), a stage ({', '.join(registry.names) if registry else 'see ' + str(stages.REGISTRY)}), "
        f"{', '.join(runner.NAMED_PLAYBOOKS)}, or a playbook file",
    )
    run.add_argument("-i", "--inventory", help="topology file, inventory file or directory (default: the lab's)")
    run.add_argument("--lab", default="lab", help="lab whose inventory is the default")
    run.add_argument("-l", "--limit", help="limit to a host pattern")
    run.add_argument("-t", "--tags", help="only tasks with these tags (comma-separated)")
    run.add_argument("--skip-tags", help="skip tasks with these tags")
    run.add_argument("-C", "--check", action="store_true", help="check mode: change nothing")
    run.add_argument("-D", "--diff", action="store_true", help="show file differences")
    run.add_argument("-f", "--forks", type=int, help="parallel hosts (default from ansible.cfg)")
    run.add_argument(
        "-e",
        "--extra-var",
        action="append",
        default=[],
        metavar="VARS",
        help="extra variables as ansible-playbook takes them: KEY=VALUE ..., inline JSON or YAML "
        "('{\"a\": 1}', '{a: [1, 2]}'), or @FILE (repeatable; later ones win)",
    )
    run.add_argument("--vault-password-file", help="file holding the Ansible Vault password")
    run.add_argument("--json", action="store_true", help="print the run summary as JSON, no progress display")
    run.add_argument(
        "--mitogen",
        action="store_true",
        help="Mitogen's linear strategy instead of Ansible's "
        "(pip install 'clusterforge[mitogen]'; see docs/performance.md)",
    )
    run.add_argument(
        "--accelerate",
        action="store_true",
        help="turn on the opt-in accelerations (jinja_code_cache; they wrap ansible-core internals), "
        "as CLUSTERFORGE_ACCELERATE=1 does for ansible-playbook; -v says which are on",
    )
    slicing = run.add_argument_group("fleet scale: disjoint slices of the inventory, see docs/performance.md")
    sliced_options = slicing.add_mutually_exclusive_group()
    sliced_options.add_argument(
        "--slices",
        type=int,
        metavar="N",
        help="run N ansible-playbook processes at once, each on a slice of the inventory, and merge their results",
    )
    sliced_options.add_argument(
        "--slice", metavar="I/N", help="run slice I of N alone (one CI runner per slice), with a run record of its own"
    )
    rolling = run.add_argument_group("rolling-update")
    rolling.add_argument(
        "--stage",
        help="stage to roll out batch by batch (rolling-update; "
        + (
            f"one of {', '.join(registry.rollable)}, default {registry.rolling_update_default_stage})"
            if registry
            else f"default from {stages.REGISTRY})"
        ),
    )
    rolling.add_argument("--serial", help="batch size, a count or a percentage (rolling-update; default 10%%)")
    rolling.add_argument(
        "--max-fail-percentage",
        type=int,
        help="failed hosts a batch may have before the roll stops (rolling-update; default 0)",
    )
    run.add_argument("--project-dir", help="clusterforge checkout holding site.yml and roles/")
    return run


def _registry_for_help() -> stages.Registry | None:
    """The stages to name in --help; the parser is built before --project-dir is read, so this is
    the project found from the current directory or the install, or none (help without the list)."""
    try:
        return stages.load(project_dir())
    except UsageError:
        return None


def run(args: argparse.Namespace) -> int:
    from clusterforge.lab import cluster

    project = project_dir(args.project_dir)
    inventory = args.inventory
    if inventory is None:
        inventory = cluster.inventory_path(args.lab)
        if not inventory.exists():
            raise UsageError(
                f"no inventory given and lab {args.lab!r} is not up: run `clusterforge lab up` or pass -i INVENTORY"
            )
    if args.forks is not None and args.forks < 1:
        raise UsageError(f"--forks {args.forks}: expected a positive number")
    options = runner.RunOptions(
        inventory=inventory,
        playbook=args.playbook,
        limit=args.limit,
        tags=args.tags,
        skip_tags=args.skip_tags,
        check=args.check,
        diff=args.diff,
        forks=args.forks,
        extra_vars=extravars.check(args.extra_var),
        clusterforge_vars=_rolling_vars(args, project),
        vault_password_file=args.vault_password_file,
        mitogen=args.mitogen,
        accelerate=args.accelerate,
    )
    if args.mitogen:
        mitogen.environment()  # not installed: a usage error before anything runs
    result = _run_sliced(args, project, options) if args.slices is not None else _run_one(args, project, options)
    if result is None:
        return EXIT_OK
    summary_path, junit_path = run_report.write(result)
    if args.json:
        # The summary.json just written: schema, run id, paths (summary, junit, artifacts), hosts.
        print(json.dumps(run_report.summary(result), indent=2))
    else:
        _print_summary(result, summary_path, junit_path)
    if result.no_host_reason:
        _print_no_host_error(result)
    return result.exit_code


def _run_one(args: argparse.Namespace, project: Path, options: runner.RunOptions) -> runner.RunResult | None:
    """The playbook as one ansible-playbook process: on the inventory, or on slice I/N of it
    (None for a slice without hosts: nothing to run)."""
    piece = slices.parse_slice(args.slice) if args.slice is not None else None
    recorder = RunRecorder()
    show_changes = args.check or args.diff
    with CancelOnSignal() as cancel:
        hosts = sliced.plan(project, options, piece[1], cancel)[piece[0] - 1] if piece else None
        if piece and not hosts:
            Console(stderr=True).print(
                f"clusterforge: slice {args.slice} holds no host: nothing to run", highlight=False
            )
            return None
        with choose(recorder, console, args.json, show_changes) as progress:
            kwargs = {"event_handler": progress, "recorder": recorder, "cancel": cancel}
            if piece:
                return sliced.run_one(project, options, piece[0], hosts, piece[1], **kwargs)
            return runner.run_playbook(project, options, **kwargs)


def _run_sliced(args: argparse.Namespace, project: Path, options: runner.RunOptions) -> runner.RunResult:
    """N slices at once; a line as each starts and ends (their progress is in their artifacts)."""
    slices.check_count(args.slices)

    def say(text: str) -> None:
        if not args.json:
            _print_line(("slices ", "dim"), text)

    with CancelOnSignal() as cancel:
        return sliced.run_all(project, options, args.slices, cancel, say)


def _rolling_vars(args: argparse.Namespace, project: Path) -> dict:
    given = {
        "rolling_update_stage": args.stage,
        "rolling_update_serial": args.serial,
        "rolling_update_max_fail_percentage": args.max_fail_percentage,
    }
    given = {key: value for key, value in given.items() if value is not None}
    if given and args.playbook != "rolling-update":
        raise UsageError("--stage, --serial and --max-fail-percentage apply to `clusterforge run rolling-update`")
    if args.stage is not None:
        # Refused here, before any host is touched; the playbook checks the same for plain Ansible.
        stages.load(project).rollable_stage(args.stage)
    return given


def _print_summary(result: runner.RunResult, summary_path: Path, junit_path: Path) -> None:
    """The hosts' counts, each failure once, what changed (with --check or --diff), the validation's
    verdict and where every file is, each path whole on a line of its own."""
    # Host, play and task names and messages come from hosts and playbooks: never markup.
    table = Table(title=f"run {escape(result.status)}")
    columns = ("host", "ok", "changed", "failed", "unreachable", "skipped", "rescued", "ignored")
    for column in columns:
        table.add_column(column, justify="left" if column == "host" else "right")
    for host in result.hosts:
        table.add_row(*(_count_cell(column, getattr(host, column)) for column in columns))
    if result.hosts:  # else the error says why no host ran
        print_table(console, table)
    options = result.options
    if options is not None and (options.check or options.diff):
        _print_changes(result, with_diff=options.diff)
    for host, record in sorted(result.record.hosts.items()):
        for failure in record.failed_tasks:
            message = present.failure_text(host, failure["message"], record.gpus)
            _print_line(("failed ", "bold red"), (f"{host}: ", "bold"), f"{failure['task']}: {message}")
        if record.unreachable:
            _print_line(("unreachable ", "bold red"), (f"{host}: ", "bold"), record.unreachable)
    _print_line(*_totals(result))
    validation = run_report.validation(result)
    if validation:
        _print_validation(validation)
    _print_line(("run ", "dim"), result.run_id)
    for entry in result.slices if len(result.slices) > 1 else ():
        where = present.home(entry.get("run_dir")) if entry.get("run_dir") else entry.get("error", "")
        _print_line((f"slice {entry['slice']:<6}", "dim"), f"{entry['hosts']} hosts, {entry['status']}: {where}")
    for label, path in (("artifacts", result.run_dir), ("summary", summary_path), ("junit", junit_path)):
        _print_line((f"{label:<10}", "dim"), present.home(path))
    if validation:
        _print_line((f"{'results':<10}", "dim"), present.home(validation["results_dir"]))


def _count_cell(column: str, value) -> Text:
    if column == "host" or not value:
        return Text(str(value))
    style = {"failed": "bold red", "unreachable": "bold red", "changed": "yellow", "ok": "green"}.get(column, "")
    return Text(str(value), style=style)


def _totals(result: runner.RunResult) -> list:
    """ "hosts: 3  failed: 1  unreachable: 0  changed tasks: 2", the non-zero bad counts in colour."""
    failed, unreachable, changed = len(result.failed_hosts), len(result.unreachable_hosts), result.changed_tasks
    return [
        f"hosts: {len(result.hosts)}  failed: ",
        (str(failed), "bold red" if failed else ""),
        "  unreachable: ",
        (str(unreachable), "bold red" if unreachable else ""),
        "  changed tasks: ",
        (str(changed), "yellow" if changed else ""),
    ]


def _print_changes(result: runner.RunResult, with_diff: bool) -> None:
    """Per host, each task (and item) that changed or would change, with its diff."""
    verb = "would change" if result.options and result.options.check else "changed"
    for host, record in sorted(result.record.hosts.items()):
        if not record.changes:
            continue
        _print_line((f"{verb} ", "yellow"), (f"{host}", "bold"), f" ({len(record.changes)})")
        for change in record.changes:
            _print_line("  ", change_title(change))
            if with_diff and change["diff"]:
                for line in plain(change["diff"]).splitlines():
                    style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
                    _print_line(("    " + line, style))


def _print_validation(validation: dict) -> None:
    """validation: 12 pass, 1 fail, 30 skipped (28 no hardware) -> clusterforge report DIR -o OUT"""
    counts = validation["counts"]
    if counts is None:
        verdict = [("results unreadable", "bold red")]
    else:
        verdict = [(f"{counts['pass']} pass", "green"), ", "]
        if counts["warn"]:
            verdict += [(f"{counts['warn']} warn", "yellow"), ", "]
        verdict += [(f"{counts['fail']} fail", "bold red" if counts["fail"] else ""), ", "]
        skipped = f"{counts['skipped']} skipped"
        if counts["skipped_no_hardware"] == counts["skipped"] and counts["skipped"]:
            skipped += " (no hardware)"
        elif counts["skipped_no_hardware"]:
            skipped += f" ({counts['skipped_no_hardware']} no hardware)"
        verdict.append(skipped)
        replayed = counts.get("replayed", 0)
        if replayed:
            from clusterforge.validation.host_verdict import verdicts  # loaded already to count them

            total = sum(counts[status] for status in ("pass", "warn", "fail", "skipped"))
            verdict.append((f", {'all' if replayed == total else replayed} {verdicts.REPLAYED}", "bold yellow"))
    command = (
        f"clusterforge report {present.home(validation['report_source'])} -o {present.home(validation['report_dir'])}"
    )
    _print_line(("validation: ", "bold"), *verdict, " -> ", command)


def _print_line(*parts) -> None:
    """Text pieces (str or (str, style)) as one line: never markup, no escape sequences, and not
    wrapped by Rich (a path stays whole for copying)."""
    text = Text.assemble(*((plain(p), "") if isinstance(p, str) else (plain(p[0]), p[1]) for p in parts))
    console.print(text, highlight=False, soft_wrap=True)


def _shown(untrusted: str) -> str:
    """Text from a host or a playbook, for a markup string: no markup, no escape sequences."""
    return escape(plain(untrusted))


def _print_no_host_error(result: runner.RunResult) -> None:
    """A run that ran no host is an error, with Ansible's own words on stderr, even with --json."""
    errors = Console(stderr=True)
    errors.print(Text.assemble(("clusterforge: error: ", "bold red"), result.no_host_reason), soft_wrap=True)
    if result.ansible_output:
        errors.print(Text(result.ansible_output), highlight=False, soft_wrap=True)
