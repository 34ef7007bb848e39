"""bench/fleet.py's callback: per play (stage), the tasks each host ran, and the play's wall
time and controller CPU (this process, and its reaped worker processes), and this process's own
CPU since it started, written as JSON to $FLEET_TASKS_OUT when the run ends (to PID.json in it
when it is a directory, as bench/slices.py has it for the slices of one run). A notification
callback: the stdout callback stays as configured, so the settings under test are unchanged."""

import json
import os
import time
from collections import Counter

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: fleet_tasks
type: aggregate
short_description: per-play task counts and controller time for bench/fleet.py
description: Writes per play the tasks each host ran, wall time and CPU to $FLEET_TASKS_OUT.
requirements: [enable in callbacks_enabled]
"""


def cpu():
    times = os.times()
    return times.user + times.system, times.children_user + times.children_system


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fleet_tasks"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.plays = []

    def _close_play(self):
        if self.plays and "wall_s" not in self.plays[-1]:
            play = self.plays[-1]
            main, children = cpu()
            play["wall_s"] = time.perf_counter() - play.pop("_wall")
            play["main_cpu_s"] = main - play.pop("_main")
            play["children_cpu_s"] = children - play.pop("_children")

    def v2_playbook_on_play_start(self, play):
        self._close_play()
        main, children = cpu()
        self.plays.append(
            {
                "play": play.get_name(),
                "tasks": Counter(),
                "changed": Counter(),
                "_wall": time.perf_counter(),
                "_main": main,
                "_children": children,
            }
        )

    def _count(self, result, changed=False):
        play = self.plays[-1]
        host = result._host.get_name()
        play["tasks"][host] += 1
        if changed or result._result.get("changed"):
            play["changed"][host] += 1

    def v2_runner_on_ok(self, result):
        self._count(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result)

    def v2_runner_on_skipped(self, result):
        self._count(result)

    def v2_runner_on_unreachable(self, result):
        self._count(result)

    def v2_playbook_on_stats(self, stats):
        self._close_play()
        out = os.environ.get("FLEET_TASKS_OUT")
        if out:
            # A directory: one file per ansible-playbook process (the slices of one run).
            path = os.path.join(out, f"{os.getpid()}.json") if os.path.isdir(out) else out
            with open(path, "w") as handle:
                json.dump({"plays": self.plays, "main_cpu_s": cpu()[0]}, handle)
