"""The ansible-playbook process: cancelled as a whole, and never left running without clusterforge."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

import ansible_runner.runner
import pexpect

# linux/prctl.h: the signal the kernel sends a process when its parent dies.
_PR_SET_PDEATHSIG = 1
# What ansible-playbook gets on cancel or when clusterforge dies: SIGTERM lets it end its
# workers, which run in sessions of their own; SIGKILL follows if it has not gone by then.
_STOP_SIGNAL = signal.SIGTERM
GRACE_S = 10.0


class CancelOnSignal:
    """Ctrl-C or SIGTERM asks for the run to stop (see Supervisor) instead of killing this
    process, so the summary of what ran is still written."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: dict[int, object] = {}

    def __call__(self) -> bool:
        return self.requested.is_set()

    def _handle(self, signum, _frame) -> None:
        self.requested.set()

    def __enter__(self) -> CancelOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


class Supervisor:
    """Starts ansible-playbook for ansible-runner and ends it.

    ansible-runner spawns it through pexpect (a pty, so a session and process group of its
    own) and on cancel SIGKILLs that group at once, which leaves ansible-playbook no time to stop
    its workers: their tasks ran on. It has no option for a pre-exec hook either, so the spawn is
    wrapped here to add one that makes the child die with this process (PR_SET_PDEATHSIG)."""

    def __init__(self, cancel_requested: Callable[[], bool] | None = None, grace_s: float = GRACE_S):
        self.cancel_requested = cancel_requested or (lambda: False)
        self.grace_s = grace_s
        self.child: pexpect.spawn | None = None
        self._deadline: float | None = None

    @property
    def canceled(self) -> bool:
        return self._deadline is not None

    def cancel_callback(self) -> bool:
        """ansible-runner's cancel_callback: True makes it SIGKILL the group, so first ask
        ansible-playbook to stop and give it GRACE_S to do so."""
        if not self.cancel_requested():
            return False
        if self._deadline is None:
            self._deadline = time.monotonic() + self.grace_s
            self._signal_group(_STOP_SIGNAL)
        return not self._child_alive() or time.monotonic() > self._deadline

    def end_group(self) -> None:
        """Whatever is left of the child's process group once the run is over."""
        self._signal_group(signal.SIGKILL)

    @contextlib.contextmanager
    def spawning(self) -> Iterator[Supervisor]:
        """Route ansible-runner's pexpect.spawn through self.spawn while the run lasts."""
        original = ansible_runner.runner.pexpect
        ansible_runner.runner.pexpect = _PexpectWith(self.spawn)
        try:
            yield self
        finally:
            ansible_runner.runner.pexpect = original
            # A cancelled group may keep members; a finished one is gone (and its id free for
            # reuse, so it is not signalled then).
            if self.canceled or self._child_alive():
                self.end_group()

    def spawn(self, *args, **kwargs) -> pexpect.spawn:
        parent = os.getpid()
        self.child = pexpect.spawn(*args, preexec_fn=lambda: die_with(parent), **kwargs)
        return self.child

    def _child_alive(self) -> bool:
        return self.child is not None and self.child.isalive()

    def _signal_group(self, signum: int) -> None:
        if self.child is None or self.child.pid is None:
            return
        # pexpect made the child a session leader: its pid is its process group's id.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.child.pid, signum)


class _PexpectWith:
    """The pexpect module as ansible-runner sees it, with another spawn."""

    def __init__(self, spawn: Callable[..., pexpect.spawn]):
        self.spawn = spawn

    def __getattr__(self, name: str):
        return getattr(pexpect, name)


# Looked up before any fork: the child should only make the call.
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with(parent: int) -> None:
    """In a child (before exec, or a worker): the kernel sends it _STOP_SIGNAL when `parent` dies."""
    if _prctl is None:
        return
    _prctl(_PR_SET_PDEATHSIG, int(_STOP_SIGNAL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), _STOP_SIGNAL)
