"""What a playbook run did, host by host and task by task, built from ansible-runner's events."""

from __future__ import annotations

import difflib
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

# Roles flag a needed reboot with `set_fact: clusterforge_reboot_required: true`; modules
# that report `reboot_required` (or `reboot_needed`) count too.
REBOOT_FACT = "clusterforge_reboot_required"
# playbooks/validate.yml names its results directory and run id in these facts.
VALIDATION_DIR_FACT = "__validate_run_dir"
VALIDATION_ID_FACT = "__validate_run_id"
_OUTCOMES = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}
_TASK_STARTS = ("playbook_on_task_start", "playbook_on_handler_task_start")
_DEBUG_ACTIONS = ("debug", "ansible.builtin.debug", "ansible.legacy.debug")
# A PCI bus id as nvidia-smi names a GPU (00000000:18:00.0).
BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
# Diffs kept per change, in lines: a templated file can be long.
MAX_DIFF_LINES = 200


@dataclass
class HostRecord:
    failed_tasks: list[dict[str, str]] = field(default_factory=list)
    unreachable: str | None = None
    reboot_required: bool = False
    # play name -> (tasks run, failures) for the JUnit report
    plays: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What changed (or would change in check mode): task, item label and the diff, if any.
    changes: list[dict[str, Any]] = field(default_factory=list)
    # GPUs a node check measured one by one (their PCI bus ids), to merge per-GPU messages.
    gpus: int = 0


@dataclass
class TaskRecord:
    """One task as it ran: each host's outcome and how long it took."""

    number: int
    play: str
    name: str
    started: float
    ended: float | None = None
    hosts_started: set[str] = field(default_factory=set)
    outcomes: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("ok", "changed", "failed", "skipped", "unreachable", "ignored"), 0)
        for outcome in self.outcomes.values():
            counts[outcome] += 1
        return counts

    @property
    def duration(self) -> float:
        return (self.ended or time.time()) - self.started

    def as_dict(self) -> dict[str, Any]:
        return {"play": self.play, "task": self.name, "duration_s": round(self.duration, 1), **self.counts()}


@dataclass
class Message:
    """What a play says to the operator: a debug message, or a failure the play went on from."""

    host: str
    play: str
    task: str
    text: str
    kind: str = "debug"  # or "ignored" (a failed task with ignore_errors)

    def as_dict(self) -> dict[str, str]:
        return {"host": self.host, "play": self.play, "task": self.task, "kind": self.kind, "text": self.text}


@dataclass
class RunRecorder:
    """Fed every event (it is the runner's event_handler); keeps what the reports need."""

    started: float = field(default_factory=time.time)
    play: str = ""
    task: str = ""
    tasks_started: int = 0
    # Tasks the same playbook ran last time with the same options, for "task n/N"; 0 if unknown.
    expected_tasks: int = 0
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    tasks: list[TaskRecord] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    # Task outcomes of the whole run ("ok" counts the changed ones too, as Ansible's recap does).
    totals: dict[str, int] = field(default_factory=lambda: {"ok": 0, "changed": 0, "failed": 0, "skipped": 0})
    # Failed checks of the node check modules (gpu_check, ib_check, ...) so far.
    failed_checks: int = 0
    validation_dir: str | None = None
    validation_id: str | None = None
    play_hosts: set[str] = field(default_factory=set)
    # Plays that matched a host: with none of their tasks run, --tags (or --skip-tags) left nothing.
    plays_with_hosts: int = 0
    finished: bool = False

    def __call__(self, event: dict) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_play_start":
            self._end_task()
            self.play = data.get("play", "") or data.get("name", "")
            self.task = ""
            self.play_hosts = set()
            self.plays_with_hosts += 1
        elif kind == "playbook_on_no_hosts_matched":
            self.plays_with_hosts -= 1
        elif kind in _TASK_STARTS:
            self._end_task()
            self.task = data.get("task", "") or data.get("name", "")
            self.tasks_started += 1
            self.tasks.append(TaskRecord(self.tasks_started, self.play, self.task, time.time()))
        elif kind == "runner_on_start" and data.get("host") and self.current:
            self.current.hosts_started.add(data["host"])
            self.play_hosts.add(data["host"])
        elif kind in _OUTCOMES and data.get("host"):
            self._outcome(_OUTCOMES[kind], data)
        elif kind == "playbook_on_stats":
            self._end_task()
            self.finished = True
        return True  # keep every event in the artifacts

    @property
    def current(self) -> TaskRecord | None:
        """The task running now (None between plays and after the last task)."""
        return self.tasks[-1] if self.tasks and self.tasks[-1].ended is None else None

    @property
    def done_tasks(self) -> list[TaskRecord]:
        return [task for task in self.tasks if task.ended is not None]

    def _end_task(self) -> None:
        if self.current:
            self.current.ended = time.time()

    def _outcome(self, outcome: str, data: dict) -> None:
        name = data["host"]
        host = self.hosts.setdefault(name, HostRecord())
        self.play_hosts.add(name)
        play = host.plays.setdefault(self.play, {"tasks": 0, "failures": [], "unreachable": None, "time": 0.0})
        play["tasks"] += 1
        result = data.get("res") or {}
        if not isinstance(result, dict):
            result = {"msg": str(result)}
        task = data.get("task", self.task)
        facts = result.get("ansible_facts") or {}
        if facts.get(REBOOT_FACT) or result.get("reboot_required") or result.get("reboot_needed"):
            host.reboot_required = True
        if facts.get(VALIDATION_DIR_FACT):
            self.validation_dir = str(facts[VALIDATION_DIR_FACT])
            self.validation_id = str(facts.get(VALIDATION_ID_FACT) or "") or None
        shown = outcome
        if outcome == "failed" and data.get("ignore_errors"):
            shown = "ignored"
            self.messages.append(Message(name, self.play, task, _message(result), "ignored"))
        elif outcome == "failed":
            failure = {"play": self.play, "task": task, "message": _message(result)}
            host.failed_tasks.append(failure)
            play["failures"].append(failure)
        elif outcome == "unreachable":
            host.unreachable = play["unreachable"] = _message(result)
        elif outcome == "ok" and result.get("changed"):
            shown = "changed"
        self._count(shown)
        if self.current is not None:
            self.current.outcomes[name] = shown
        if outcome == "ok" and data.get("task_action") in _DEBUG_ACTIONS:
            for text in _debug_texts(result):
                self.messages.append(Message(name, self.play, task, text))
        if outcome in ("ok", "failed"):
            self._checks(host, result)
            if result.get("changed"):
                host.changes.extend(_changes(task, result))

    def _count(self, shown: str) -> None:
        self.totals[shown] = self.totals.get(shown, 0) + 1
        if shown == "changed":
            self.totals["ok"] += 1

    def _checks(self, host: HostRecord, result: dict) -> None:
        """Failed checks of a node check module's result, or of each item of a looped one."""
        items = result.get("results") if isinstance(result.get("results"), list) else [result]
        for item in items:
            checks = item.get("checks") if isinstance(item, dict) else None
            for check in checks if isinstance(checks, list) else ():
                if not isinstance(check, dict):
                    continue
                if check.get("status") == "fail":
                    self.failed_checks += 1
                measured = check.get("measured")
                if isinstance(measured, dict) and measured and all(BUS_ID.match(str(key)) for key in measured):
                    host.gpus = max(host.gpus, len(measured))

    @property
    def elapsed(self) -> float:
        return time.time() - self.started


def _message(result: dict) -> str:
    """The task's own message; a no_log task's result is already censored by Ansible."""
    for key in ("msg", "stderr", "censored"):
        value = result.get(key)
        if value:
            return _text(value).strip()[:2000]
    return "failed without a message"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    return json.dumps(value, default=str)


def _debug_texts(result: dict) -> list[str]:
    """A debug task's message(s): msg, `var: value` for debug var=..., one per item of a loop."""
    if "censored" in result:
        return []
    items = result.get("results") if isinstance(result.get("results"), list) else [result]
    texts = []
    for item in items:
        if not isinstance(item, dict) or item.get("skipped"):
            continue
        if "msg" in item:
            texts.append(_text(item["msg"]).strip())
            continue
        shown = {k: v for k, v in item.items() if not k.startswith("_ansible") and k not in _RESULT_KEYS}
        texts.extend(f"{key}: {_text(value)}" for key, value in shown.items())
    return [text for text in texts if text]


_RESULT_KEYS = {"changed", "failed", "skipped", "item", "ansible_loop_var", "invocation", "warnings", "deprecations"}


def _changes(task: str, result: dict) -> list[dict[str, Any]]:
    """Each changed item (or the task itself) with its diff as unified text, if the task has one."""
    if "censored" in result:
        return [{"task": task, "item": None, "diff": ""}]
    items = result.get("results") if isinstance(result.get("results"), list) else None
    changed = [r for r in items if isinstance(r, dict) and r.get("changed")] if items is not None else [result]
    return [
        {"task": task, "item": _item_label(item) if items is not None else None, "diff": _diff(item)}
        for item in changed
    ]


def _item_label(result: dict) -> str | None:
    label = result.get("_ansible_item_label", result.get(result.get("ansible_loop_var") or "item"))
    if label is None:
        return None
    return label if isinstance(label, str) else json.dumps(label, default=str, sort_keys=True)


def _diff(result: dict) -> str:
    diffs = result.get("diff")
    if not diffs:
        return ""
    lines: list[str] = []
    for diff in diffs if isinstance(diffs, list) else [diffs]:
        if not isinstance(diff, dict):
            continue
        if diff.get("prepared"):
            lines += str(diff["prepared"]).splitlines()
            continue
        before, after = diff.get("before", ""), diff.get("after", "")
        if before == after:
            continue
        lines += difflib.unified_diff(
            _lines(before),
            _lines(after),
            fromfile=str(diff.get("before_header") or "before"),
            tofile=str(diff.get("after_header") or "after"),
            lineterm="",
        )
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more lines)"]
    return "\n".join(lines)


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, default=str).splitlines()
