# Copyright: clusterforge contributors
# Apache License 2.0
"""A play's vars_files parsed once per run, not once per host and task.

ansible-core's VariableManager reads and parses every vars_files entry of the play each time it
builds a host's variables, in the main ansible-playbook process: once per host and task. Only
vaulted files are kept (its cache='vaulted'), so a plain YAML file is parsed again for every
host-task, the serial cost that no number of forks spreads. This plugin keeps the parsed data of
each file while the file's stat (inode, size, mtime, ctime) stays the same: a file rewritten
during the run (by a task, or a user) is read again. bench/fleet.py measures the saving.
"""

from __future__ import annotations

import inspect
import os

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: vars_files_cache
type: aggregate
short_description: Parses a play's vars_files once per run instead of once per host and task
description:
  - "Wraps ansible-core's DataLoader.load_from_file for the calls that read a play's vars_files
    (the only ones made with cache=vaulted): the parsed data is kept per file and returned again
    while the file's inode, size, modification and change times are those it was read with."
  - "The data is what ansible-core itself returns for these calls (the parsed object, not a copy:
    the VariableManager only reads it); vaulted files are decrypted once as before."
  - "Off (a note at -vvvv) on an ansible-core whose load_from_file takes other arguments."
requirements: [enable in callbacks_enabled (clusterforge's ansible.cfg does)]
"""

# The arguments ansible-core 2.19's load_from_file takes: another signature is another contract.
EXPECTED_PARAMETERS = ("self", "file_name", "cache", "unsafe", "json_only", "trusted_as_template")


def stamp(path: str) -> tuple[int, int, int, int] | None:
    """What changes when a file is rewritten, replaced or touched; None when it cannot be read."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


def install() -> str | None:
    """Wraps DataLoader.load_from_file. Returns why not, where it cannot."""
    if getattr(DataLoader, "_clusterforge_vars_files_cache", False):
        return None  # installed already
    original = DataLoader.load_from_file
    parameters = tuple(inspect.signature(original).parameters)
    if parameters != EXPECTED_PARAMETERS:
        return f"DataLoader.load_from_file takes {parameters}, not ansible-core 2.19's {EXPECTED_PARAMETERS}"

    def load_from_file(self, file_name, cache="all", unsafe=False, json_only=False, trusted_as_template=False):
        if cache != "vaulted" or not unsafe:
            return original(self, file_name, cache, unsafe, json_only, trusted_as_template)
        # Per loader, as ansible-core's own file cache: another loader may hold other vault secrets.
        # path -> (stamp, arguments, parsed data): one entry per file, replaced when the file changes.
        parsed = self.__dict__.setdefault("_clusterforge_vars_files", {})
        path = self.path_dwim(file_name)
        arguments = (json_only, trusted_as_template)
        current = stamp(path)
        kept = parsed.get(path)
        if current is not None and kept is not None and kept[:2] == (current, arguments):
            return kept[2]
        data = original(self, file_name, cache, unsafe, json_only, trusted_as_template)
        # Stamped before reading: a write during the read moves mtime/ctime on (nanosecond clocks),
        # so the next call reads the file again rather than keeping a half-read one.
        if current is not None:
            parsed[path] = (current, arguments, data)
        return data

    DataLoader._clusterforge_vars_files_cache = True
    DataLoader.load_from_file = load_from_file
    return None


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "vars_files_cache"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        # Installed when the plugin loads, before the first play builds any host's variables.
        reason = install()
        if reason:
            self._display.vvvv(f"vars_files_cache: off: {reason}")
