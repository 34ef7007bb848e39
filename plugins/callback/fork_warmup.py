# Copyright: clusterforge contributors
# Apache License 2.0
"""Work every forked worker would repeat, done once in the main ansible-playbook process instead.

Ansible forks one worker per host and task, and a worker starts as a copy of the main process: what
the main process has loaded, every worker has for free; what it has not, every worker loads again
and throws away. bench/fleet.py measures the cost per host-task with and without this plugin.
"""

from __future__ import annotations

import gc

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader, filter_loader, test_loader

DOCUMENTATION = r"""
name: fork_warmup
type: aggregate
short_description: Loads in the main process what each forked worker would load again
description:
  - "At playbook start, Jinja's filter and test plugins: the first filter a worker templates
    otherwise loads every filter and test module in that worker."
  - At each task's start, the task's action plugin (imported once, then inherited by every worker).
  - "At each play's start, a full garbage collection (the last play's frozen objects thawed first)
    and C(gc.freeze()): the objects the main process holds then are out of the collector's reach
    in the workers, whose collections would otherwise walk them and so copy their pages. Nothing
    stays frozen past the next play, so no garbage outlives it."
  - Changes no result and prints nothing; a plugin that cannot be loaded here is left to the worker,
    which reports it as it always does.
requirements: [enable in callbacks_enabled (clusterforge's ansible.cfg does)]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fork_warmup"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._actions_seen: set[str] = set()

    def v2_playbook_on_start(self, playbook):
        # Iterating the loaders fills their plugin caches (all modules of each kind, as a worker does).
        for loader in (filter_loader, test_loader):
            for _plugin in loader.all():
                pass
        self._preload_action("ansible.builtin.normal")

    def v2_playbook_on_play_start(self, play):
        # Frozen objects are never collected: thaw what the last play froze and collect the whole
        # heap first, so a freeze keeps no garbage alive for the rest of the run (the previous
        # play's cycles included). Once per play, not per task: a full collection walks the heap.
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._preload_action(task.action, task.collections)

    def v2_playbook_on_handler_task_start(self, task):
        self._preload_action(task.action, task.collections)

    def _preload_action(self, name: str, collections=None) -> None:
        if not name or name in self._actions_seen:
            return
        self._actions_seen.add(name)
        try:
            # Module tasks without an action plugin of their own find none here: they use `normal`.
            action_loader.get(name, class_only=True, collection_list=collections)
        except Exception as error:  # an optimisation only: the worker reports real errors
            self._display.vvvv(f"fork_warmup: {name} left to the workers: {error}")
