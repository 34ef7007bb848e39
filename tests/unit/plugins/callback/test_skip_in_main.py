"""plugins/callback/skip_in_main.py: every result, register, stat and handler is ansible-core's
own, under the linear and the free strategy; a false condition is evaluated once, in the main
process, with no worker forked for it; the plugin stays off on another ansible-core."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import PROJECT

PROBE = Path(__file__).parent / "skip_in_main"
WITHOUT = "fork_warmup,jinja_code_cache,vars_files_cache"
TIMING = ("start", "end", "delta", "invocation", "_ansible_verbose_always")


def run_probe(tmp_path: Path, strategy: str, callbacks: str) -> tuple[dict, list[str]]:
    record = tmp_path / f"{strategy}-{callbacks}.pids"
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
        "ANSIBLE_STRATEGY": strategy,
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_CALLBACKS_ENABLED": callbacks,
        "ANSIBLE_FILTER_PLUGINS": str(PROBE / "filter_plugins"),
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "WHERE_EVALUATED": str(record),
    }
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "a,b,c,", "-c", "local", str(PROBE / "play.yml")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout), record.read_text().split()


def results(report: dict) -> tuple[list, dict]:
    """Every host's result of every task (timings left out), and the stats."""
    found = [
        (task["task"]["name"], host, json.dumps({k: v for k, v in result.items() if k not in TIMING}, sort_keys=True))
        for play in report["plays"]
        for task in play["tasks"]
        for host, result in task["hosts"].items()
    ]
    return sorted(found), report["stats"]


@pytest.mark.parametrize("strategy", ["linear", "free"])
def test_results_are_ansible_cores_own(tmp_path, strategy):
    stock, _ = run_probe(tmp_path, strategy, WITHOUT)
    skipping, _ = run_probe(tmp_path, strategy, f"{WITHOUT},skip_in_main")
    assert results(skipping) == results(stock)
    tasks, stats = results(skipping)
    assert len(tasks) >= 30 and stats["a"]["skipped"] >= 8
    registered = [r for name, host, r in tasks if name.startswith("True for every host")]
    assert all("Conditional result was False" in r for r in registered) and len(registered) == 3


def test_a_false_condition_is_evaluated_once_in_the_main_process(tmp_path):
    _, stock = run_probe(tmp_path, "linear", WITHOUT)
    _, skipping = run_probe(tmp_path, "linear", f"{WITHOUT},skip_in_main")
    # Without the plugin: one worker per host evaluates each condition (false, then true).
    assert len(stock) == 6 and len(set(stock)) == 6
    # With it: the false condition twice per host in one process (the main one, no fork: with the
    # host's variables, then with exactly a worker's), the true one there once and again in each
    # host's worker.
    false_pids, true_pids = skipping[:6], skipping[6:]
    assert len(set(false_pids)) == 1
    main = false_pids[0]
    assert true_pids.count(main) == 3 and len(set(true_pids) - {main}) == 3


def test_off_on_another_signature(monkeypatch):
    sys.path.insert(0, str(PROJECT / "plugins" / "callback"))
    try:
        import skip_in_main
    finally:
        sys.path.pop(0)
    from ansible.plugins.strategy import StrategyBase

    monkeypatch.delattr(StrategyBase, "_clusterforge_skip_in_main", raising=False)
    monkeypatch.setattr(StrategyBase, "_queue_task", lambda self, host, task, task_vars, play_context, extra: None)
    reason = skip_in_main.install()
    assert reason and "not ansible-core 2.19's" in reason
    assert not hasattr(StrategyBase, "_clusterforge_skip_in_main")
