"""The engine users get behaves as stock ansible-core: the same play gives the same outcome with the
project's ansible.cfg, with its opt-in accelerations on, and with an empty config (stock). These
inputs once gave other outcomes (a callback that skipped false conditions in the main process): a
bad `throttle` under a false `when` skipped with exit 0, a lookup in a condition ran twice, a
random condition was evaluated twice (skipping 62% of the time instead of about half)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.paths import PROJECT

HOSTS = ["h1", "h2", "h3"]

# A filter that records each evaluation (one line per call) in a file: how often a condition ran.
COUNTING_FILTER = """\
import os

def counted(value, path):
    with open(path, "a") as log:
        log.write(f"{value}\\n")
    return value

class FilterModule:
    def filters(self):
        return {"counted": counted}
"""


def _settings(tmp_path: Path) -> dict[str, dict[str, str]]:
    stock = tmp_path / "stock.cfg"
    stock.write_text("")
    shipped = {"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")}
    return {
        "stock": {"ANSIBLE_CONFIG": str(stock)},
        "shipped": shipped,
        "accelerated": {**shipped, "CLUSTERFORGE_ACCELERATE": "1"},
    }


def _play(tmp_path: Path, name: str, setting: dict[str, str], tasks: str) -> tuple[int, str, str]:
    work = tmp_path / name
    (work / "filter_plugins").mkdir(parents=True)
    (work / "filter_plugins" / "counted.py").write_text(COUNTING_FILTER)
    inventory = work / "hosts.ini"
    inventory.write_text(
        "".join(f"{host} ansible_connection=local ansible_python_interpreter={sys.executable}\n" for host in HOSTS)
    )
    playbook = work / "play.yml"
    playbook.write_text(
        "- name: Probe\n  hosts: all\n  gather_facts: false\n  vars:\n"
        f"    log: {work}/evaluations.log\n  tasks:\n" + textwrap.indent(textwrap.dedent(tasks), "    ")
    )
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(work / "facts"), **setting}
    env.pop("ANSIBLE_CALLBACK_PLUGINS", None)
    if "CLUSTERFORGE_ACCELERATE" not in setting:
        env.pop("CLUSTERFORGE_ACCELERATE", None)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        check=False,
        timeout=180,
    )
    log = work / "evaluations.log"
    return done.returncode, done.stdout + done.stderr, log.read_text() if log.exists() else ""


def _recap(output: str) -> list[str]:
    return sorted(
        re.findall(r"^(h\d)\s+:\s+(ok=\d+\s+changed=\d+\s+unreachable=\d+\s+failed=\d+\s+skipped=\d+)", output, re.M)
    )


def _outcomes(tmp_path: Path, tasks: str) -> dict[str, tuple]:
    outcomes = {}
    for name, setting in _settings(tmp_path).items():
        rc, output, evaluations = _play(tmp_path, name, setting, tasks)
        outcomes[name] = (rc, _recap(output), sorted(evaluations.splitlines()), output)
    return outcomes


def _assert_same(outcomes: dict[str, tuple]) -> None:
    stock = outcomes["stock"][:3]
    for name, outcome in outcomes.items():
        assert outcome[:3] == stock, (
            f"{name} differs from stock:\n{outcome[3][-2500:]}\nstock:\n{outcomes['stock'][3][-2500:]}"
        )


def test_a_bad_throttle_under_a_false_condition_fails_as_in_stock(tmp_path):
    outcomes = _outcomes(
        tmp_path,
        """\
        - name: Bad throttle, false condition
          ansible.builtin.debug:
            msg: never
          throttle: "{{ 'not a number' }}"
          when: false
        """,
    )
    _assert_same(outcomes)
    assert outcomes["stock"][0] != 0


@pytest.mark.parametrize(
    "condition",
    [
        # Reached through a variable, and written as `lookup (`: each evaluated once per host.
        "(reached | counted(log)) == 'no'",
        "lookup ('ansible.builtin.env', 'HOME') | counted(log) == 'no'",
        "((2 | random) | counted(log)) == 7",
    ],
)
def test_a_condition_is_evaluated_as_often_as_in_stock(tmp_path, condition):
    tasks = f"""\
    - name: A false condition with a side effect
      ansible.builtin.debug:
        msg: never
      vars:
        reached: "{{{{ 'yes' }}}}"
      when: {condition}
    """
    outcomes = _outcomes(tmp_path, tasks)
    # The random values differ between runs; their count may not.
    counts = {name: len(outcome[2]) for name, outcome in outcomes.items()}
    assert counts == {name: counts["stock"] for name in counts}, counts
    assert counts["stock"] == len(HOSTS)
    for name, outcome in outcomes.items():
        assert outcome[0] == 0 and outcome[1] == outcomes["stock"][1], name
