"""Synthetic ansible-runner events, shaped as ansible-runner hands them to event_handler."""

from __future__ import annotations

from clusterforge.runner.record import RunRecorder

BUS_IDS = [f"00000000:{bus:02X}:00.0" for bus in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]
THROTTLED = "; ".join(f"{bus}: clocks held down by hw_power_brake_slowdown" for bus in BUS_IDS)
DETAILS = "(details in /home/op/.local/state/clusterforge/runs/r1/validation/r1/node01.json)"


def event(kind: str, **data) -> dict:
    return {"event": kind, "event_data": data}


def play(name: str) -> dict:
    return event("playbook_on_play_start", play=name, name=name)


def task(name: str) -> dict:
    return event("playbook_on_task_start", task=name, name=name)


def start(host: str, name: str) -> dict:
    return event("runner_on_start", host=host, task=name)


def ok(host: str, name: str, action: str = "ansible.builtin.command", **res) -> dict:
    return event("runner_on_ok", host=host, task=name, task_action=action, res=res)


def failed(host: str, name: str, action: str = "ansible.builtin.assert", ignore_errors=None, **res) -> dict:
    return event("runner_on_failed", host=host, task=name, task_action=action, ignore_errors=ignore_errors, res=res)


def skipped(host: str, name: str) -> dict:
    return event("runner_on_skipped", host=host, task=name, res={"skipped": True})


def site_events() -> list[dict]:
    """A play on node01 and node02: a debug note from both, a looped change with a diff on
    node01, a GPU check whose throttle check fails on node01's 8 GPUs, the assert that fails
    node01 for it, and an ignored failure on node02."""
    note = "skipped: live apply of vm.swappiness: a container cannot set host-wide keys"
    diff = {"before": "a = 1\n", "after": "a = 2\n", "before_header": "/etc/x.conf", "after_header": "/etc/x.conf"}
    throttle = {
        "check": "gpu.throttle",
        "status": "fail",
        "measured": {bus: ["hw_power_brake_slowdown"] for bus in BUS_IDS},
        "message": THROTTLED,
    }
    return [
        play("Set the nodes up"),
        task("Report what could not be applied"),
        start("node01", "Report what could not be applied"),
        start("node02", "Report what could not be applied"),
        ok("node01", "Report what could not be applied", "ansible.builtin.debug", msg=note),
        ok("node02", "Report what could not be applied", "ansible.builtin.debug", msg=note),
        task("Write the configuration"),
        start("node01", "Write the configuration"),
        start("node02", "Write the configuration"),
        ok(
            "node01",
            "Write the configuration",
            "ansible.builtin.copy",
            changed=True,
            results=[
                {"changed": True, "item": "x", "_ansible_item_label": "x", "diff": diff, "ansible_loop_var": "item"},
                {"changed": False, "item": "y", "_ansible_item_label": "y", "ansible_loop_var": "item"},
            ],
        ),
        skipped("node02", "Write the configuration"),
        play("Check every node"),
        task("Check the GPUs"),
        start("node01", "Check the GPUs"),
        ok("node01", "Check the GPUs", "gpu_check", checks=[throttle, {"check": "gpu.count", "status": "pass"}]),
        ok(
            "node01",
            "Name the run",
            "ansible.builtin.set_fact",
            ansible_facts={"__validate_run_dir": "/tmp/r1/validation/r1", "__validate_run_id": "r1"},
        ),
        task("Fail hosts whose checks failed"),
        start("node01", "Fail hosts whose checks failed"),
        start("node02", "Fail hosts whose checks failed"),
        failed(
            "node01",
            "Fail hosts whose checks failed",
            msg=f"node01: gpu_check: 1 of 12 checks failed: gpu.throttle: {THROTTLED} {DETAILS}",
        ),
        failed("node02", "Fail hosts whose checks failed", ignore_errors=True, msg="node02: not fatal"),
        event("playbook_on_stats"),
    ]


def recorded(events: list[dict] | None = None) -> RunRecorder:
    recorder = RunRecorder()
    for item in site_events() if events is None else events:
        recorder(item)
    return recorder
