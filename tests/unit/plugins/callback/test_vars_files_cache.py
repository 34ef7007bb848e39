"""plugins/callback/vars_files_cache.py: a play's variables are exactly ansible-core's, its
vars_files are parsed once instead of once per host and task, and a file changed during the run
is read again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import PROJECT

# Each probe runs in a fresh interpreter: the plugin patches ansible-core's DataLoader class.
PROBE = r"""
import json, os, sys, time
sys.path.insert(0, __PLUGINS__)
from ansible.parsing.dataloader import DataLoader
from ansible.inventory.manager import InventoryManager
from ansible.vars.manager import VariableManager
from ansible.playbook.play import Play
import vars_files_cache

work = __WORK__
stages = os.path.join(work, "stages.yml")
with open(stages, "w") as out:
    out.write("stage_order: [preflight, base]\nstage_owner: one\n")
with open(os.path.join(work, "inventory.ini"), "w") as out:
    out.write("node01\nnode02\nnode03\n")

report = {"installed": vars_files_cache.install() if __INSTALL__ else "not asked"}
parses = []
original_load = DataLoader.load
def counting_load(self, data, *args, **kwargs):
    parses.append(1)
    return original_load(self, data, *args, **kwargs)
DataLoader.load = counting_load

loader = DataLoader()
loader.set_basedir(work)
inventory = InventoryManager(loader=loader, sources=[os.path.join(work, "inventory.ini")])
variables = VariableManager(loader=loader, inventory=inventory)
play = Play().load(
    {"hosts": "all", "gather_facts": False, "vars_files": ["stages.yml"], "tasks": [{"debug": {"msg": "x"}}]},
    variable_manager=variables, loader=loader,
)

def host_vars():
    found = []
    for host in inventory.get_hosts():
        host_vars = variables.get_vars(play=play, host=host)
        found.append({name: host_vars[name] for name in ("stage_order", "stage_owner")})
    return found

# Every host's variables once, and how many parses that took.
def measure(label):
    parses.clear()
    report[label] = host_vars()
    report["parses_" + label] = len(parses)

def rewrite(text):
    time.sleep(0.01)  # a later mtime than the last write
    with open(stages, "w") as out:
        out.write(text)

measure("first")
measure("again")
# Rewritten during the run (another size, a later mtime): read again, once.
rewrite("stage_order: [preflight, base, gpu]\nstage_owner: two\n")
measure("changed")
# Rewritten in place with the same size: only its times tell, and they are enough.
rewrite("stage_order: [preflight, base, gpu]\nstage_owner: six\n")
measure("same_size")

# Another loader (ansible-core's cache is per loader: it may hold other vault secrets) parses its own.
other_loader = DataLoader()
other_loader.set_basedir(work)
other = VariableManager(loader=other_loader, inventory=inventory)
parses.clear()
report["other_loader"] = other.get_vars(play=play, host=inventory.get_hosts()[0])["stage_owner"]
report["parses_other_loader"] = len(parses)
print(json.dumps(report))
"""


def _probe(tmp_path, install: bool = True) -> dict:
    code = (
        PROBE.replace("__PLUGINS__", repr(str(PROJECT / "plugins" / "callback")))
        .replace("__WORK__", repr(str(tmp_path)))
        .replace("__INSTALL__", repr(install))
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_vars_files_are_parsed_once_with_the_same_variables(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "cached").mkdir()
    plain = _probe(tmp_path / "plain", install=False)
    cached = _probe(tmp_path / "cached")
    assert cached["installed"] is None
    before = [{"stage_order": ["preflight", "base"], "stage_owner": "one"}] * 3
    after = [{"stage_order": ["preflight", "base", "gpu"], "stage_owner": "two"}] * 3
    assert plain["first"] == plain["again"] == cached["first"] == cached["again"] == before
    assert plain["changed"] == cached["changed"] == after
    # ansible-core alone parses the file for every host, every time; with the plugin, once.
    assert plain["parses_first"] == plain["parses_again"] == 3
    assert cached["parses_first"] == 1 and cached["parses_again"] == 0
    # A file rewritten during the run is parsed again, once, and its new content is what hosts get.
    assert plain["parses_changed"] == 3 and cached["parses_changed"] == 1
    same_size = [{"stage_order": ["preflight", "base", "gpu"], "stage_owner": "six"}] * 3
    assert plain["same_size"] == cached["same_size"] == same_size
    assert plain["parses_same_size"] == 3 and cached["parses_same_size"] == 1
    assert plain["other_loader"] == cached["other_loader"] == "six"
    assert plain["parses_other_loader"] == cached["parses_other_loader"] == 1


def test_off_with_a_note_on_a_load_from_file_of_another_shape(monkeypatch):
    sys.path.insert(0, str(PROJECT / "plugins" / "callback"))
    try:
        import vars_files_cache
    finally:
        sys.path.remove(str(PROJECT / "plugins" / "callback"))
    from ansible.parsing.dataloader import DataLoader

    def other_shape(self, file_name, cache="all"):
        return None

    monkeypatch.setattr(DataLoader, "load_from_file", other_shape)
    monkeypatch.delattr(DataLoader, "_clusterforge_vars_files_cache", raising=False)
    reason = vars_files_cache.install()
    assert reason and "not ansible-core 2.19's" in reason
    assert DataLoader.load_from_file is other_shape
