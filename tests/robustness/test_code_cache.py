"""The opt-in Jinja code cache (plugins/callback/accelerate.py) against a hostile or careless setup:
it is off unless asked for, nothing a template held (a templated -e secret) is left on disk after the
run, and it never reads code from a place another user could swap (the old cache checked its leaf
directory only, once, and rendered a swapped entry in place of another template)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.paths import PROJECT, load_plugin

SECRET = "codecache-s3cret-4417"
PLAY = """\
- name: Probe
  hosts: localhost
  gather_facts: false
  tasks:
    - name: A templated secret
      ansible.builtin.debug:
        msg: "{{ token | length }}"
"""


def _files_holding(root: Path, text: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and text.encode() in path.read_bytes():
                found.append(path)
        except OSError:
            continue
    return found


def test_no_templated_secret_outlives_the_run(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAY)
    scratch, home = tmp_path / "tmp", tmp_path / "home"
    scratch.mkdir()
    home.mkdir()
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
        "CLUSTERFORGE_ACCELERATE": "1",
        "TMPDIR": str(scratch),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "ANSIBLE_LOCAL_TEMP": str(scratch / "ansible-local"),
        "ANSIBLE_NOCOLOR": "1",
    }
    env.pop("ANSIBLE_CALLBACK_PLUGINS", None)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-v",
            "-e",
            "token={{ '" + SECRET + "' }}",
            str(playbook),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "jinja_code_cache on" in done.stdout
    assert f"msg: {len(SECRET)}" in done.stdout
    assert _files_holding(scratch, SECRET) == []
    assert _files_holding(home, SECRET) == []


def test_a_directory_under_a_parent_others_may_write_is_not_trusted(tmp_path):
    plugin = load_plugin("plugins/callback/accelerate.py")
    shared = tmp_path / "shared-cache"  # a shared XDG_CACHE_HOME, say
    shared.mkdir()
    shared.chmod(0o777)
    leaf = shared / "mine"
    leaf.mkdir(mode=0o700)
    assert not plugin.trusted_directory(leaf)
    assert plugin.CodeCache(leaf).directory is None  # memory only


def test_a_swapped_entry_is_never_rendered_for_another_template(tmp_path):
    plugin = load_plugin("plugins/callback/accelerate.py")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    cache = plugin.CodeCache(run)
    mine, theirs = cache.material("template", "{{ a }}"), cache.material("template", "{{ b }}")
    cache.put(theirs, compile("'theirs'", "<theirs>", "eval"))
    (run / cache.key(mine)).write_bytes((run / cache.key(theirs)).read_bytes())
    assert plugin.CodeCache(run).get(mine) is None
