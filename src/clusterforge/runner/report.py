"""Artifacts a CI system reads: summary.json and a JUnit XML (one test case per host per play)."""

from __future__ import annotations

import json
import shlex
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clusterforge.runner import artifacts, runs
from clusterforge.text import xml_safe

if TYPE_CHECKING:
    from clusterforge.runner.playbook import RunResult


# The shape of summary.json and of `clusterforge run --json`; bumped when a field changes meaning
# or goes (new fields keep it).
SCHEMA = "clusterforge.run/2"


def paths(result: RunResult) -> dict[str, str]:
    """Where the run's files are: one directory per run, named by its id."""
    return {
        "run_dir": str(result.run_dir),
        "summary": str(result.run_dir / "summary.json"),
        "junit": str(result.run_dir / "junit.xml"),
        # ansible-runner's own: the job events and Ansible's full output (stdout).
        "ansible_artifacts": str(result.run_dir / "artifacts"),
    }


def validation(result: RunResult) -> dict[str, Any] | None:
    """The validation results the run wrote (playbooks/validate.yml), their counts, and the
    command that turns them into a report; None for a run that did not validate."""
    results_dir = result.record.validation_dir
    if not results_dir:
        return None
    results = Path(results_dir)
    counts = runs.validation_counts(results) if results.is_dir() else None
    report_dir = runs.default_report_dir(result.run_dir)
    # `clusterforge report` takes the run's directory for the results in it.
    source = result.run_dir if results.parent == result.run_dir / runs.VALIDATION else results
    return {
        "results_dir": results_dir,
        "run_id": result.record.validation_id,
        "counts": counts,
        "report_dir": str(report_dir),
        "report_source": str(source),
        "report_command": f"clusterforge report {shlex.quote(str(source))} -o {shlex.quote(str(report_dir))}",
    }


def summary(result: RunResult) -> dict[str, Any]:
    hosts = {}
    for counts in result.hosts:
        record = result.record.hosts.get(counts.host)
        hosts[counts.host] = {
            "ok": counts.ok,
            "changed": counts.changed,
            "failed": counts.failed,
            "unreachable": counts.unreachable,
            "skipped": counts.skipped,
            "rescued": counts.rescued,
            "ignored": counts.ignored,
            "failed_tasks": record.failed_tasks if record else [],
            "unreachable_message": record.unreachable if record else None,
            "reboot_required": bool(record and record.reboot_required),
            # What changed (with --check: would change): task, item and diff (with --diff).
            "changes": record.changes if record else [],
        }
    record = result.record
    options = result.options
    return {
        "schema": SCHEMA,
        "run_id": result.run_id,
        **paths(result),
        "status": result.status,
        "rc": result.rc,
        "exit_code": result.exit_code,
        "playbook": str(result.playbook),
        "inventory": str(result.inventory),
        "started": _iso(result.record.started),
        "elapsed_s": round(result.elapsed, 1),
        # Why no host ran, with Ansible's own words; null when hosts ran.
        "error": "\n".join(filter(None, (result.no_host_reason, result.ansible_output))) or None,
        "totals": {
            "hosts": len(result.hosts),
            "failed": len(result.failed_hosts),
            "unreachable": len(result.unreachable_hosts),
            "changed_tasks": result.changed_tasks,
            "reboot_required": sorted(h for h, v in hosts.items() if v["reboot_required"]),
        },
        "hosts": hosts,
        "validation": validation(result),
        # What the play said to the operator (debug messages, failures it went on from).
        "messages": [message.as_dict() for message in record.messages],
        "tasks_run": record.tasks_started,
        "tasks": [task.as_dict() for task in record.tasks],
        # A sliced run's slices (each with its own run directory), or the one slice this run is.
        "slices": result.slices,
        "options": runs.options_key(options, Path(str(result.playbook)), Path(str(result.inventory)))
        if options
        else None,
    }


def junit(result: RunResult) -> ET.ElementTree:
    """One <testcase> per host per play: failures for failed tasks, errors for unreachable.
    Every value comes from hosts, tasks or file names: made XML-safe (see text.xml_safe)."""
    suites = ET.Element("testsuites", name=xml_safe(f"clusterforge {Path(str(result.playbook)).name}"))
    plays: dict[str, list[tuple[str, dict]]] = {}
    for host, record in sorted(result.record.hosts.items()):
        for play, outcome in record.plays.items():
            plays.setdefault(play, []).append((host, outcome))
    for play, cases in plays.items():
        failures = sum(1 for _, o in cases if o["failures"])
        errors = sum(1 for _, o in cases if o["unreachable"])
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=xml_safe(play or "play"),
            tests=str(len(cases)),
            failures=str(failures),
            errors=str(errors),
            skipped="0",
        )
        for host, outcome in cases:
            case = ET.SubElement(suite, "testcase", classname=xml_safe(play or "play"), name=xml_safe(host))
            if outcome["unreachable"]:
                error = ET.SubElement(case, "error", message="unreachable", type="unreachable")
                error.text = xml_safe(outcome["unreachable"])
            elif outcome["failures"]:
                first = outcome["failures"][0]
                failure = ET.SubElement(
                    case, "failure", message=xml_safe(f"{first['task']}: {first['message'][:200]}"), type="failed"
                )
                failure.text = xml_safe("\n".join(f"{f['task']}: {f['message']}" for f in outcome["failures"]))
    ET.indent(suites)
    return ET.ElementTree(suites)


def write(result: RunResult) -> tuple[Path, Path]:
    """Both files, readable by the user alone (failure messages can tell much about hosts)."""
    summary_path = result.run_dir / "summary.json"
    with artifacts.open_private(summary_path, "w") as file:
        file.write(json.dumps(summary(result), indent=2) + "\n")
    junit_path = result.run_dir / "junit.xml"
    with artifacts.open_private(junit_path, "wb") as file:
        junit(result).write(file, encoding="utf-8", xml_declaration=True)
    return summary_path, junit_path


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
