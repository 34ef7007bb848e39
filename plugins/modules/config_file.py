#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: config_file
short_description: Write a rendered configuration file in one round trip to the node
description:
  - "The roles' C(template) and C(copy content=...) in one module call: the action plugin of the
    same name renders O(src) (a template, searched like C(template)'s) or takes O(content) on the
    controller and sends the text with the module's arguments. The module compares it with O(dest),
    writes it atomically only when it differs, and sets owner, group and mode."
  - "Why: C(template) on an unchanged file costs four round trips to the node (a temporary
    directory, C(stat), C(file) for the attributes, removing the directory), each paid in
    controller CPU on every node on every run; this costs one."
  - Supports check mode and diff mode. The text is never logged on the node (it may hold secrets).
  - "A new file is created 0600 and then given O(mode), O(owner) and O(group), so a secret is never
    readable by others on the way; without O(mode) it stays 0600. A symlink at O(dest) is replaced
    by a file, as C(template) replaces it."
  - "Not supported, unlike C(template): C(backup), C(force=false), C(follow), C(newline_sequence),
    C(output_encoding), C(trim_blocks)/C(lstrip_blocks) and the other Jinja delimiter options (a
    C(#jinja2:) header in the template still works), C(remote_src) and C(checksum). Use
    C(ansible.builtin.template) where a task needs one of them."
  - "On an ansible-core that lacks the private function the action renders with (2.19's
    C(ansible._internal._templating._template_vars)), each task runs as C(ansible.builtin.template)
    (O(src)) or C(ansible.builtin.copy) (O(content)) instead, writing the same file, and one warning
    per run says so."
extends_documentation_fragment:
  - ansible.builtin.files
options:
  dest:
    description: The file to write. Its directory must exist.
    type: path
    required: true
  src:
    description:
      - "A Jinja2 template, found like C(template)'s (the role's C(templates/) first) and rendered
        on the controller by the action plugin. Exactly one of O(src) and O(content)."
    type: str
  content:
    description:
      - "The file's text. Exactly one of O(src) and O(content). The action plugin sends the text
        base64-encoded (O(content_encoding=base64)), so the node's diff is not masked as a
        no_log value."
    type: str
  content_encoding:
    description: How O(content) is encoded; the action plugin sets it.
    type: str
    choices: [text, base64]
    default: text
  validate:
    description:
      - "A command run on the new text before it replaces O(dest); C(%s) stands for the file.
        The file is written next to O(dest) under a temporary name, so relative paths in it resolve
        as they will once in place. Not run in check mode or when nothing changes."
    type: str
"""

EXAMPLES = r"""
- name: Write slurm.conf
  config_file:
    src: slurm.conf.j2
    dest: /etc/slurm/slurm.conf
    owner: root
    group: root
    mode: "0644"
  notify: Reconfigure Slurm

- name: Write the checksum stamp
  config_file:
    content: "{{ archive_sha256 }}  {{ archive_url }}\n"
    dest: /opt/archive/.sha256
    mode: "0644"
"""

RETURN = r"""
dest:
  description: The file written or found up to date.
  returned: success
  type: str
checksum:
  description: SHA-1 of the file's new content, as C(copy) returns it.
  returned: success
  type: str
"""

import base64
import hashlib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

# What a diff shows at most, as ansible-core's max_file_size_for_diff default.
MAX_DIFF_BYTES = 104448


def new_content(params: dict) -> bytes:
    text = params["content"]
    if params["content_encoding"] == "base64":
        return base64.b64decode(text)
    return text.encode("utf-8")


def read_current(module: AnsibleModule, dest: str) -> bytes | None:
    """The file's bytes, or None when there is none to compare: no file, or a symlink (replaced by
    a file, as `template` replaces it)."""
    if os.path.isdir(dest) and not os.path.islink(dest):
        module.fail_json(msg=f"{dest} is a directory; config_file writes files")
    if not os.path.lexists(dest) or os.path.islink(dest):
        return None
    try:
        with open(dest, "rb") as handle:
            return handle.read()
    except OSError as exc:
        module.fail_json(msg=f"cannot read {dest} to compare it: {exc.strerror}")


def text_diff(dest: str, before: bytes | None, after: bytes) -> dict:
    def shown(data: bytes) -> str:
        if len(data) > MAX_DIFF_BYTES or b"\0" in data:
            return f"(not shown: {len(data)} bytes, binary or over {MAX_DIFF_BYTES})\n"
        return data.decode("utf-8", errors="replace")

    return {
        "before": shown(before or b""),
        "after": shown(after),
        "before_header": dest if before is not None else f"{dest} (absent)",
        "after_header": dest,
    }


def write_atomically(module: AnsibleModule, dest: str, data: bytes) -> None:
    """Write `data` beside `dest` with its attributes, validate it there, then rename it over `dest`."""
    directory = os.path.dirname(dest) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg=f"the directory of {dest} does not exist; create it before writing the file")
    # A .tmp name: directories read by glob (Prometheus rules/*.yml, textfile *.prom) skip it.
    fd, staged = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(dest)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        # Owner, group and mode before validate (visudo checks them) and before it is in place.
        module.set_fs_attributes_if_different(module.load_file_common_arguments(module.params, path=staged), False)
        validate = module.params["validate"]
        if validate:
            if "%s" not in validate:
                module.fail_json(msg=f"validate must contain %s, where the file goes: {validate!r}")
            rc, out, err = module.run_command(validate % staged)
            if rc != 0:
                module.fail_json(msg=f"failed to validate the new {dest}", exit_status=rc, stdout=out, stderr=err)
        module.atomic_move(staged, dest, unsafe_writes=module.params["unsafe_writes"])
    finally:
        if os.path.lexists(staged):
            os.unlink(staged)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dest": {"type": "path", "required": True},
            "src": {"type": "str"},
            # no_log: AnsibleModule logs its arguments on the node, and a config file may hold secrets.
            "content": {"type": "str", "no_log": True},
            "content_encoding": {"type": "str", "choices": ["text", "base64"], "default": "text"},
            "validate": {"type": "str"},
        },
        required_one_of=[["content", "src"]],
        add_file_common_args=True,
        supports_check_mode=True,
    )
    # A new file is created 0600 and then given its mode: a secret is never briefly world-readable.
    os.umask(0o077)
    if module.params["content"] is None:
        module.fail_json(msg="src is rendered by the config_file action plugin; the module alone takes content")
    dest = module.params["dest"]
    after = new_content(module.params)
    before = read_current(module, dest)
    changed = before != after
    result = {"dest": dest, "checksum": hashlib.sha1(after).hexdigest()}
    diff = text_diff(dest, before, after) if changed else {}
    if changed and not module.check_mode:
        write_atomically(module, dest, after)
    # The attributes' diff is a second entry: AnsibleModule fills it with {"mode": ...} mappings.
    attributes_diff: dict = {}
    if before is not None or not module.check_mode:
        file_args = module.load_file_common_arguments(module.params, path=dest)
        changed = module.set_fs_attributes_if_different(file_args, changed, diff=attributes_diff)
    if module._diff:
        result["diff"] = [entry for entry in (diff, attributes_diff) if entry]
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
