"""Mitogen for Ansible as an opt-in strategy (`clusterforge run --mitogen`): the environment that
points ansible-playbook at Mitogen's strategy plugins for one run, leaving ansible.cfg alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from clusterforge.errors import UsageError

# Mitogen's drop-in for Ansible's default (linear) strategy: same task order, its own connections.
STRATEGY = "mitogen_linear"
INSTALL_HINT = "pip install 'clusterforge[mitogen]'"


def strategy_plugins() -> Path:
    """The installed ansible_mitogen package's strategy plugin directory."""
    spec = importlib.util.find_spec("ansible_mitogen")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"--mitogen: the mitogen package is not installed in this environment ({INSTALL_HINT})")
    plugins = Path(next(iter(spec.submodule_search_locations))) / "plugins" / "strategy"
    if not (plugins / f"{STRATEGY}.py").is_file():
        raise UsageError(f"--mitogen: {plugins} has no {STRATEGY}.py: an unexpected mitogen install ({INSTALL_HINT})")
    return plugins


def environment() -> dict[str, str]:
    """ANSIBLE_* variables that make one ansible-playbook run use Mitogen's linear strategy."""
    return {"ANSIBLE_STRATEGY_PLUGINS": str(strategy_plugins()), "ANSIBLE_STRATEGY": STRATEGY}
