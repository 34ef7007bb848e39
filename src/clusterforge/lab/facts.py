"""A lab node brought up again is a new machine under an old name (another address, another
container): the facts ansible-playbook cached for that name must not outlive the old one.

The project's ansible.cfg keeps facts for a day (jsonfile, smart gathering), keyed by host name
only, so a plain `ansible-playbook site.yml` after `lab down` and `lab up` would otherwise write
slurm.conf with the old nodes' addresses.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Iterable
from pathlib import Path


def fact_cache_dir(project: Path) -> Path | None:
    """Where ansible-playbook with the project's ansible.cfg keeps facts: $ANSIBLE_CACHE_PLUGIN_CONNECTION,
    else ansible.cfg's fact_caching_connection (~ expanded, relative to ansible.cfg); None without."""
    configured = os.environ.get("ANSIBLE_CACHE_PLUGIN_CONNECTION", "")
    if not configured:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(project / "ansible.cfg")
        configured = parser.get("defaults", "fact_caching_connection", fallback="")
    if not configured:
        return None
    path = Path(configured).expanduser()
    return path if path.is_absolute() else project / path


def forget(host_names: Iterable[str], directory: Path | None) -> list[str]:
    """Remove these hosts' cached facts from a jsonfile fact cache directory: files named after the
    host, as ansible-core names them (`s<schema>_<host>`, or the bare name of older versions).
    Returns the file names removed; other hosts' files stay."""
    if directory is None or not directory.is_dir():
        return []
    wanted = [re.compile(rf"(?:s\d+_)?{re.escape(name)}") for name in host_names]
    removed = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and any(pattern.fullmatch(path.name) for pattern in wanted):
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return removed
