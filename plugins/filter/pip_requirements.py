# Copyright: clusterforge contributors
# Apache License 2.0
"""Hash-pinned pip requirements from a role variable, and what a failed `pip install` was about.

The pytorch role writes its venv's requirements file with the first and, when pip fails, names the
package and the variable to change with the second. Standard library only; the decisions live here,
where the unit tests reach them with pip's own output (tests/unit/plugins/filter/pip_install).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_pip_requirements
short_description: A hash-pinned pip requirements file from a list of name, version, sha256
description:
  - "Each entry is {name, version, sha256}; sha256 is one digest (64 hex digits) or a list of them.
    Returns the file's text: a comment line, then C(name==version --hash=sha256:...) per entry.
    A malformed entry is an error naming the variable, the entry's position and what was expected."
  - "Sibling filter: C(clusterforge_pip_install_problem)(output, requirements_variable, index_variable,
    index_url): the one-line reason a failed C(pip install --require-hashes) gives, naming the package and
    the variable to change (a hash mismatch, a version the index does not have, an unreachable index)."
positional: _input, variable, header
options:
  _input:
    description: The requirements.
    type: list
    elements: dict
    required: true
  variable:
    description: The variable's name, for errors.
    type: str
    required: true
  header:
    description: Text of the first (comment) line, such as ansible_managed.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Write the requirements
  ansible.builtin.copy:
    content: "{{ pytorch_pip_requirements | clusterforge_pip_requirements('pytorch_pip_requirements') }}"
    dest: /opt/clusterforge/envs/pytorch-2.6.0.requirements.txt
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The requirements file's text.
  type: str
"""

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!_-]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def pip_requirements(requirements, variable, header=""):
    if not isinstance(requirements, list) or not requirements:
        raise AnsibleFilterError(
            f"{variable}: expected a non-empty list of {{name, version, sha256}} (the hash-pinned dependency"
            f" closure), got {requirements!r}"
        )
    lines = [f"# {' '.join(str(header).split())}".rstrip()]
    for position, entry in enumerate(requirements, 1):
        where = f"{variable}, entry {position}"
        if not isinstance(entry, Mapping):
            raise AnsibleFilterError(f"{where}: expected a mapping of name, version, sha256, got {entry!r}")
        name, version, digests = (entry.get(key) for key in ("name", "version", "sha256"))
        if not isinstance(name, str) or not _NAME.match(name):
            raise AnsibleFilterError(f"{where}: name is {name!r}, expected a package name")
        if not isinstance(version, str) or not _VERSION.match(version):
            raise AnsibleFilterError(f"{where} ({name}): version is {version!r}, expected an exact version")
        digests = [digests] if isinstance(digests, str) else digests
        if (
            not isinstance(digests, list)
            or not digests
            or not all(isinstance(digest, str) and _SHA256.match(digest) for digest in digests)
        ):
            raise AnsibleFilterError(
                f"{where} ({name}): sha256 is {entry.get('sha256')!r}, expected 64 lower-case hex digits or a"
                " list of them (one per wheel)"
            )
        lines.append(f"{name}=={version}" + "".join(f" --hash=sha256:{digest}" for digest in digests))
    return "\n".join(lines) + "\n"


# pip's report of a wheel whose digest is not the pinned one (pip 23 to 25):
#     six==1.17.0 from http://.../six-1.17.0-py2.py3-none-any.whl (from -r req.txt (line 2)):
#         Expected sha256 0000...
#              Got        4721...
_MISMATCH = re.compile(
    r"^\s+(?P<req>\S+) from (?P<url>\S+)[^\n]*:\n\s+Expected sha256 (?P<expected>[0-9a-f]+)"
    r"(?:\n\s+or\s+[0-9a-f]+)*\n\s+Got\s+(?P<got>[0-9a-f]+)",
    re.MULTILINE,
)
_NOT_FOUND = re.compile(r"No matching distribution found for (?P<req>\S+)")
_VERSIONS = re.compile(
    r"Could not find a version that satisfies the requirement \S+ \(from versions: (?P<versions>[^)]*)\)"
)
# The packages pip names, with the digest it saw, when one is not in the requirements at all.
_UNPINNED = re.compile(r"^\s+(\S+==\S+) --hash=sha256:[0-9a-f]+", re.MULTILINE)
_CONNECTION = re.compile(
    r"(NewConnectionError|Connection refused|Name or service not known|Temporary failure in name resolution"
    r"|timed out|ConnectTimeoutError|SSLError|is not a trusted or secure host)"
)


def pip_install_problem(output, requirements_variable, index_variable, index_url):
    """Why `pip install --require-hashes -r ...` failed, in one line naming the package and the variable."""
    text = str(output or "")
    mismatches = list(_MISMATCH.finditer(text))
    if mismatches:
        return "; ".join(
            f"{found['req']} from {found['url']} does not match its sha256 in {requirements_variable}:"
            f" expected {found['expected']}, got {found['got']}"
            for found in mismatches
        )
    missing = _NOT_FOUND.search(text)
    if missing:
        connection = _CONNECTION.search(text)
        if connection:
            return (
                f"{missing['req']}: the index {index_variable} ({index_url}) cannot be reached"
                f" ({connection.group(1)}); point {index_variable} at a reachable mirror"
                f" (or list an http host in the role's trusted hosts)"
            )
        versions = _VERSIONS.search(text)
        there = versions["versions"] if versions else "unknown"
        return (
            f"{missing['req']}: the index {index_variable} ({index_url}) has no such wheel for this node"
            f" (versions there: {there}); change {requirements_variable} or the index"
        )
    if "Hashes are required in --require-hashes mode" in text:
        unpinned = _UNPINNED.findall(text.split("Hashes are required in --require-hashes mode", 1)[1])
        return (
            f"{', '.join(unpinned) or 'a dependency'}: needed but not in {requirements_variable} (every package of"
            f" the dependency closure needs its version and sha256 there)"
        )
    return f"pip failed installing {requirements_variable} from {index_variable} ({index_url}): {_last_error(text)}"


def _last_error(text: str) -> str:
    errors = [line.strip() for line in text.splitlines() if line.startswith("ERROR:")]
    return errors[-1] if errors else " ".join(text.split()[-40:])


class FilterModule:
    def filters(self):
        return {
            "clusterforge_pip_requirements": pip_requirements,
            "clusterforge_pip_install_problem": pip_install_problem,
        }
