# Copyright: clusterforge contributors
# Apache License 2.0
"""config_file's controller side: render the template (or take the content) and send the text to
the module in the same call, so an unchanged file costs one round trip to the node, not four.

ansible-core's `template` renders on the controller and then hands a file to `copy`, which makes
a remote temporary directory, runs `stat`, runs `file` for the attributes and removes the
directory. Here the text travels base64-encoded inside the pipelined module arguments and the
module compares, writes and sets attributes itself. Rendering follows `template`'s defaults
(trim_blocks, the role's templates/ first, ansible_managed and the template_* variables), so the
bytes written are the same.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

try:
    # Where ansible-core 2.19 keeps what `template` uses for the template_* variables: a private
    # module core may move or remove. Without it, each task runs as ansible.builtin.template or copy.
    from ansible._internal._templating._template_vars import generate_ansible_template_vars
    from ansible.template import trust_as_template
except ImportError as missing:
    MISSING_IMPORT: str | None = f"{missing}"
else:
    MISSING_IMPORT = None

# `template`'s own defaults; the roles use no other Jinja settings.
TEMPLATE_OVERRIDES = {"trim_blocks": True, "lstrip_blocks": False, "newline_sequence": "\n"}


class ActionModule(ActionBase):
    # The text goes in the module's arguments: no remote temporary directory, no file transfer.
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        if MISSING_IMPORT is not None:
            # Said once per run: workers' warnings reach the main process, which prints each text once.
            Display().warning(
                f"config_file: this ansible-core lacks what it renders with ({MISSING_IMPORT}); its tasks "
                "run as ansible.builtin.template and ansible.builtin.copy (the same files, more round trips)"
            )
            return self.run_builtin(tmp, task_vars)
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        src = args.pop("src", None)
        dest = args.get("dest")
        if not isinstance(dest, str) or not dest:
            raise AnsibleActionFail("config_file needs dest, the file to write")
        if (src is None) == (args.get("content") is None):
            raise AnsibleActionFail("config_file takes exactly one of src (a template) and content (text)")
        if src is not None:
            text = self._render(src, dest, task_vars)
        else:
            text = args["content"]
            if not isinstance(text, str):
                kind = "a mapping" if isinstance(text, Mapping) else "a list" if isinstance(text, list) else "a number"
                raise AnsibleActionFail(
                    f"config_file's content must be text, got {kind}: "
                    "write a mapping or list with to_nice_json or to_nice_yaml"
                )
        args["content"] = to_text(base64.b64encode(to_bytes(text, errors="surrogate_or_strict")))
        args["content_encoding"] = "base64"
        result.update(self._execute_module("ansible.legacy.config_file", module_args=args, task_vars=task_vars))
        return result

    def run_builtin(self, tmp, task_vars: dict) -> dict:
        """The task as a stock playbook writes it: ansible.builtin.template for src, copy for content
        (also bench/fleet.py's stock setting)."""
        task = self._task.copy()
        task.args = {key: value for key, value in self._task.args.items() if key != "content_encoding"}
        builtin = "ansible.legacy.template" if "src" in task.args else "ansible.legacy.copy"
        action = self._shared_loader_obj.action_loader.get(
            builtin,
            task=task,
            connection=self._connection,
            play_context=self._play_context,
            loader=self._loader,
            templar=self._templar,
            shared_loader_obj=self._shared_loader_obj,
        )
        return action.run(tmp=tmp, task_vars=task_vars)

    def _render(self, src: str, dest: str, task_vars: dict) -> str:
        try:
            source = self._find_needle("templates", src)
        except AnsibleError as exc:
            raise AnsibleActionFail(to_text(exc)) from exc
        data = trust_as_template(self._loader.get_text_file_contents(source))
        # Includes inside the template resolve as `template` resolves them: templates/ first.
        bases = [*task_vars.get("ansible_search_path", []), self._loader._basedir, os.path.dirname(source)]
        searchpath = [path for base in bases for path in (os.path.join(base, "templates"), base)]
        variables = {
            **task_vars,
            **generate_ansible_template_vars(
                path=src,
                fullpath=source,
                dest_path=dest,
                include_ansible_managed="ansible_managed" not in task_vars,
            ),
        }
        templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=variables)
        rendered = templar.template(data, escape_backslashes=False, overrides=TEMPLATE_OVERRIDES)
        return "" if rendered is None else rendered
