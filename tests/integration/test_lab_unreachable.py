"""An unreachable lab node: its container is stopped while the others run."""

from __future__ import annotations

import json

import pytest

from clusterforge import errors
from clusterforge.lab.cluster import _wait_for_systemd
from tests.integration.conftest import TEST_LAB, clusterforge

pytestmark = pytest.mark.lab


def test_a_stopped_node_is_unreachable_and_the_others_finish(lab, docker_client):
    # A first run caches every node's facts (ansible.cfg: a day): preflight must still find the
    # stopped node, not pass it on facts from before it went down.
    clusterforge("run", "preflight", "-i", str(lab["inventory"]), "--json", env=lab["env"])
    node = docker_client.containers.get(f"clusterforge-{TEST_LAB}-node01")
    node.stop(timeout=5)
    try:
        done = clusterforge("run", "preflight", "-i", str(lab["inventory"]), "--json", env=lab["env"], check=False)
    finally:
        node.start()
        _wait_for_systemd(node)
    assert done.returncode == errors.EXIT_HOSTS_UNREACHABLE, done.stdout[-2000:] + done.stderr
    summary = json.loads(done.stdout)
    assert summary["totals"]["unreachable"] == 1
    assert summary["hosts"]["node01"]["unreachable_message"]
    assert summary["hosts"]["head01"]["failed"] == 0 and summary["hosts"]["head01"]["ok"] > 0
