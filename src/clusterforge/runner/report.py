"""Artifacts a CI system reads: summary.json and a JUnit XML (one test case per host per play)."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clusterforge.runner.playbook import RunResult


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
        }
    return {
        "status": result.status,
        "rc": result.rc,
        "exit_code": result.exit_code,
        "playbook": str(result.playbook),
        "inventory": str(result.inventory),
        "started": _iso(result.record.started),
        "elapsed_s": round(result.elapsed, 1),
        "totals": {
            "hosts": len(result.hosts),
            "failed": len(result.failed_hosts),
            "unreachable": len(result.unreachable_hosts),
            "changed_tasks": result.changed_tasks,
            "reboot_required": sorted(h for h, v in hosts.items() if v["reboot_required"]),
        },
        "hosts": hosts,
    }


def junit(result: RunResult) -> ET.ElementTree:
    """One <testcase> per host per play: failures for failed tasks, errors for unreachable."""
    suites = ET.Element("testsuites", name=f"clusterforge {Path(str(result.playbook)).name}")
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
            name=play or "play",
            tests=str(len(cases)),
            failures=str(failures),
            errors=str(errors),
            skipped="0",
        )
        for host, outcome in cases:
            case = ET.SubElement(suite, "testcase", classname=play or "play", name=host)
            if outcome["unreachable"]:
                ET.SubElement(case, "error", message="unreachable", type="unreachable").text = outcome["unreachable"]
            elif outcome["failures"]:
                first = outcome["failures"][0]
                failure = ET.SubElement(
                    case, "failure", message=f"{first['task']}: {first['message'][:200]}", type="failed"
                )
                failure.text = "\n".join(f"{f['task']}: {f['message']}" for f in outcome["failures"])
    ET.indent(suites)
    return ET.ElementTree(suites)


def write(result: RunResult) -> tuple[Path, Path]:
    summary_path = result.run_dir / "summary.json"
    summary_path.write_text(json.dumps(summary(result), indent=2) + "\n")
    junit_path = result.run_dir / "junit.xml"
    junit(result).write(junit_path, encoding="utf-8", xml_declaration=True)
    return summary_path, junit_path


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
