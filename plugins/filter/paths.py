# Copyright: clusterforge contributors
# Apache License 2.0
"""Which paths a role may write, chmod, chown or run as root.

Every role that takes a path variable and writes it as root calls this one filter, so a typo
or a hostile value (``/``, ``/var/lib``, ``/etc/passwd``) is refused the same way everywhere,
with the variable's name, its value and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_unsafe_paths
short_description: The path variables a role must refuse, each with why
description:
  - "Input: a mapping of variable name to value."
  - "Without O(within), each value is a directory the role owns (chmod, chown, files written in
    it): it must be an absolute, normalised path (no C(.), C(..), C(//) or trailing C(/)) that is
    neither a system directory (C(/etc), C(/usr), C(/var/lib), ...) nor above one (C(/), C(/var)),
    and not inside C(/proc), C(/sys), C(/dev) or C(/boot)."
  - "With O(within), each value is a file the role owns: a plain name directly under one of
    those directories, ending in O(suffix) when given."
  - "Returns one message per refused variable: C(NAME is \"VALUE\", expected ...); an empty list
    when every path is allowed."
positional: _input
options:
  _input:
    type: dict
    required: true
  within:
    description: Directories a file must sit directly in (a string or a list).
    type: raw
  suffix:
    description: What a file's name must end with.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Refuse system directories
  ansible.builtin.assert:
    that: __docker_bad_paths | length == 0
    fail_msg: "docker: {{ __docker_bad_paths | join('; ') }}"
    quiet: true
  vars:
    __docker_bad_paths: "{{ {'docker_data_root': docker_data_root} | clusterforge_unsafe_paths }}"
"""

RETURN = r"""
_value:
  description: One message per refused variable, naming it, its value and what is allowed.
  type: list
  elements: str
"""

# Directories the OS, its package manager or its services own. A role's directory may sit inside
# one (/var/lib/docker, /etc/kubernetes/clusterforge) but never be one or be above one: chmod 0700
# on /etc, dockerd emptying its data root's tmp, a mount over /var/lib all break the node.
SYSTEM_DIRECTORIES = frozenset(
    {
        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
        "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
        "/etc/apt", "/etc/cron.d", "/etc/default", "/etc/kubernetes", "/etc/ld.so.conf.d", "/etc/modprobe.d",
        "/etc/modules-load.d", "/etc/pam.d", "/etc/profile.d", "/etc/security", "/etc/slurm", "/etc/ssh",
        "/etc/sudoers.d", "/etc/sysctl.d", "/etc/systemd", "/etc/systemd/system", "/etc/yum.repos.d",
        "/usr/bin", "/usr/include", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/local", "/usr/local/bin",
        "/usr/local/etc", "/usr/local/lib", "/usr/local/libexec", "/usr/local/sbin", "/usr/local/share",
        "/usr/sbin", "/usr/share", "/usr/src",
        "/var/backups", "/var/cache", "/var/lib", "/var/local", "/var/lock", "/var/log", "/var/mail",
        "/var/opt", "/var/run", "/var/spool", "/var/tmp",
    }
)  # fmt: skip
# Kernel and boot file systems: nothing of a role's belongs anywhere inside them.
NO_ENTRY = ("/proc", "/sys", "/dev", "/boot")

_NORMAL = re.compile(r"^(/[A-Za-z0-9._@+-]+)+$")
_NAME = re.compile(r"^[A-Za-z0-9._@+-]+$")


def _directory_problem(path: str) -> str:
    """Why path may not be a role's directory, or an empty string."""
    if path == "/":
        return "a directory of the role's own, not / (which holds every system directory)"
    if not _NORMAL.match(path) or any(part in (".", "..") for part in path.split("/")):
        return "an absolute path without ., .., // or a trailing / (letters, digits, . _ @ + -)"
    if path in SYSTEM_DIRECTORIES:
        return f"a directory of the role's own, not the system directory {path}"
    below = sorted(system for system in SYSTEM_DIRECTORIES if system.startswith(path + "/"))
    if below:
        return f"a directory of the role's own, not one holding the system directory {below[0]}"
    inside = next((top for top in NO_ENTRY if path.startswith(top + "/")), "")
    if inside:
        return f"a directory outside {inside}"
    return ""


def _file_problem(path: str, within: list[str], suffix: str) -> str:
    parent, _, name = path.rpartition("/")
    # A name of its own: not . or .., and more than the suffix alone (".conf" is a hidden file).
    own_name = _NAME.match(name) and name not in (".", "..") and len(name) > len(suffix)
    if parent in within and own_name and name.endswith(suffix):
        return ""
    kind = f"a {suffix} file" if suffix else "a file"
    return f"{kind} directly under {' or '.join(d + '/' for d in within)}"


def unsafe_paths(paths: Mapping, within=None, suffix: str = "") -> list[str]:
    if not isinstance(paths, Mapping):
        raise AnsibleFilterError(
            f"clusterforge_unsafe_paths expects a mapping of variable name to path, got {type(paths).__name__}"
        )
    if isinstance(within, str):
        within = [within]
    problems = []
    for name, value in paths.items():
        path = value if isinstance(value, str) else ""
        why = _file_problem(path, list(within), suffix) if within else _directory_problem(path)
        if why:
            shown = value if isinstance(value, str) else repr(value)
            problems.append(f'{name} is "{shown}", expected {why}')
    return problems


class FilterModule:
    def filters(self):
        return {"clusterforge_unsafe_paths": unsafe_paths}
