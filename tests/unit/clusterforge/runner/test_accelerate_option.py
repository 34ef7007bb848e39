"""clusterforge run --accelerate: the run's ansible-playbook gets the accelerations' switch, and
without it they stay off (the accelerate callback says which at -v)."""

from __future__ import annotations

from clusterforge import cli
from clusterforge.runner import runs

PLAY = """\
- name: Probe
  hosts: all
  gather_facts: false
  tasks:
    - name: A template rendered in a worker
      ansible.builtin.debug:
        msg: "{{ [3, 1] | sort | first }}"
"""


def _run(tmp_path, monkeypatch, *options: str) -> str:
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[all]\nlocal ansible_connection=local\n")
    playbook = tmp_path / "probe.yml"
    playbook.write_text(PLAY)
    monkeypatch.setenv("ANSIBLE_VERBOSITY", "1")  # the callback speaks at -v
    monkeypatch.delenv("CLUSTERFORGE_ACCELERATE", raising=False)
    assert cli.main(["run", str(playbook), "-i", str(inventory), "--json", *options]) == 0
    (run_dir,) = [path for path in runs.runs_dir().iterdir() if path.is_dir()]
    return "".join(path.read_text() for path in run_dir.glob("artifacts/*/stdout"))


def test_run_accelerate_turns_the_code_cache_on(tmp_path, monkeypatch, state_dir):
    assert "jinja_code_cache on" in _run(tmp_path, monkeypatch, "--accelerate")


def test_run_without_it_leaves_them_off(tmp_path, monkeypatch, state_dir):
    output = _run(tmp_path, monkeypatch)
    assert "clusterforge accelerations: fork_warmup on; jinja_code_cache off" in output
