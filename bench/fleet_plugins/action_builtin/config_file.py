"""The bench's stand-in for the project's config_file action, for the stock setting: the same task
run as a stock playbook writes a config file, with ansible.builtin.template (src) or
ansible.builtin.copy (content), through the action's own fallback (the one it takes on an
ansible-core that lacks what it renders with). Stock Ansible has no config_file; this keeps site.yml
the same for every setting while the stock one pays what `template` and `copy` cost on the node."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PROJECT_ACTION = Path(__file__).resolve().parents[3] / "plugins" / "action" / "config_file.py"
_spec = importlib.util.spec_from_file_location("clusterforge_config_file_action", _PROJECT_ACTION)
_project = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_project)


class ActionModule(_project.ActionModule):
    def run(self, tmp=None, task_vars=None):
        return self.run_builtin(tmp, task_vars or {})
