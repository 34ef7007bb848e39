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

A false condition is evaluated again with exactly the variables a worker would use (the task's
search path, and the connection variables the play context adds: ansible_host, ansible_user, ...)
before it is skipped here. Left to a worker, exactly as in ansible-core: a loop (`when` is then
per item), delegate_to (the worker swaps in the delegated host's variables), a lookup in the
condition (it would run twice), an error or a warning while evaluating, and every true condition.
A callback rather than a strategy plugin: ansible-core 2.19 deprecates strategy plugins outside
ansible.builtin, with no replacement planned.
"""

from __future__ import annotations

import inspect

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
  - "A false condition is checked again with exactly the variables a worker would evaluate it with
    (the task's search path, the play context's connection variables). A loop, delegate_to, a
    lookup in the condition, an error or a warning, and every true condition go to a worker as in
    ansible-core."
  - "Off (a note at -vvvv) on an ansible-core whose _queue_task takes other arguments."
requirements: [enable in callbacks_enabled (clusterforge's ansible.cfg does)]
"""

# The arguments ansible-core 2.19's _queue_task takes: another signature is another contract.
EXPECTED_PARAMETERS = ("self", "host", "task", "task_vars", "play_context")

# A lookup in a condition would run twice (here, then in the worker when the condition is true):
# its side effects and its time stay the worker's alone.
LOOKUPS = ("lookup(", "query(", "q(")


def decidable_here(task) -> bool:
    """Whether the main process can evaluate this task's condition as a worker would."""
    if not task.when or task.loop is not None or task.loop_with or task.delegate_to is not None:
        return False
    texts = [item for item in task.when if isinstance(item, str)]
    return not any(call in text for text in texts for call in LOOKUPS)


def is_false(task, variables: dict, context: dict) -> bool:
    """Whether the condition is false with these variables; an error counts as not false."""
    try:
        return not task._resolve_conditional(task.when, variables, result_context=context)
    except Exception:  # the worker evaluates it again and reports the error as ansible-core does
        return False


def worker_variables(host, task, task_vars: dict, play_context, loader) -> dict:
    """The variables TaskExecutor evaluates `when` with: the task's search path, then the
    connection variables the play context adds where the inventory does not set them."""
    search_path = task.get_search_path()
    if loader.get_basedir() not in search_path:
        search_path.append(loader.get_basedir())
    variables = {**task_vars, "ansible_search_path": search_path}
    templar = TemplateEngine(loader=loader, variables=variables)
    context = play_context.set_task_and_variable_override(task=task, variables=variables, templar=templar)
    context.post_validate(templar=templar)
    if not context.remote_addr:
        context.remote_addr = host.address
    context.update_vars(variables)
    return variables


def skipped_result(host, task, task_vars: dict, play_context, loader) -> dict | None:
    """The result a worker returns for a false condition, or None to let a worker decide."""
    if not decidable_here(task):
        return None
    context: dict = {}
    with _display_utils.DeferredWarningContext(variables=task_vars) as warnings:
        # Most conditions are settled by the host's variables alone: a true one goes to the worker
        # at once; a false one is evaluated again with exactly the worker's variables.
        if not is_false(task, task_vars, context):
            return None
        try:
            variables = worker_variables(host, task, task_vars, play_context, loader)
        except Exception:  # an invalid connection setting: the worker reports it as ansible-core does
            return None
        context.clear()
        if not is_false(task, variables, context):
            return None
        # TaskExecutor's result for a false condition, no_log settled as it settles it.
        result = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False", **context}
        task.update_result_no_log(TemplateEngine(loader=loader, variables=variables), result)
    if warnings.get_warnings() or warnings.get_deprecation_warnings():
        return None
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
        result = skipped_result(host, task, task_vars, play_context, self._loader)
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
