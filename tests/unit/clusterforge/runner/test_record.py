"""The run record built from synthetic ansible-runner events: messages, task results, changes
with their diffs, failed checks, the validation results directory."""

from __future__ import annotations

from clusterforge.runner import present
from clusterforge.runner.record import RunRecorder
from tests.unit.clusterforge.runner.events import (
    BUS_IDS,
    THROTTLED,
    event,
    ok,
    play,
    recorded,
    site_events,
    task,
)


def test_debug_messages_and_ignored_failures_are_kept_for_the_operator():
    recorder = recorded()
    texts = [(m.host, m.kind, m.text) for m in recorder.messages]
    note = "skipped: live apply of vm.swappiness: a container cannot set host-wide keys"
    assert texts == [("node01", "debug", note), ("node02", "debug", note), ("node02", "ignored", "node02: not fatal")]
    grouped = present.group_messages(recorder.messages)
    assert grouped[0] == (["node01", "node02"], "Report what could not be applied", note)
    assert grouped[1][2] == "failed (ignored): node02: not fatal"


def test_grouped_hosts_are_listed_by_name_whatever_order_they_finished_in():
    recorder = RunRecorder()
    for item in [play("p"), task("t")] + [
        ok(host, "t", "ansible.builtin.debug", msg="same") for host in ("node10", "beta", "node2", "alpha")
    ]:
        recorder(item)
    assert present.group_messages(recorder.messages) == [(["alpha", "beta", "node2", "node10"], "t", "same")]


def test_debug_var_lists_and_loops_become_text():
    recorder = RunRecorder()
    for item in [
        play("p"),
        task("t"),
        ok("h", "t", "ansible.builtin.debug", msg=["one", "two"]),
        ok("h", "t", "debug", some_var={"a": 1}),
        ok("h", "t", "ansible.builtin.debug", results=[{"msg": "first"}, {"skipped": True}, {"msg": "third"}]),
        ok("h", "t", "ansible.builtin.debug", censored="the output has been hidden"),
    ]:
        recorder(item)
    assert [m.text for m in recorder.messages] == ["one\ntwo", 'some_var: {"a": 1}', "first", "third"]


def test_each_task_has_its_results_per_host_and_a_duration():
    recorder = recorded()
    tasks = {t.name: t for t in recorder.tasks}
    assert [t.number for t in recorder.tasks] == [1, 2, 3, 4]
    assert tasks["Write the configuration"].counts() == {
        "ok": 0,
        "changed": 1,
        "failed": 0,
        "skipped": 1,
        "unreachable": 0,
        "ignored": 0,
    }
    assert (
        present.task_counts(tasks["Fail hosts whose checks failed"])
        == "ok 0, changed 0, failed 1, skipped 0, ignored 1"
    )
    assert all(t.ended is not None and t.duration >= 0 for t in recorder.tasks)
    assert recorder.current is None and recorder.finished
    # ok counts the changed one too, as the recap does.
    assert recorder.totals == {"ok": 5, "changed": 1, "failed": 1, "skipped": 1, "ignored": 1}


def test_the_current_task_knows_its_hosts():
    events = site_events()[:9]
    assert events[-1]["event"] == "runner_on_start"
    recorder = recorded(events)
    current = recorder.current
    assert current is not None and current.name == "Write the configuration"
    assert current.hosts_started == {"node01", "node02"} and current.outcomes == {}


def test_changes_carry_the_item_and_a_unified_diff():
    changes = recorded().hosts["node01"].changes
    assert changes == [
        {
            "task": "Write the configuration",
            "item": "x",
            "diff": "--- /etc/x.conf\n+++ /etc/x.conf\n@@ -1 +1 @@\n-a = 1\n+a = 2",
        }
    ]
    assert recorded().hosts["node02"].changes == []


def test_a_prepared_diff_and_a_no_log_change():
    recorder = RunRecorder()
    recorder(task("t"))
    recorder(ok("h", "t", "x", changed=True, diff={"prepared": "+ package foo"}))
    recorder(ok("h", "t", "x", changed=True, censored="hidden"))
    assert recorder.hosts["h"].changes == [
        {"task": "t", "item": None, "diff": "+ package foo"},
        {"task": "t", "item": None, "diff": ""},
    ]


def test_failed_checks_gpus_and_the_validation_directory_are_counted():
    recorder = recorded()
    assert recorder.failed_checks == 1
    assert recorder.hosts["node01"].gpus == len(BUS_IDS)
    assert (recorder.validation_dir, recorder.validation_id) == ("/tmp/r1/validation/r1", "r1")


def test_a_failure_message_is_kept_whole():
    failure = recorded().hosts["node01"].failed_tasks[0]
    assert failure["task"] == "Fail hosts whose checks failed"
    assert THROTTLED in failure["message"]


def test_a_result_that_is_not_a_mapping_does_not_break_the_run():
    recorder = RunRecorder()
    recorder(task("t"))
    recorder(event("runner_on_failed", host="h", task="t", res="boom"))
    assert recorder.hosts["h"].failed_tasks[0]["message"] == "boom"
