#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: toml_merge
short_description: Merge settings into a TOML file that users also edit
description:
  - "Reads O(path) (TOML), merges O(settings) into it deeply (tables merge key by key; any other
    value, arrays included, is replaced) and writes the file only when the result differs, so
    keys and tables already in the file survive."
  - "Used for containerd's C(config.toml): the roles set the keys they manage (SystemdCgroup,
    registry config_path, sandbox image, runtimes) and leave the rest alone."
  - "The file is rewritten in a canonical layout: comments and key order of the original are not
    kept (TOML readers on the node, C(tomllib), drop them)."
  - Supports check mode and diff mode.
  - Needs Python 3.11 or newer on the node (C(tomllib)).
options:
  path:
    description: The TOML file.
    type: path
    required: true
  settings:
    description: Nested mapping merged into the file.
    type: dict
    required: true
  create:
    description: Create the file from O(settings) when it does not exist.
    type: bool
    default: true
  mode:
    description: Mode of a file the module creates; an existing file keeps its mode.
    type: raw
    default: "0644"
"""

EXAMPLES = r"""
- name: Use the systemd cgroup driver in containerd's runc runtime
  toml_merge:
    path: /etc/containerd/config.toml
    settings:
      version: 2
      plugins:
        io.containerd.grpc.v1.cri:
          containerd:
            runtimes:
              runc:
                options:
                  SystemdCgroup: true
"""

RETURN = r"""
config:
  description: The merged content of the file, as a mapping.
  returned: success
  type: dict
"""

import datetime
import json
import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

try:
    import tomllib
except ImportError:  # Python < 3.11 on the node
    tomllib = None

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def merge(base: dict, patch: dict) -> dict:
    """A new mapping: `base` with `patch` merged in; mappings merge, other values are replaced."""
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML: {value!r}")


def _is_table_array(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def dumps(data: dict) -> str:
    """TOML text for `data`: scalars first, then one [table] per mapping, [[array]] per list of mappings."""
    lines: list[str] = []
    _emit(data, [], lines, header=False)
    return "\n".join(lines).strip("\n") + "\n"


def _emit(table: dict, path: list[str], lines: list[str], header: bool, array: bool = False) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict) and not _is_table_array(v)}
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in table.items() if _is_table_array(v)}
    name = ".".join(_key(part) for part in path)
    if array:
        lines += ["", f"[[{name}]]"]
    elif header and (scalars or not (tables or arrays)):
        lines += ["", f"[{name}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in scalars.items()]
    for key, sub in tables.items():
        _emit(sub, [*path, key], lines, header=True)
    for key, items in arrays.items():
        for item in items:
            _emit(item, [*path, key], lines, header=True, array=True)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "settings": {"type": "dict", "required": True},
            "create": {"type": "bool", "default": True},
            "mode": {"type": "raw", "default": "0644"},
        },
        supports_check_mode=True,
    )
    if tomllib is None:
        module.fail_json(msg="toml_merge needs Python 3.11 or newer on the node (tomllib)")
    path = module.params["path"]
    exists = os.path.exists(path)
    if not exists and not module.params["create"]:
        module.fail_json(msg=f"{path} does not exist and create is false")
    before_text = ""
    current: dict = {}
    if exists:
        with open(path, encoding="utf-8") as handle:
            before_text = handle.read()
        try:
            current = tomllib.loads(before_text)
        except tomllib.TOMLDecodeError as exc:
            module.fail_json(msg=f"{path} is not valid TOML ({exc}); fix it so its settings can be merged")
    merged = merge(current, module.params["settings"])
    after_text = dumps(merged)
    # Unchanged content is no change, whatever the file's layout.
    changed = not exists or merged != current
    result = {"changed": changed, "config": merged}
    if module._diff:
        result["diff"] = {"before": before_text, "after": after_text, "before_header": path, "after_header": path}
    if changed and not module.check_mode:
        directory = os.path.dirname(path) or "."
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".toml_merge.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(after_text)
        module.atomic_move(tmp, path)
        if not exists:
            module.set_mode_if_different(path, module.params["mode"], False)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
