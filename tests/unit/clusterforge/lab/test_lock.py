"""Two checkouts, one lab: one command at a time on a lab's state directory, and a lab that
another checkout brought up is not taken over."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from clusterforge.errors import EXIT_USAGE, UsageError
from clusterforge.lab import cluster, lock

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from clusterforge.lab import lock
    with lock.held(Path(sys.argv[1]), "lab", "up", "/src/other-checkout"):
        print("held", flush=True)
        time.sleep(60)
    """
)


@pytest.fixture
def holder(tmp_path):
    """Another process holding the lab's lock, as `lab up` from another checkout does."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait()


def test_a_second_command_is_refused_naming_the_other_checkout(tmp_path, holder):
    with pytest.raises(UsageError) as refused, lock.held(tmp_path, "lab", "up", "/src/this-checkout"):
        pass
    message = str(refused.value)
    assert "lab 'lab' is busy" in message
    assert f"`clusterforge lab up` from the checkout /src/other-checkout (pid {holder.pid})" in message
    assert "--name" in message


@pytest.mark.parametrize("command", ["up", "down"])
def test_lab_up_and_down_refuse_while_another_checkout_changes_the_lab(tmp_path, command):
    """Refused before Docker is asked anything (no engine is needed to see it)."""
    state = tmp_path / "state"
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state / "labs" / "lab")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline() == "held\n"
        done = subprocess.run(
            [sys.executable, "-m", "clusterforge.cli", "lab", command],
            capture_output=True,
            text=True,
            env={**os.environ, "CLUSTERFORGE_STATE_DIR": str(state), "DOCKER_HOST": "unix:///nonexistent.sock"},
            check=False,
            timeout=60,
        )
    finally:
        process.kill()
        process.wait()
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    assert "from the checkout /src/other-checkout" in done.stderr


def test_the_lock_goes_with_its_process_even_killed(tmp_path, holder):
    holder.kill()
    holder.wait()
    with lock.held(tmp_path, "lab", "down", "/src/this-checkout"):
        assert '"checkout": "/src/this-checkout"' in (tmp_path / lock.LOCK_FILE).read_text()
    assert (tmp_path / lock.LOCK_FILE).read_text() == ""  # released: no holder named


def test_one_process_runs_its_commands_one_after_the_other(tmp_path):
    for command in ("up", "down", "up"):
        with lock.held(tmp_path, "lab", command, "/src/this-checkout"):
            pass


class _Container:
    def __init__(self, labels):
        self.labels = labels


class _Client:
    def __init__(self, *labels):
        self.containers = self
        self._containers = [_Container(each) for each in labels]

    def list(self, all, filters):
        assert filters == {"label": f"{cluster.LABEL_LAB}=lab"}
        return self._containers


def test_a_lab_another_checkout_brought_up_is_refused_naming_it():
    client = _Client({cluster.LABEL_CHECKOUT: "/src/other"}, {cluster.LABEL_CHECKOUT: "/src/other"})
    with pytest.raises(UsageError, match=r"lab 'lab' is up from another checkout: /src/other\. Take it down"):
        cluster._refuse_other_checkout(client, "lab", "/src/this")


@pytest.mark.parametrize(
    "labels",
    [
        [],  # no lab yet
        [{cluster.LABEL_CHECKOUT: "/src/this"}],  # this checkout's own lab: up again
        [{}],  # a node from before the label: nothing says whose it is
    ],
)
def test_this_checkouts_lab_or_none_goes_ahead(labels):
    cluster._refuse_other_checkout(_Client(*labels), "lab", "/src/this")
