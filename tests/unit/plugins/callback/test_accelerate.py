"""plugins/callback/accelerate.py: off unless asked for, and said at -v; when on, templates render
exactly as without it (its key holds everything the generated code depends on), a template compiled
once is not code-generated again in the run's workers, and nothing outlives the run or is read
from a place another user controls."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import PROJECT, load_plugin

# Each probe runs in a fresh interpreter: the plugin patches ansible-core's Jinja environment class.
PROBE = r"""
import json, os, sys
sys.path.insert(0, __PLUGINS__)
import jinja2.compiler
from jinja2 import pass_context
from ansible.template import Templar
from ansible.parsing.dataloader import DataLoader
from ansible._internal._datatag._tags import TrustedAsTemplate
import accelerate

generated = []
original_generate = jinja2.compiler.generate
def counting_generate(*args, **kwargs):
    generated.append(1)
    return original_generate(*args, **kwargs)
jinja2.compiler.generate = counting_generate
jinja2.environment.generate = counting_generate

templar = Templar(loader=DataLoader(), variables={"a": 3, "b": [1, 2, 3], "s": "x", "path": "C:\\dir"})
TEMPLATES = [
    "{{ a + 1 }}",
    "{{ b | map('string') | join(',') }}",
    "{% for i in b %}{{ i }}-{% endfor %}",
    # The same text under other delimiters (a header) is another template, with another result.
    "#jinja2: variable_start_string:'[[', variable_end_string:']]'\n[[ a ]] {{ a }}",
    "[[ a ]] {{ a }}",
]
CONDITIONS = ["a > 2", "b | length == 3", "s is defined and s == 'x'", "path == 'C:\\\\dir'"]

def render():
    out = [templar.template(TrustedAsTemplate().tag(text)) for text in TEMPLATES]
    out += [templar.evaluate_conditional(TrustedAsTemplate().tag(text)) for text in CONDITIONS]
    return out

def error(text):
    try:
        templar.template(TrustedAsTemplate().tag(text))
    except Exception as failed:
        return type(failed).__name__ + ": " + str(failed).splitlines()[0]
    return "no error"

# The same template text, where the filter (and the test) it names takes the context in one
# environment and not in the other: Jinja generates other code for each.
def plain(value): return f"plain:{value}"
@pass_context
def with_context(context, value): return f"context:{value}:{context.get('a')}"
def plain_test(value): return value == 3
@pass_context
def context_test(context, value): return value == context.get("a")

def flags():
    out = []
    for filter_, test in ((plain, plain_test), (with_context, context_test), (plain, plain_test)):
        other = Templar(loader=DataLoader(), variables={"a": 3})
        other.environment.filters["probe"] = filter_
        other.environment.tests["probe"] = test
        out.append(other.template(TrustedAsTemplate().tag("{{ a | probe }}")))
        out.append(other.evaluate_conditional(TrustedAsTemplate().tag("a is probe")))
    return out

report = {}
directory = __DIRECTORY__
if __INSTALL__:
    report["installed"] = accelerate.install(accelerate.CodeCache(directory and __import__("pathlib").Path(directory)))
    from ansible._internal._templating._jinja_bits import AnsibleEnvironment
    report["disk"] = AnsibleEnvironment._clusterforge_code_cache.directory is not None
report["results"] = render()
report["generated_first"] = len(generated)
generated.clear()
report["again"] = render()
report["generated_again"] = len(generated)
report["error"] = [error("{{ a + }}"), error("{{ a + }}")]
report["flags"] = flags()

# A worker is a fork: what the main process compiled, it does not generate again.
generated.clear()
read, write = os.pipe()
if os.fork() == 0:
    render()
    os.write(write, str(len(generated)).encode())
    os._exit(0)
os.wait()
report["generated_in_fork"] = int(os.read(read, 64).decode())
print(json.dumps(report))
"""

EXPECTED = [4, "1,2,3", "1-2-3-", "3 {{ a }}", "[[ a ]] 3", True, True, True, True]
FLAGS = ["plain:3", True, "context:3:3", True, "plain:3", True]


def _probe(directory=None, install: bool = True) -> dict:
    plugins = repr(str(PROJECT / "plugins" / "callback"))
    code = (
        PROBE.replace("__PLUGINS__", plugins)
        .replace("__INSTALL__", repr(install))
        .replace("__DIRECTORY__", repr(directory and str(directory)))
    )
    env = {**os.environ, "ANSIBLE_DEPRECATION_WARNINGS": "False"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _private(path):
    path.mkdir(mode=0o700)
    path.chmod(0o700)
    return path


def test_results_are_those_of_ansible_core_and_nothing_is_generated_twice(tmp_path):
    plain = _probe(install=False)
    cached = _probe(_private(tmp_path / "run"))
    assert cached["installed"] is None and cached["disk"] is True
    assert plain["results"] == plain["again"] == EXPECTED
    assert cached["results"] == cached["again"] == EXPECTED
    # Without the cache every rendering generates code again; with it, only the first.
    assert plain["generated_first"] == plain["generated_again"] == 9
    assert cached["generated_first"] == 9 and cached["generated_again"] == 0
    assert plain["generated_in_fork"] == 9 and cached["generated_in_fork"] == 0
    # A template that does not compile is reported as ever, each time, and never cached.
    assert cached["error"] == plain["error"] and "no error" not in cached["error"][0]


def test_the_key_holds_what_the_generated_code_depends_on(tmp_path):
    """Same text, a filter and a test that take the context in one environment and not in another:
    the code Jinja generates differs, so a key without the plugins' flags served the wrong code
    (the context filter was called without its context: an error where ansible-core renders)."""
    assert _probe(install=False)["flags"] == FLAGS
    assert _probe(_private(tmp_path / "run"))["flags"] == FLAGS
    assert _probe(None)["flags"] == FLAGS  # memory only


def test_workers_of_a_run_share_the_code_through_the_run_directory(tmp_path):
    run = _private(tmp_path / "run")
    _probe(run)
    files = [path for path in run.iterdir() if not path.name.startswith(".tmp-")]
    assert len(files) >= 9
    later = _probe(run)  # another process of the same run: loads from the directory
    assert later["generated_first"] == 0 and later["results"] == EXPECTED


def test_an_entry_is_used_only_for_its_own_template(tmp_path):
    """A file swapped for another one (another template's code under this name) is compiled again,
    never rendered in its place; a torn file likewise."""
    plugin = load_plugin("plugins/callback/accelerate.py")  # loading it patches nothing
    cache = plugin.CodeCache(_private(tmp_path / "run"))
    one, two = cache.material("template", "{{ 1 }}"), cache.material("template", "{{ 2 }}")
    cache.put(one, compile("1", "<one>", "eval"))
    cache.put(two, compile("2", "<two>", "eval"))
    (cache.directory / cache.key(one)).write_bytes((cache.directory / cache.key(two)).read_bytes())
    fresh = plugin.CodeCache(cache.directory)  # nothing in memory: reads the files
    assert fresh.get(one) is None
    assert eval(fresh.get(two)) == 2
    (cache.directory / cache.key(two)).write_bytes(b"\x00torn")
    assert plugin.CodeCache(cache.directory).get(two) is None


def test_a_directory_another_user_could_replace_is_not_used(tmp_path):
    plugin = load_plugin("plugins/callback/accelerate.py")
    assert plugin.trusted_directory(_private(tmp_path / "ok"))
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o755)
    assert not plugin.trusted_directory(loose)  # others may read what templates contained
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # writable by all, not sticky: anyone may rename the leaf and put theirs
    assert not plugin.trusted_directory(_private(shared / "run"))
    shared.chmod(0o1777)  # sticky, as /tmp: only the owner may rename it
    assert plugin.trusted_directory(shared / "run")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "ok")
    assert not plugin.trusted_directory(link)
    cached = _probe(shared.chmod(0o777) or shared / "run")
    assert cached["disk"] is False and cached["results"] == EXPECTED and cached["generated_again"] == 0


PLAY = """\
- name: Probe
  hosts: localhost
  gather_facts: false
  tasks:
    - name: A template rendered in a worker
      ansible.builtin.debug:
        msg: "{{ [3, 1] | sort | first }}"
"""


def _play(tmp_path, *args, **env_extra) -> str:
    playbook = tmp_path / "probe.yml"
    playbook.write_text(PLAY)
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    env = {**os.environ, "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    env["TMPDIR"] = str(temporary)
    env["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = str(tmp_path / "facts")
    env.pop("ANSIBLE_CALLBACK_PLUGINS", None)
    env.pop("CLUSTERFORGE_ACCELERATE", None)
    env.update(env_extra)
    done = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), *args, str(playbook)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "msg: 1" in output
    # The run's code directory is gone once the playbook has ended.
    assert not [path for path in temporary.iterdir() if path.name.startswith("clusterforge-jinja-code-")]
    return output


def test_off_by_default_and_said_at_v(tmp_path):
    output = _play(tmp_path, "-v")
    assert "clusterforge accelerations: fork_warmup on; jinja_code_cache off; CLUSTERFORGE_ACCELERATE=1" in output


def test_the_environment_switch_turns_it_on_for_a_run(tmp_path):
    output = _play(tmp_path, "-v", CLUSTERFORGE_ACCELERATE="1")
    assert "clusterforge accelerations: fork_warmup on; jinja_code_cache on" in output


def test_an_ansible_cfg_setting_turns_it_on(tmp_path):
    config = tmp_path / "ansible.cfg"
    config.write_text((PROJECT / "ansible.cfg").read_text() + "\n[clusterforge]\naccelerate = true\n")
    text = config.read_text().replace("= roles", f"= {PROJECT}/roles").replace("= plugins/", f"= {PROJECT}/plugins/")
    config.write_text(text)
    output = _play(tmp_path, "-v", ANSIBLE_CONFIG=str(config))
    assert "jinja_code_cache on" in output


def test_nothing_is_said_without_v(tmp_path):
    assert "clusterforge accelerations" not in _play(tmp_path)
