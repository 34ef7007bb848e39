"""`clusterforge lab up` forgets the facts ansible-playbook cached under the lab's host names: a
node brought up again is another container at another address, and a day-long fact cache keyed
by name would otherwise put the old address in slurm.conf."""

from __future__ import annotations

from tests.integration.conftest import TEST_LAB, clusterforge

HOSTS = ("head01", "node01", "node02")


def test_lab_up_forgets_the_lab_hosts_cached_facts_and_no_others(lab, tmp_path):
    cache = tmp_path / "facts"
    cache.mkdir()
    for name in (*(f"s1_{host}" for host in HOSTS), "s1_login01", "s1_node010"):
        (cache / name).write_text('{"__payload__": "{}"}')
    env = {**lab["env"], "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache)}
    done = clusterforge("lab", "up", "--size", "small", "--name", TEST_LAB, env=env)
    assert sorted(path.name for path in cache.iterdir()) == ["s1_login01", "s1_node010"]
    assert f"forgot the cached facts of s1_head01, s1_node01, s1_node02 in {cache}" in done.stdout + done.stderr
