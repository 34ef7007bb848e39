# Copyright: clusterforge contributors
# Apache License 2.0
"""A task whose `when` is false for a host is skipped in the main process, without forking a worker.

ansible-core forks a worker for every host and task and evaluates `when` there, so a skipped task
costs a fork, the copy-on-write faults that follow it in both processes, and a result sent back
through the queue: about as much controller CPU as a task that runs. A re-run of site.yml skips a
third of its host-tasks (roles for other hardware, steps already done), and at 10,000 nodes each of
them is 10,000 forks. The main process already holds the host's task variables when it queues the
task, so evaluating the condition there costs one template, and the skip goes through the same
result path a worker's would (callbacks, register, stats, run_once, handlers).

Only conditions that evaluate the same in both places are decided in the main process: no loop
(`when` is then per item), no delegate_to (the worker swaps in the delegated host's connection
variables), no connection variable the worker adds after forking (ansible_host, ansible_user, ...,
ansible_search_path), and no error or warning while evaluating. Anything else, and every true
condition, goes to a worker exactly as in ansible-core. A callback rather than a strategy plugin:
ansible-core 2.19 deprecates strategy plugins outside ansible.builtin, with no replacement planned.
"""

from __future__ import annotations

import inspect

from ansible import constants as C
from ansible._internal import _display_utils
from ansible._internal._templating._engine import TemplateEngine
from ansible.executor.task_result import _RawTaskResult
from ansible.plugins.callback import CallbackBase
from ansible.plugins.strategy import StrategyBase

DOCUMENTATION = r"""
name: skip_in_main
type: aggregate
short_description: Skips a task whose condition is false without forking a worker for it
description:
  - "Wraps ansible-core's StrategyBase._queue_task (used by the linear and free strategies): when a
    task's C(when) is false for a host, the skipped result a worker would send is built in the
    main process and goes through the same result processing; no worker is forked for it."
  - "Decided there only without a loop, without delegate_to, without the connection variables a
    worker adds (ansible_host, ansible_user, ...), and without errors or warnings; otherwise, and
    for true conditions, the task goes to a worker as in ansible-core."
  - "Off (a note at -vvvv) on an ansible-core whose _queue_task takes other arguments."
requirements: [enable in callbacks_enabled (clusterforge's ansible.cfg does)]
"""

# The arguments ansible-core 2.19's _queue_task takes: another signature is another contract.
EXPECTED_PARAMETERS = ("self", "host", "task", "task_vars", "play_context")

# Variables the worker adds from the play context after forking, where the inventory does not set
# them: a condition naming one could evaluate differently here, so it goes to the worker.
WORKER_ONLY_VARIABLES = frozenset(
    {name for names in C.MAGIC_VARIABLE_MAPPING.values() for name in names} | {"ansible_search_path"}
)


def decidable_here(task) -> bool:
    """Whether the main process evaluates this task's condition exactly as a worker would."""
    if not task.when or task.loop is not None or task.loop_with or task.delegate_to is not None:
        return False
    texts = [item for item in task.when if isinstance(item, str)]
    return not any(name in text for text in texts for name in WORKER_ONLY_VARIABLES)


def skipped_result(task, task_vars: dict, loader) -> dict | None:
    """The result a worker returns for a false condition, or None to let a worker decide."""
    if not decidable_here(task):
        return None
    context: dict = {}
    with _display_utils.DeferredWarningContext(variables=task_vars) as warnings:
        try:
            if task._resolve_conditional(task.when, task_vars, result_context=context):
                return None
        except Exception:  # the worker evaluates it again and reports the error as ansible-core does
            return None
    if warnings.get_warnings() or warnings.get_deprecation_warnings():
        return None
    # TaskExecutor's result for a false condition, no_log settled as it settles it.
    result = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False", **context}
    task.update_result_no_log(TemplateEngine(loader=loader, variables=task_vars), result)
    return result


def install() -> str | None:
    """Wraps StrategyBase._queue_task. Returns why not, where it cannot."""
    if getattr(StrategyBase, "_clusterforge_skip_in_main", False):
        return None  # installed already
    original = StrategyBase._queue_task
    parameters = tuple(inspect.signature(original).parameters)
    if parameters != EXPECTED_PARAMETERS:
        return f"StrategyBase._queue_task takes {parameters}, not ansible-core 2.19's {EXPECTED_PARAMETERS}"

    def _queue_task(self, host, task, task_vars, play_context):
        result = skipped_result(task, task_vars, self._loader)
        if result is None:
            return original(self, host, task, task_vars, play_context)
        # What _queue_task and the worker would have done, in the same order, without the fork.
        self._queued_task_cache[(host.name, task._uuid)] = {
            "host": host,
            "task": task,
            "task_vars": task_vars,
            "play_context": play_context,
        }
        self._tqm.send_callback("v2_runner_on_start", host, task)
        raw = _RawTaskResult(host=host, task=task, return_data=result, task_fields=task.dump_attrs())
        converted = self._convert_wire_task_result_to_raw(raw.as_wire_task_result())
        with self._results_lock:
            self._results.append(converted)
        self._pending_results += 1
        return None

    StrategyBase._clusterforge_skip_in_main = True
    StrategyBase._queue_task = _queue_task
    return None


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "skip_in_main"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        # Installed when the plugin loads, before the first play queues any task.
        reason = install()
        if reason:
            self._display.vvvv(f"skip_in_main: off: {reason}")
