"""Cancelling asks the process group to stop first, and kills it only after the grace period."""

from __future__ import annotations

import time

from clusterforge.runner.process import Supervisor


class Request:
    def __init__(self) -> None:
        self.made = False

    def __call__(self) -> bool:
        return self.made


def test_nothing_happens_until_cancel_is_asked_for():
    request = Request()
    supervisor = Supervisor(request)
    supervisor.spawn("sleep", ["30"])
    try:
        assert supervisor.cancel_callback() is False
        assert supervisor.child.isalive() and not supervisor.canceled
    finally:
        supervisor.end_group()


def test_a_child_that_stops_on_sigterm_ends_the_cancel_at_once():
    request = Request()
    supervisor = Supervisor(request, grace_s=30)
    supervisor.spawn("sleep", ["30"])
    request.made = True
    supervisor.cancel_callback()  # SIGTERM to the group
    deadline = time.monotonic() + 10
    while supervisor.child.isalive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert supervisor.cancel_callback() is True and supervisor.canceled


def test_a_child_that_ignores_sigterm_is_given_up_on_after_the_grace_period():
    request = Request()
    supervisor = Supervisor(request, grace_s=0.5)
    supervisor.spawn("sh", ["-c", "trap '' TERM; echo ready; sleep 30"])
    supervisor.child.expect("ready")
    request.made = True
    try:
        assert supervisor.cancel_callback() is False  # asked, still within the grace period
        time.sleep(0.6)
        assert supervisor.child.isalive()
        assert supervisor.cancel_callback() is True  # ansible-runner SIGKILLs the group now
    finally:
        supervisor.end_group()
    deadline = time.monotonic() + 10
    while supervisor.child.isalive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not supervisor.child.isalive()
