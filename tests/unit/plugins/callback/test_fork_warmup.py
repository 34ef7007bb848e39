"""plugins/callback/fork_warmup.py: what it loads in the main process, and that the project's
settings (ansible.cfg, and the runner, whose ansible-runner sets its own callback path) load it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from clusterforge.runner import playbook as runner
from tests.paths import PROJECT

# Each probe runs in a fresh interpreter: this test process may have imported any plugin already.
PROBE = """
import gc, sys, types
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader()  # as ansible-playbook does: the collection loader that resolves ansible.builtin.*
sys.path.insert(0, {plugins!r})
from fork_warmup import CallbackModule

def loaded(prefix):
    # The plugin loader names a plugin's module after its path: prefix, then a suffix.
    return any(name.startswith(prefix) for name in sys.modules)

def state(when):
    print(when, loaded("ansible.plugins.filter.core"), loaded("ansible.plugins.test.core"),
          loaded("ansible_collections.ansible.builtin.plugins.action.template"), gc.get_freeze_count() > 0)

warm = CallbackModule()
state("before")
warm.v2_playbook_on_start(None)
warm.v2_playbook_on_play_start(None)
warm.v2_playbook_on_task_start(types.SimpleNamespace(action="ansible.builtin.template", collections=None), False)
warm.v2_playbook_on_task_start(types.SimpleNamespace(action="ansible.builtin.apt", collections=None), False)
state("after")

# The next play thaws and collects what the last one froze: a cycle that became garbage meanwhile is freed.
import weakref
class Node: pass
cycle = Node(); cycle.self = cycle
alive = weakref.ref(cycle)
warm.v2_playbook_on_play_start(None)   # frozen while still in use
del cycle
gc.collect()
print("kept while frozen", alive() is not None)
warm.v2_playbook_on_play_start(None)
print("freed at the next play", alive() is None)

# A worker is a fork: what it then asks of the loaders is already there, nothing is imported again.
import os
from ansible.plugins.loader import action_loader, filter_loader, test_loader
read, write = os.pipe()
if os.fork() == 0:
    known = set(sys.modules)
    action_loader.get("ansible.builtin.template", class_only=True)
    for loader in (filter_loader, test_loader):
        list(loader.all())
    os.write(write, str(len(set(sys.modules) - known)).encode())
    os._exit(0)
os.wait()
print("imported in the fork", os.read(read, 64).decode())
"""


def _probe() -> list[str]:
    code = PROBE.format(plugins=str(PROJECT / "plugins" / "callback"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert "WARNING" not in done.stderr, done.stderr
    return done.stdout.splitlines()


def test_filters_tests_and_the_tasks_action_are_loaded_and_the_heap_frozen():
    before, after, kept, freed, fork = _probe()
    assert before == "before False False False False"
    # A module without an action plugin of its own (apt) finds none, quietly: its tasks use `normal`.
    assert after == "after True True True True"
    assert fork == "imported in the fork 0"
    # Frozen garbage is not kept past the next play's start.
    assert (kept, freed) == ("kept while frozen True", "freed at the next play True")


def test_ansible_cfg_loads_it(tmp_path):
    playbook = tmp_path / "probe.yml"
    playbook.write_text(
        textwrap.dedent(
            """\
            - name: Probe
              hosts: localhost
              gather_facts: false
              tasks:
                - name: A filter, templated in a worker
                  ansible.builtin.debug:
                    msg: "{{ [3, 1] | sort | first }}"
            """
        )
    )
    env = {**os.environ, "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env.pop("ANSIBLE_CALLBACK_PLUGINS", None)
    done = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-vvvvvv", str(playbook)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    for name in ("fork_warmup", "accelerate"):
        assert f"Loading callback plugin {name} of type aggregate, v2.0 from {PROJECT}/plugins/callback" in output
        assert f"Skipping callback plugin '{name}'" not in output
    assert "msg: 1" in output


def test_the_runner_names_the_projects_callbacks_before_ansible_runners(monkeypatch):
    monkeypatch.setenv("ANSIBLE_CALLBACK_PLUGINS", "/site/callbacks")
    env = runner._ansible_environment(PROJECT)
    assert env["ANSIBLE_CALLBACK_PLUGINS"].split(os.pathsep) == [str(PROJECT / "plugins/callback"), "/site/callbacks"]
    monkeypatch.delenv("ANSIBLE_CALLBACK_PLUGINS")
    assert runner._ansible_environment(PROJECT)["ANSIBLE_CALLBACK_PLUGINS"] == str(PROJECT / "plugins/callback")
