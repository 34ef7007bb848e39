"""`clusterforge run` on hostile and careless input, for real against localhost: the exit code
tells the truth, Ansible's error is shown, nothing is read as markup, no secret is left behind,
and cancelling ends ansible-playbook with everything it started."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import resource
import signal
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clusterforge import errors
from tests.integration.conftest import local_inventory
from tests.integration.conftest import run_playbook as cf_run

SECRET = "robust-s3cret-9931"


@pytest.fixture
def env(tmp_path) -> dict:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # Its own TMPDIR, so a test can tell that no file with a secret was left there.
    environ = {
        **os.environ,
        "CLUSTERFORGE_STATE_DIR": str(tmp_path / "state"),
        "TMPDIR": str(scratch),
        # ansible.cfg's fact cache (~/.cache/clusterforge/facts), here the test's own.
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"),
    }
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR"):
        environ.pop(name, None)
    return environ


@pytest.fixture
def hosts(tmp_path) -> Path:
    return local_inventory(tmp_path, {"alpha": ""})


def playbook(tmp_path: Path, tasks: str, play: str = "Robustness") -> Path:
    path = tmp_path / "play.yml"
    path.write_text(f"- name: {json.dumps(play)}\n  hosts: all\n  gather_facts: false\n  tasks:\n{tasks}")
    return path


def run_dirs(env: dict) -> list[Path]:
    runs = Path(env["CLUSTERFORGE_STATE_DIR"]) / "runs"
    return sorted(runs.iterdir()) if runs.is_dir() else []


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds marker."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and proc.name != str(os.getpid()):
            found.append(int(proc.name))
    return found


def wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def files_holding(root: Path, text: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and text in p.read_text(errors="ignore")]


OK_TASK = """    - name: Say hello
      ansible.builtin.debug:
        msg: hello
"""

# --- exit codes of runs that fail before any host runs -------------------------------------


def test_a_playbook_syntax_error_shows_ansibles_error_and_exits_4(tmp_path, env, hosts):
    broken = tmp_path / "broken.yml"
    broken.write_text("- name: Broken\n  hosts: all\n  tasks:\n    - debug: {msg: [\n")
    done = cf_run(env, str(broken), "-i", str(hosts))
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "ansible-playbook stopped before any host ran" in done.stderr
    assert "YAML parsing failed" in done.stderr and str(broken) in done.stderr
    assert json.loads((run_dirs(env)[0] / "summary.json").read_text())["exit_code"] == errors.EXIT_USAGE


def test_a_limit_matching_nothing_exits_4(tmp_path, env, hosts):
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(hosts), "--limit", "nosuchhost", "--json")
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "no hosts to target" in done.stderr
    assert json.loads(done.stdout)["error"]  # --json carries the reason too


def test_an_inventory_without_hosts_exits_4(tmp_path, env):
    empty = tmp_path / "empty.ini"
    empty.write_text("[all]\n")
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(empty))
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "no host matched" in done.stderr and "provided hosts list is empty" in done.stderr


def test_a_topology_inventory_without_its_plugin_line_is_refused(tmp_path, env, project):
    example = (project / "inventories" / "examples" / "pcie-roce-small.topology.yml").read_text()
    source = tmp_path / "cluster.topology.yml"
    source.write_text("\n".join(line for line in example.splitlines() if not line.startswith("plugin:")))
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(source))
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "plugin: expected `plugin: topology`" in done.stderr
    assert run_dirs(env) == []  # refused before Ansible started


def test_an_invalid_topology_inventory_is_named_field_by_field(tmp_path, env):
    source = tmp_path / "cluster.topology.yml"
    source.write_text("plugin: topology\ncluster: {name: [x]}\n")
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(source))
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "invalid topology inventory" in done.stderr and f"{source}:2: cluster.name" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_locale_ansible_refuses_is_a_machine_problem(tmp_path, env, hosts):
    done = cf_run({**env, "LC_ALL": "C"}, str(playbook(tmp_path, OK_TASK)), "-i", str(hosts))
    assert done.returncode == errors.EXIT_ENVIRONMENT, done.stdout + done.stderr
    assert "locale encoding to be UTF-8" in done.stderr


# --- untrusted text ------------------------------------------------------------------------

MARKUP_TASKS = """    - name: "[bold]Mount[/bold] [/x]"
      ansible.builtin.fail:
        msg: "mount failed for [/dev/nvme0n1] \\e[31mred\\e[0m \\x01 [link=file:///etc]"
"""


@pytest.mark.parametrize("terminal", [True, False], ids=["live-panel", "plain-lines"])
def test_markup_in_plays_tasks_and_messages_is_printed_as_text(tmp_path, env, hosts, terminal):
    # TTY_COMPATIBLE=1 makes Rich treat the pipe as a terminal: the live panel, where a play
    # named "[/x]" used to abort the run before summary.json and junit.xml were written.
    run_env = {**env, "TTY_COMPATIBLE": "1"} if terminal else env
    done = cf_run(run_env, str(playbook(tmp_path, MARKUP_TASKS, play="[/x] play")), "-i", str(hosts))
    assert done.returncode == errors.EXIT_HOSTS_FAILED, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "mount failed for [/dev/nvme0n1]" in done.stdout
    assert "[bold]Mount[/bold] [/x]" in done.stdout
    if not terminal:  # a CI log gets no escape sequence from a host (the live panel has Rich's own)
        assert "\x1b" not in done.stdout and "mount failed for [/dev/nvme0n1] red " in done.stdout
    run_dir = run_dirs(env)[0]
    assert (run_dir / "summary.json").is_file()
    suites = ET.parse(run_dir / "junit.xml").getroot()  # well-formed despite ESC and \x01
    failure = suites.find(".//testcase[@name='alpha']/failure")
    assert suites.find("testsuite").get("name") == "[/x] play"
    assert "mount failed for [/dev/nvme0n1] red  [link=file:///etc]" in failure.text
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", (run_dir / "junit.xml").read_text())


# --- -e as ansible-playbook takes it ---------------------------------------------------------

CHECK_VARS = """    - name: Check the extra variables
      ansible.builtin.assert:
        that:
          - a == '1'
          - b == 'two words'
          - c == [1, 2]
          - d | string == '2024-01-02'
          - s | list == ['x']
          - e == 'last wins'
"""


def test_extra_vars_in_every_form_ansible_playbook_takes(tmp_path, env, hosts):
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text("d: 2024-01-02\ns: !!set {x: null}\ne: first\n")
    done = cf_run(
        env,
        str(playbook(tmp_path, CHECK_VARS)),
        "-i",
        str(hosts),
        "-e",
        "a=1 b='two words'",
        "-e",
        '{"c": [1, 2]}',
        "-e",
        f"@{vars_file}",
        "-e",
        "e='last wins'",
    )
    assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr


def nested(levels: int) -> str:
    return "{" + '"k": {' * levels + '"v": 1' + "}" * (levels + 1)


@pytest.mark.parametrize(
    "content",
    [nested(500).encode(), b'a: "\xff\xfe latin-1"\n', b"a: [unclosed\n"],
    ids=["500-levels", "not-utf8", "bad-yaml"],
)
def test_an_extra_vars_file_ansible_refuses_gives_its_error_not_a_traceback(tmp_path, env, hosts, content):
    vars_file = tmp_path / "vars.yml"
    vars_file.write_bytes(content)
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(hosts), "-e", f"@{vars_file}")
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    # The file is named (it was reported as "failed to parse inventory source"), before any run.
    assert f"-e @{vars_file}: " in done.stderr, done.stderr
    assert "inventory" not in done.stderr
    assert run_dirs(env) == []


def test_an_extra_vars_file_that_is_not_a_mapping_is_named(tmp_path, env, hosts):
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text("- a\n- b\n")
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(hosts), "-e", f"@{vars_file}")
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert f"-e @{vars_file}: expected a mapping of variable names to values, got a list" in done.stderr


def test_tags_that_match_no_task_say_so(tmp_path, env, hosts):
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(hosts), "--tags", "no_such_tag")
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "no task matched the tags" in done.stderr and "--tags no_such_tag" in done.stderr
    assert "no host matched" not in done.stderr


# --- secrets ---------------------------------------------------------------------------------

NO_LOG_TASKS = """    - name: Assert with the secret
      ansible.builtin.assert:
        that: secret == 'something else'
        fail_msg: "bad {{ secret }}"
      no_log: true
      ignore_errors: true
    - name: Look up a file named by the secret
      ansible.builtin.debug:
        msg: "{{ lookup('ansible.builtin.file', '/nonexistent/' + secret) }}"
      no_log: true
      ignore_errors: true
    - name: Run in a directory named by the secret
      ansible.builtin.command:
        argv: [sh, -c, "exit 1"]
        chdir: "/nonexistent/{{ secret }}"
      changed_when: false
      no_log: true
"""


def test_a_failed_no_log_task_leaves_no_secret_in_the_run_directory(tmp_path, env, hosts):
    # ansible-core prints such a task's error ("[ERROR]: Task failed: ... <secret>") itself.
    done = cf_run(env, str(playbook(tmp_path, NO_LOG_TASKS)), "-i", str(hosts), "-e", f"secret={SECRET}")
    assert done.returncode == errors.EXIT_HOSTS_FAILED, done.stdout + done.stderr
    run_dir = run_dirs(env)[0]
    assert files_holding(run_dir, SECRET) == []
    assert SECRET not in done.stdout + done.stderr
    stdout = next(run_dir.glob("artifacts/*/stdout")).read_text()
    assert stdout.count("censored:") == 3  # what no_log shows stays, once per task


def test_the_run_directory_is_private_and_named_in_utc(tmp_path, env, hosts):
    before = time.gmtime()
    done = cf_run(env, str(playbook(tmp_path, OK_TASK)), "-i", str(hosts), "-e", "a=1")
    assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr
    run_dir = run_dirs(env)[0]
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", run_dir.name)
    assert run_dir.name[:8] == time.strftime("%Y%m%d", before) or run_dir.name[:8] == time.strftime(
        "%Y%m%d", time.gmtime()
    )
    assert int(run_dir.name[9:11]) in {before.tm_hour, time.gmtime().tm_hour}
    for path in [run_dir, *run_dir.rglob("*")]:
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.lstat().st_mode) == expected, path
    assert not (run_dir / "extravars").exists()  # the vars files go with the run


# --- cancellation ----------------------------------------------------------------------------

SLEEP_TASK = """    - name: Sleep until cancelled
      ansible.builtin.command:
        argv: [sleep, "{{ nap }}"]
      changed_when: false
"""


@pytest.fixture
def sleeping_run(tmp_path, env, hosts):
    """Starts a run whose task sleeps; whatever of it a failing test leaves is killed after."""
    started: list[str] = []

    def start() -> tuple[subprocess.Popen, str]:
        process, marker = start_sleeping_run(tmp_path, env, hosts)
        started.append(marker)
        return process, marker

    yield start
    for pid in [pid for marker in [*started, str(hosts)] for pid in processes_with(marker)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start_sleeping_run(tmp_path: Path, env: dict, hosts: Path) -> tuple[subprocess.Popen, str]:
    nap = str(random.randint(100_000, 999_999))  # names this test's sleep among all processes
    args = [str(playbook(tmp_path, SLEEP_TASK)), "-i", str(hosts), "-e", f"nap={nap}", "-e", f"secret={SECRET}"]
    process = subprocess.Popen(
        [sys.executable, "-m", "clusterforge.cli", "run", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    marker = f"sleep {nap}"
    assert wait_for(lambda: processes_with(marker)), "the task never started"
    return process, marker


def test_sigterm_ends_ansible_playbook_and_the_task_it_runs(env, hosts, sleeping_run):
    process, sleep_marker = sleeping_run()
    assert processes_with(str(hosts))  # ansible-playbook names the inventory
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == errors.EXIT_INTERRUPTED
    # Gone when clusterforge returns: ansible-playbook, its workers and the task's process.
    assert processes_with(str(hosts)) == []
    assert processes_with(sleep_marker) == []
    summary = json.loads((run_dirs(env)[0] / "summary.json").read_text())
    assert summary["status"] == "canceled"


def test_sigkill_takes_ansible_playbook_along_and_leaves_no_secret_outside_the_run(tmp_path, env, hosts, sleeping_run):
    process, sleep_marker = sleeping_run()
    process.kill()
    process.wait(timeout=10)
    # The kernel tells ansible-playbook (PR_SET_PDEATHSIG), which ends its workers.
    assert wait_for(lambda: not processes_with(str(hosts)), timeout=30), "ansible-playbook outlived clusterforge"
    assert wait_for(lambda: not processes_with(sleep_marker), timeout=30), "the task outlived clusterforge"
    assert files_holding(Path(env["TMPDIR"]), SECRET) == []
    # The vars file is left behind only inside the run directory, which only the user can read.
    run_dir = run_dirs(env)[0]
    assert all(Path(path).is_relative_to(run_dir) for path in files_holding(tmp_path, SECRET))
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700


# --- cancelling within a second, and the limits of --slices ---------------------------------------

MARKED_TASKS = 40
CLI_RUN = (sys.executable, "-m", "clusterforge.cli", "run")


def marked_playbook(tmp_path: Path, markers: Path) -> Path:
    """Many short tasks, each leaving a file: the files started after a signal are the tasks
    that started after it."""
    tasks = "".join(
        f"""    - name: Task {number}
      ansible.builtin.command:
        argv: [touch, "{markers}/task-{number:03d}"]
      changed_when: false
"""
        for number in range(1, MARKED_TASKS + 1)
    )
    return playbook(tmp_path, tasks)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_no_task_starts_a_second_after_the_signal(tmp_path, env, hosts, signum):
    markers = tmp_path / "markers"
    markers.mkdir()
    # A session of its own, signalled as a whole as a terminal's Ctrl-C signals its foreground group.
    process = subprocess.Popen(
        [sys.executable, "-m", "clusterforge.cli", "run", str(marked_playbook(tmp_path, markers)), "-i", str(hosts)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: (markers / "task-001").exists(), timeout=120), "the first task never ran"
        signalled = time.time()
        os.killpg(process.pid, signum)
        _out, err = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == errors.EXIT_INTERRUPTED, err.decode()
    late = sorted(path.name for path in markers.iterdir() if path.stat().st_mtime > signalled + 1.0)
    assert late == [], f"{len(late)} tasks started more than 1 s after the signal"
    assert len(list(markers.iterdir())) < MARKED_TASKS  # it did stop


def test_ctrl_c_while_slices_list_the_inventory_exits_130_without_a_traceback(tmp_path, env):
    script = tmp_path / "slow-inventory.sh"
    script.write_text('#!/bin/sh\nsleep 60\necho \'{"all": {"hosts": ["alpha"]}, "_meta": {"hostvars": {}}}\'\n')
    script.chmod(0o755)
    process = subprocess.Popen(
        [*CLI_RUN, str(playbook(tmp_path, OK_TASK)), "-i", str(script), "--slices", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        listing = f"ansible-inventory -i {script}"
        assert wait_for(lambda: processes_with(listing), timeout=60), "the inventory was never listed"
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        for pid in processes_with(str(script)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert process.returncode == errors.EXIT_INTERRUPTED, (out + err).decode()
    assert b"Traceback" not in out + err
    assert b"interrupted" in err
    assert wait_for(lambda: not processes_with(listing), timeout=10)


def test_more_slices_than_hosts_is_refused_at_once(tmp_path, env, hosts):
    def cap_memory():
        resource.setrlimit(resource.RLIMIT_AS, (4 * 1024**3, 4 * 1024**3))

    done = subprocess.run(
        [*CLI_RUN, str(playbook(tmp_path, OK_TASK)), "-i", str(hosts), "--slices", "1000000000"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=cap_memory,
        check=False,
    )
    assert done.returncode == errors.EXIT_USAGE, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "--slices 1000000000" in done.stderr and "has 1 hosts; expected N from 1 to 1" in done.stderr


def test_host_key_checking_stays_as_ansible_cfg_sets_it(tmp_path, env, hosts):
    """ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless the environment names it; a
    clusterforge run must check host keys as ansible.cfg (host_key_checking = True) says."""
    env = {name: value for name, value in env.items() if name != "ANSIBLE_HOST_KEY_CHECKING"}
    task = """    - name: Host keys are checked
      ansible.builtin.assert:
        that: lookup('ansible.builtin.config', 'HOST_KEY_CHECKING') | bool
"""
    done = cf_run(env, str(playbook(tmp_path, task)), "-i", str(hosts))
    assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr


# --- the fact cache ------------------------------------------------------------------------------


def test_a_run_caches_only_the_gathered_subset_where_ansible_playbook_does(tmp_path, env, hosts):
    """A stage playbook (preflight, in check mode) on a local host: its facts go to ansible.cfg's
    cache, the one plain ansible-playbook uses with its one-day lifetime, not into the run's
    artifacts (kept forever); and the controller's environment, secrets and all, is not in them."""
    env = {**env, "ROBUST_ENV_SECRET": SECRET}
    done = cf_run(env, "preflight", "-i", str(hosts), "--check")
    assert "Traceback" not in done.stderr, done.stderr
    cached = list(Path(env["ANSIBLE_CACHE_PLUGIN_CONNECTION"]).glob("*alpha"))
    assert len(cached) == 1, done.stdout + done.stderr
    text = cached[0].read_text()
    facts = json.loads(json.loads(text)["__payload__"]) if "__payload__" in text else json.loads(text)
    assert "ansible_distribution" in facts and "ansible_default_ipv4" in facts and "ansible_memtotal_mb" in facts
    assert "ansible_env" not in facts
    assert not [name for name in facts if name.startswith(("ansible_ssh_host_key", "ansible_user_"))]
    assert SECRET not in text
    assert [str(path) for path in run_dirs(env)[0].rglob("fact_cache")] == []
