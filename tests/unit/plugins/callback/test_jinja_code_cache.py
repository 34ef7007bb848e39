"""plugins/callback/jinja_code_cache.py: templates render exactly as without it, a template compiled
once is never code-generated again (in the same process, in a forked worker, in the next run), and
what must not be trusted or kept (compile errors, torn files, a directory others may write) is not."""

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
from ansible.template import Templar
from ansible.parsing.dataloader import DataLoader
from ansible._internal._datatag._tags import TrustedAsTemplate
import jinja_code_cache

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

report = {}
if __INSTALL__:
    directory = jinja_code_cache.cache_directory()
    report["installed"] = jinja_code_cache.install(jinja_code_cache.CodeCache(directory))
    from ansible._internal._templating._jinja_bits import AnsibleEnvironment
    report["disk"] = AnsibleEnvironment._clusterforge_code_cache.directory is not None
report["results"] = render()
report["generated_first"] = len(generated)
generated.clear()
report["again"] = render()
report["generated_again"] = len(generated)
report["error"] = [error("{{ a + }}"), error("{{ a + }}")]

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


def _probe(cache_home, install: bool = True) -> dict:
    plugins = repr(str(PROJECT / "plugins" / "callback"))
    code = PROBE.replace("__PLUGINS__", plugins).replace("__INSTALL__", repr(install))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _cache_files(cache_home) -> list:
    return [path for path in cache_home.rglob("*") if path.is_file() and not path.name.startswith(".tmp-")]


def test_results_are_those_of_ansible_core_and_nothing_is_generated_twice(tmp_path):
    plain = _probe(tmp_path / "plain", install=False)
    cached = _probe(tmp_path / "cache")
    assert cached["installed"] is None and cached["disk"] is True
    expected = [4, "1,2,3", "1-2-3-", "3 {{ a }}", "[[ a ]] 3", True, True, True, True]
    assert plain["results"] == plain["again"] == expected
    assert cached["results"] == cached["again"] == expected
    # Without the cache every rendering generates code again; with it, only the first.
    assert plain["generated_first"] == plain["generated_again"] == 9
    assert cached["generated_first"] == 9 and cached["generated_again"] == 0
    assert plain["generated_in_fork"] == 9 and cached["generated_in_fork"] == 0
    # A template that does not compile is reported as ever, each time, and never cached.
    assert cached["error"] == plain["error"] and "no error" not in cached["error"][0]
    assert len(_cache_files(tmp_path / "cache")) == 9


def test_the_next_run_loads_the_code_from_disk(tmp_path):
    _probe(tmp_path)
    files = _cache_files(tmp_path)
    assert files and all(oct(path.parent.stat().st_mode & 0o777) == "0o700" for path in files)
    later = _probe(tmp_path)
    assert later["generated_first"] == 0
    assert later["results"][:5] == [4, "1,2,3", "1-2-3-", "3 {{ a }}", "[[ a ]] 3"]


def test_a_torn_or_foreign_file_is_compiled_again(tmp_path):
    _probe(tmp_path)
    files = _cache_files(tmp_path)
    files[0].write_bytes(b"\x00not marshal")
    files[1].write_bytes(b"")
    later = _probe(tmp_path)
    assert later["generated_first"] == 2
    assert later["results"][:5] == [4, "1,2,3", "1-2-3-", "3 {{ a }}", "[[ a ]] 3"]


def test_a_directory_others_may_write_is_not_used(tmp_path):
    shared = tmp_path / "clusterforge" / "jinja-code"
    shared.mkdir(parents=True)
    _probe(tmp_path)  # creates the versioned directory below, private
    (versioned,) = shared.iterdir()
    for path in _cache_files(tmp_path):
        path.unlink()
    versioned.chmod(0o777)
    report = _probe(tmp_path)
    assert report["disk"] is False
    assert report["generated_again"] == 0  # memory still spares the second rendering
    assert not _cache_files(tmp_path)


def test_the_directory_stays_bounded(tmp_path):
    plugin = load_plugin("plugins/callback/jinja_code_cache.py")  # loading it patches nothing
    cache = plugin.CodeCache(tmp_path / "code")
    for number in range(10):
        key = cache.key("template", f"{{{{ {number} }}}}")
        cache.put(key, compile(str(number), "<probe>", "eval"))
        os.utime(cache.directory / key, (number, number))  # written in this order
    assert cache.prune(limit=20) == 0
    assert cache.prune(limit=4) == 8
    kept = sorted(path.stat().st_mtime for path in (tmp_path / "code").iterdir())
    assert kept == [8, 9]  # the two written last
    assert eval(cache.get(cache.key("template", "{{ 9 }}"))) == 9
