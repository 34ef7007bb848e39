"""What a playbook run did, host by host, built from ansible-runner's events."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

# Roles flag a needed reboot with `set_fact: clusterforge_reboot_required: true`; modules
# that report `reboot_required` (or `reboot_needed`) count too.
REBOOT_FACT = "clusterforge_reboot_required"
_OUTCOMES = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}


@dataclass
class HostRecord:
    failed_tasks: list[dict[str, str]] = field(default_factory=list)
    unreachable: str | None = None
    reboot_required: bool = False
    # play name -> (tasks run, failures) for the JUnit report
    plays: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class RunRecorder:
    """Fed every event (it is the runner's event_handler); keeps what the reports need."""

    started: float = field(default_factory=time.time)
    play: str = ""
    task: str = ""
    tasks_started: int = 0
    hosts: dict[str, HostRecord] = field(default_factory=dict)

    def __call__(self, event: dict) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_play_start":
            self.play = data.get("play", "") or data.get("name", "")
        elif kind == "playbook_on_task_start":
            self.task = data.get("task", "")
            self.tasks_started += 1
        elif kind in _OUTCOMES and data.get("host"):
            self._outcome(_OUTCOMES[kind], data)
        return True  # keep every event in the artifacts

    def _outcome(self, outcome: str, data: dict) -> None:
        host = self.hosts.setdefault(data["host"], HostRecord())
        play = host.plays.setdefault(self.play, {"tasks": 0, "failures": [], "unreachable": None, "time": 0.0})
        play["tasks"] += 1
        result = data.get("res") or {}
        facts = result.get("ansible_facts") or {}
        if facts.get(REBOOT_FACT) or result.get("reboot_required") or result.get("reboot_needed"):
            host.reboot_required = True
        if outcome == "failed" and not data.get("ignore_errors"):
            failure = {"play": self.play, "task": data.get("task", self.task), "message": _message(result)}
            host.failed_tasks.append(failure)
            play["failures"].append(failure)
        elif outcome == "unreachable":
            host.unreachable = play["unreachable"] = _message(result)

    @property
    def elapsed(self) -> float:
        return time.time() - self.started


def _message(result: dict) -> str:
    """The task's own message; a no_log task's result is already censored by Ansible."""
    for key in ("msg", "stderr", "censored"):
        value = result.get(key)
        if value:
            return str(value).strip()[:2000]
    return "failed without a message"
