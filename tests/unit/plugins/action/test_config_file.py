"""config_file (action + module): the bytes `template` would write, one round trip to the node,
check and diff mode, attributes, validate, and errors. Runs ansible-playbook on localhost with the
project's ansible.cfg and pipelining, as the roles run it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.paths import PROJECT

TEMPLATE = """\
# {{ ansible_managed }}
# from {{ template_path | basename }} for {{ template_destpath }}
{% for name in names %}
{% if name != 'skip' %}
{{ name }} = {{ loop.index }}
{% endif %}
{% endfor %}
{% include 'part.j2' %}
last line without newline"""


def write_role(tmp_path: Path) -> None:
    templates = tmp_path / "roles" / "probe" / "templates"
    templates.mkdir(parents=True)
    (templates / "probe.conf.j2").write_text(TEMPLATE)
    (templates / "part.j2").write_text("included {{ names | length }}\n")
    (tmp_path / "roles" / "probe" / "tasks").mkdir()


def run_play(
    tmp_path: Path, tasks: str, *options: str, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- name: Probe\n  hosts: localhost\n  gather_facts: false\n  vars:\n    names: [a, skip, b]\n"
        "  tasks:\n" + textwrap.indent(textwrap.dedent(tasks), "    ")
    )
    (tmp_path / "roles" / "probe" / "tasks").mkdir(parents=True, exist_ok=True)
    (tmp_path / "roles" / "probe" / "tasks" / "main.yml").write_text("[]\n")
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(tmp_path / "roles"),
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        **(env or {}),
    }
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            *options,
            str(playbook),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=180,
    )
    if check:
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done


def in_role(task: str) -> str:
    """A task run inside the probe role, where `template` and config_file look for templates/."""
    return f"""\
- name: In the role
  ansible.builtin.include_role:
    name: probe
    tasks_from: {task}
"""


def role_tasks(tmp_path: Path, name: str, tasks: str) -> None:
    (tmp_path / "roles" / "probe" / "tasks" / f"{name}.yml").write_text(textwrap.dedent(tasks))


def test_writes_the_bytes_template_writes(tmp_path):
    write_role(tmp_path)
    role_tasks(
        tmp_path,
        "both",
        f"""\
        - name: Builtin
          ansible.builtin.template:
            src: probe.conf.j2
            dest: {tmp_path}/builtin.conf
            mode: "0640"
        - name: Ours
          config_file:
            src: probe.conf.j2
            dest: {tmp_path}/ours.conf
            mode: "0640"
        """,
    )
    run_play(tmp_path, in_role("both"))
    builtin, ours = (tmp_path / "builtin.conf").read_bytes(), (tmp_path / "ours.conf").read_bytes()
    assert b"\na = 1\nb = 3\nincluded 3" in ours and ours.endswith(b"last line without newline")
    assert ours.replace(b"ours.conf", b"builtin.conf") == builtin
    assert oct((tmp_path / "ours.conf").stat().st_mode & 0o777) == "0o640"


def changes(done: subprocess.CompletedProcess) -> list[str]:
    return re.findall(r"^(ok|changed|skipping|fatal): \[localhost\]", done.stdout, re.M)


def test_changes_once_then_reports_ok_and_sets_attributes(tmp_path):
    dest = tmp_path / "app.conf"
    task = f"""\
    - name: Write
      config_file:
        content: "key = {{{{ names | join(',') }}}}\\n"
        dest: {dest}
        mode: "{{{{ file_mode }}}}"
    """
    assert changes(run_play(tmp_path, task, "-e", "file_mode=0600")) == ["changed"]
    assert dest.read_text() == "key = a,skip,b\n" and dest.stat().st_mode & 0o777 == 0o600
    inode = dest.stat().st_ino
    assert changes(run_play(tmp_path, task, "-e", "file_mode=0600")) == ["ok"]
    assert dest.stat().st_ino == inode, "an unchanged file is not rewritten"
    # Only the mode differs: changed, the content stays, the mode follows.
    assert changes(run_play(tmp_path, task, "-e", "file_mode=0644")) == ["changed"]
    assert dest.stat().st_mode & 0o777 == 0o644 and dest.stat().st_ino == inode


def test_check_mode_changes_nothing_and_diff_shows_the_lines(tmp_path):
    dest = tmp_path / "app.conf"
    task = f"""\
    - name: Write
      config_file:
        content: "{{{{ text }}}}"
        dest: {dest}
    """
    done = run_play(tmp_path, task, "--check", "--diff", "-e", "text=new-line")
    assert changes(done) == ["changed"] and not dest.exists()
    assert "+new-line" in done.stdout
    dest.write_text("old-line\n")
    done = run_play(tmp_path, task, "--check", "--diff", "-e", "text=new-line")
    assert changes(done) == ["changed"] and dest.read_text() == "old-line\n"
    assert "-old-line" in done.stdout and "+new-line" in done.stdout


def test_a_failed_validate_leaves_the_file_and_no_stray_copy(tmp_path):
    dest = tmp_path / "app.json"
    dest.write_text('{"good": true}\n')
    task = f"""\
    - name: Write
      config_file:
        content: "{{{{ text }}}}"
        dest: {dest}
        validate: {sys.executable} -m json.tool %s
    """
    done = run_play(tmp_path, task, "-e", "text=not-json", check=False)
    assert done.returncode == 2 and "failed to validate the new" in done.stdout
    assert dest.read_text() == '{"good": true}\n'
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".app.json")) == []
    assert changes(run_play(tmp_path, task, "-e", json.dumps({"text": '{"good": false}'}))) == ["changed"]
    assert json.loads(dest.read_text()) == {"good": False}


def test_the_content_is_masked_in_what_the_module_returns(tmp_path):
    task = f"""\
    - name: Write
      config_file:
        content: "password = hunter2\\n"
        dest: {tmp_path}/secret.conf
        mode: "0600"
    """
    # -vvv shows the module's arguments as it echoes them back (its invocation). ansible-core 2.21
    # returns the invocation only when asked (inject_invocation, new in 2.21; 2.19 ignores the name).
    done = run_play(tmp_path, task, "-vvv", env={"ANSIBLE_INJECT_INVOCATION": "True"})
    assert "hunter2" not in done.stdout
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in done.stdout


def round_trips(done: subprocess.CompletedProcess, task: str) -> int:
    """Commands the connection ran on the node for one task (the local connection logs each EXEC)."""
    section = done.stdout.split(f"TASK [{task}]", 1)[1].split("TASK [", 1)[0]
    return len(re.findall(r"^<localhost> EXEC ", section, re.M))


def test_an_unchanged_file_costs_one_round_trip_where_template_costs_more(tmp_path):
    write_role(tmp_path)
    role_tasks(
        tmp_path,
        "both",
        f"""\
        - name: Builtin
          ansible.builtin.template:
            src: probe.conf.j2
            dest: {tmp_path}/builtin.conf
            mode: "0644"
        - name: Ours
          config_file:
            src: probe.conf.j2
            dest: {tmp_path}/ours.conf
            mode: "0644"
        """,
    )
    run_play(tmp_path, in_role("both"))
    done = run_play(tmp_path, in_role("both"), "-vvv")
    assert re.findall(r"^(ok|changed): \[localhost\]", done.stdout, re.M) == ["ok", "ok"]
    assert round_trips(done, "probe : Ours") == 1
    assert round_trips(done, "probe : Builtin") >= 4


def test_the_benchs_stock_stand_in_writes_the_same_file_with_template(tmp_path):
    """bench/fleet.py's stock setting runs config_file tasks as ansible.builtin.template does."""
    write_role(tmp_path)
    role_tasks(
        tmp_path,
        "ours",
        f"""\
        - name: Ours
          config_file:
            src: probe.conf.j2
            dest: {tmp_path}/{{{{ name }}}}.conf
            mode: "0644"
        """,
    )
    stand_in = {"ANSIBLE_ACTION_PLUGINS": str(PROJECT / "bench/fleet_plugins/action_builtin")}
    run_play(tmp_path, in_role("ours"), "-e", "name=project")
    run_play(tmp_path, in_role("ours"), "-e", "name=stock", env=stand_in)
    done = run_play(tmp_path, in_role("ours"), "-vvv", "-e", "name=stock", env=stand_in)
    project, stock = (tmp_path / "project.conf").read_bytes(), (tmp_path / "stock.conf").read_bytes()
    assert stock == project.replace(b"project.conf", b"stock.conf")
    assert round_trips(done, "probe : Ours") >= 4


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("content: x\n    src: probe.conf.j2", "exactly one of src (a template) and content (text)"),
        ("src: missing.conf.j2", "missing.conf.j2"),
        ("content: {a: 1}", "content must be text, got a mapping"),
    ],
)
def test_bad_arguments_say_what_is_wrong(tmp_path, arguments, message):
    write_role(tmp_path)
    role_tasks(
        tmp_path,
        "bad",
        f"- name: Bad\n  config_file:\n    {arguments}\n    dest: {tmp_path}/out.conf\n",
    )
    done = run_play(tmp_path, in_role("bad"), check=False)
    assert done.returncode == 2 and message in done.stdout, done.stdout[-2000:]
    assert not (tmp_path / "out.conf").exists()


def test_a_symlink_is_replaced_once_and_a_new_file_is_never_open_to_others(tmp_path):
    target = tmp_path / "target.conf"
    target.write_text("key = a,skip,b\n")
    dest = tmp_path / "app.conf"
    dest.symlink_to(target)
    task = f"""\
    - name: Write
      config_file:
        content: "key = {{{{ names | join(',') }}}}\\n"
        dest: {dest}
        mode: "0640"
    """
    assert changes(run_play(tmp_path, task)) == ["changed"]
    assert not dest.is_symlink() and dest.read_text() == "key = a,skip,b\n"
    assert changes(run_play(tmp_path, task)) == ["ok"]
    assert target.read_text() == "key = a,skip,b\n"


def test_validate_sees_the_requested_mode_and_leaves_no_glob_visible_copy(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    dest = rules / "node.yml"
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, stat, sys\n"
        "print(oct(stat.S_IMODE(os.stat(sys.argv[1]).st_mode)), os.path.basename(sys.argv[1]).endswith('.yml'))\n"
        "sys.exit(1)\n"
    )
    task = f"""\
    - name: Write
      config_file:
        content: "groups: []\\n"
        dest: {dest}
        mode: "0640"
        validate: {sys.executable} {probe} %s
    """
    done = run_play(tmp_path, task, check=False)
    assert "0o640 False" in done.stdout, done.stdout[-2000:]
    assert not dest.exists() and sorted(rules.iterdir()) == []


# A sitecustomize that hides ansible-core's private template-vars module from config_file (core's own
# template action still has it), as a core that moved or removed it would: config_file must fall
# back to template/copy and say so once per run.
HIDE_PRIVATE_IMPORT = """\
import builtins
real_import = builtins.__import__
def hiding_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__file__") or ""
    if name == "ansible._internal._templating._template_vars" and importer.endswith("action/config_file.py"):
        raise ImportError("hidden by the test: " + name)
    return real_import(name, globals, locals, fromlist, level)
builtins.__import__ = hiding_import
"""


def test_a_core_without_its_private_import_falls_back_to_template_and_copy_and_says_so_once(tmp_path):
    write_role(tmp_path)
    role_tasks(
        tmp_path,
        "ours",
        f"""\
        - name: Ours
          config_file:
            src: probe.conf.j2
            dest: {tmp_path}/{{{{ name }}}}.conf
            mode: "0640"
        - name: Ours, twice
          config_file:
            src: probe.conf.j2
            dest: {tmp_path}/{{{{ name }}}}-2.conf
            mode: "0640"
        - name: Content
          config_file:
            content: "plain {{{{ name }}}}\\n"
            dest: {tmp_path}/{{{{ name }}}}.txt
        """,
    )
    hiding = tmp_path / "hide"
    hiding.mkdir()
    (hiding / "sitecustomize.py").write_text(HIDE_PRIVATE_IMPORT)
    run_play(tmp_path, in_role("ours"), "-e", "name=normal")
    hidden = {"PYTHONPATH": str(hiding)}
    done = run_play(tmp_path, in_role("ours"), "-vvv", "-e", "name=fallback", env=hidden)
    output = done.stdout + done.stderr
    assert output.count("config_file: this ansible-core lacks what it renders with") == 1, output[-3000:]
    assert "hidden by the test" in output
    normal, fallback = (tmp_path / "normal.conf").read_bytes(), (tmp_path / "fallback.conf").read_bytes()
    assert fallback == normal.replace(b"normal.conf", b"fallback.conf")
    assert oct((tmp_path / "fallback.conf").stat().st_mode & 0o777) == "0o640"
    assert (tmp_path / "fallback.txt").read_text() == "plain fallback\n"
    assert round_trips(done, "probe : Ours") >= 4  # template's round trips: the fallback really ran
    again = run_play(tmp_path, in_role("ours"), "-e", "name=fallback", env=hidden)
    assert "changed" not in changes(again)
