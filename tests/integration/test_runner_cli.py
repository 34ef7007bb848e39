"""`clusterforge run` for real against localhost: exit codes, summary JSON, JUnit XML,
cancellation and secrets. (tests/integration/test_lab_runner.py covers an unreachable lab node.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from clusterforge import errors
from tests.integration.conftest import ansible_playbook, local_inventory
from tests.integration.conftest import run_playbook as run
from tests.paths import PROJECT

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "outcomes.yml"
SECRET = "s3cr3t-value-4711"


@pytest.fixture
def env(tmp_path) -> dict:
    # The secret also sits in the environment, as a cloud token would.
    return {**os.environ, "CLUSTERFORGE_STATE_DIR": str(tmp_path / "state"), "CF_TEST_TOKEN": SECRET}


def inventory(tmp_path, **outcomes: str) -> Path:
    return local_inventory(tmp_path, {host: f"outcome={outcome}" for host, outcome in outcomes.items()})


def newest_run(env) -> Path:
    return max((Path(env["CLUSTERFORGE_STATE_DIR"]) / "runs").iterdir(), key=lambda p: p.stat().st_mtime)


def test_success_writes_summary_and_junit(tmp_path, env):
    done = run(env, str(PLAYBOOK), "-i", str(inventory(tmp_path, alpha="ok", beta="reboot")))
    assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr
    assert "TASK Fail where asked" in done.stdout  # plain progress lines off a terminal
    run_dir = newest_run(env)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "successful" and summary["exit_code"] == 0
    assert summary["totals"]["reboot_required"] == ["beta"]
    assert summary["hosts"]["alpha"]["failed"] == 0
    suites = ET.parse(run_dir / "junit.xml").getroot()
    cases = suites.findall("./testsuite/testcase")
    assert sorted(case.get("name") for case in cases) == ["alpha", "beta"]
    assert not suites.findall(".//failure")
    # ansible.cfg's callbacks were all found under ansible-runner (it sets a callback path of its own).
    output = "".join(path.read_text() for path in run_dir.glob("artifacts/*/stdout"))
    assert "TASK" in output and "Skipping callback plugin" not in output + done.stderr


def test_a_failing_host_gives_exit_2_and_a_junit_failure(tmp_path, env):
    done = run(env, str(PLAYBOOK), "-i", str(inventory(tmp_path, alpha="ok", beta="fail")), "--json")
    assert done.returncode == errors.EXIT_HOSTS_FAILED
    summary = json.loads(done.stdout)
    assert summary["totals"]["failed"] == 1
    assert summary["hosts"]["beta"]["failed_tasks"] == [
        {"play": "Outcomes on demand", "task": "Fail where asked", "message": "asked to fail on beta"}
    ]
    failures = ET.parse(newest_run(env) / "junit.xml").getroot().findall(".//testcase[@name='beta']/failure")
    assert len(failures) == 1 and "asked to fail on beta" in failures[0].text


def test_an_unreachable_host_gives_exit_3(tmp_path, env):
    path = tmp_path / "hosts.ini"
    # Nothing listens on port 1: the SSH connection is refused at once.
    path.write_text("[all]\nghost ansible_host=127.0.0.1 ansible_port=1 ansible_connection=ssh\n")
    done = run(env, str(PLAYBOOK), "-i", str(path), "--json")
    assert done.returncode == errors.EXIT_HOSTS_UNREACHABLE, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["hosts"]["ghost"]["unreachable_message"]
    errors_found = ET.parse(newest_run(env) / "junit.xml").getroot().findall(".//testcase[@name='ghost']/error")
    assert len(errors_found) == 1


def test_sigterm_cancels_and_still_writes_the_summary(tmp_path, env):
    process = subprocess.Popen(
        [sys.executable, "-m", "clusterforge.cli", "run", str(PLAYBOOK), "-i", str(inventory(tmp_path, alpha="wait"))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    seen = ""
    while time.monotonic() < deadline and "Wait where asked" not in seen:
        seen += process.stdout.readline()
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == errors.EXIT_INTERRUPTED, seen + out
    summary = json.loads((newest_run(env) / "summary.json").read_text())
    assert summary["status"] == "canceled"


def test_secrets_stay_out_of_the_artifacts(tmp_path, env):
    done = run(env, str(PLAYBOOK), "-i", str(inventory(tmp_path, alpha="ok")), "-e", f"test_secret={SECRET}")
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = newest_run(env)
    leaks = [str(path) for path in run_dir.rglob("*") if path.is_file() and SECRET in path.read_text(errors="ignore")]
    assert leaks == []
    assert SECRET not in done.stdout + done.stderr


def test_bad_arguments_give_exit_4(tmp_path, env):
    assert run(env, "site", "-i", str(tmp_path / "nope.yml")).returncode == errors.EXIT_USAGE
    hosts = str(inventory(tmp_path, alpha="ok"))
    assert run(env, str(PLAYBOOK), "-i", hosts, "--vault-password-file", str(tmp_path / "none")).returncode == 4
    assert run(env, str(PLAYBOOK), "-i", hosts, "--serial", "2").returncode == errors.EXIT_USAGE
    assert run(env, str(PLAYBOOK), "-i", hosts, "--forks", "0").returncode == errors.EXIT_USAGE


MESSAGES = Path(__file__).resolve().parent / "playbooks" / "messages.yml"


def test_the_plays_messages_results_and_check_diff_changes_are_shown(tmp_path, env):
    hosts = str(inventory(tmp_path, alpha="ok", beta="fail"))
    done = run(env, str(MESSAGES), "-i", hosts, "-C", "-D", "-e", json.dumps({"messages_dir": str(tmp_path)}))
    assert done.returncode == errors.EXIT_HOSTS_FAILED, done.stdout + done.stderr
    out = done.stdout
    note = "skipped: live apply of vm.swappiness: a container cannot set host-wide keys"
    assert f"  alpha, beta: {note}" in out  # a debug message, once for both hosts
    assert "  alpha: first line on alpha\n          second line" in out
    assert "(hosts " not in out  # each task's results instead
    assert "  ok 2, changed 0, failed 0, skipped 0 (" in out
    # The assert's fail_msg, without the host said twice.
    assert "FAILED beta: Check a value where asked: outcome is fail; expected ok" in out
    assert (
        "changed alpha: Write files where asked [one]\n"
        f"            --- before\n            +++ {tmp_path}/alpha-one.conf" in out
    )
    assert "would change alpha (2)\n  Write files where asked [one]\n    --- before" in out
    assert not list(tmp_path.glob("*.conf"))  # check mode changed nothing


def test_json_names_the_run_and_its_files_and_takes_inline_yaml(tmp_path, env):
    hosts = str(inventory(tmp_path, alpha="ok"))
    done = run(env, str(MESSAGES), "-i", hosts, "--json", "-e", f"{{messages_dir: '{tmp_path}'}}")
    assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    run_dir = newest_run(env)
    assert summary["schema"] == "clusterforge.run/2" and summary["run_id"] == run_dir.name
    assert (summary["run_dir"], summary["summary"], summary["junit"]) == (
        str(run_dir),
        str(run_dir / "summary.json"),
        str(run_dir / "junit.xml"),
    )
    assert ET.parse(summary["junit"]).getroot().tag == "testsuites"
    assert summary["validation"] is None
    assert summary["messages"][0]["text"].startswith("skipped: live apply")
    assert sorted(p.name for p in tmp_path.glob("*.conf")) == ["alpha-one.conf", "alpha-two.conf"]


def test_validation_results_live_in_the_run_directory_and_report_latest_finds_them(tmp_path, env):
    from tests.integration.test_validate_local import topology

    inventory_path = tmp_path / "pairs.topology.yml"
    inventory_path.write_text(yaml.safe_dump(topology(), sort_keys=False))
    (tmp_path / "replay").mkdir()  # no recorded outputs: every check reports no hardware
    replay = f"clusterforge_validation_replay_dir={tmp_path}/replay"
    done = run(env, "validate", "-i", str(inventory_path), "-e", replay, "--limit", "head01,gpu01")
    assert done.returncode == errors.EXIT_OK, done.stdout[-4000:] + done.stderr[-2000:]
    run_dir = newest_run(env)
    summary = json.loads((run_dir / "summary.json").read_text())
    results = run_dir / "validation" / run_dir.name
    assert summary["validation"]["results_dir"] == str(results)
    assert sorted(p.name for p in results.iterdir()) == ["_run.json", "gpu01.json", "head01.json"]
    counts = summary["validation"]["counts"]
    assert counts["fail"] == 0 and counts["skipped"] > 0
    line = next(line for line in done.stdout.splitlines() if line.startswith("validation: "))
    assert line.endswith(f"-> clusterforge report {run_dir} -o {run_dir / 'report'}")
    reported = subprocess.run(
        [sys.executable, "-m", "clusterforge.cli", "report", "--latest"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert (run_dir / "report" / "report.html").is_file()


def test_runs_share_the_projects_fact_cache_with_ansible_playbook(tmp_path, env):
    """ansible-runner would point the fact cache into each run's new artifacts directory, so every
    `clusterforge run` gathered every node's facts again; it uses ansible.cfg's cache instead, the
    one plain ansible-playbook reads (smart gathering: only hosts with no cached facts)."""
    playbook = PLAYBOOK.with_name("facts.yml")
    cache = tmp_path / "facts"
    env = {**env, "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache), "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")}
    hosts = inventory(tmp_path, alpha="ok")

    def oks() -> int:
        done = run(env, str(playbook), "-i", str(hosts), "--json")
        assert done.returncode == errors.EXIT_OK, done.stdout + done.stderr
        return json.loads(done.stdout)["hosts"]["alpha"]["ok"]

    assert oks() == 2  # facts gathered, then used
    assert [path.name for path in cache.iterdir() if "alpha" in path.name]  # in the project's cache
    assert not list(newest_run(env).glob("artifacts/*/fact_cache/*"))
    assert oks() == 1  # a re-run reads them from the cache: no gathering
    plain = ansible_playbook(hosts, playbook, env=env)
    assert plain.returncode == 0 and "Gathering Facts" not in plain.stdout, plain.stdout
