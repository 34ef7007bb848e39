"""The bench's stand-in for the project's config_file action, for the stock setting: the same task
run as a stock playbook writes a config file, with ansible.builtin.template (src) or
ansible.builtin.copy (content). Stock Ansible has no config_file; this keeps site.yml the same
for every setting while the stock one pays what `template` and `copy` cost on the node."""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        builtin = "ansible.builtin.template" if "src" in self._task.args else "ansible.builtin.copy"
        action = self._shared_loader_obj.action_loader.get(
            builtin,
            task=self._task,
            connection=self._connection,
            play_context=self._play_context,
            loader=self._loader,
            templar=self._templar,
            shared_loader_obj=self._shared_loader_obj,
        )
        return action.run(task_vars=task_vars)
