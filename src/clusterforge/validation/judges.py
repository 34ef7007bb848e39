"""The node checks' parsers and judges (plugins/module_utils), importable on the controller.

Ansible merges a project's module_utils directory into ``ansible.module_utils`` when it packs a
module; the files import each other that way. ``load()`` appends the directory to that package's
search path, as tests/unit/module_utils/samples.py does, so ``clusterforge check judge`` judges a
local file with exactly the code the nodes run.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from clusterforge.errors import EnvironmentProblem

_HERE = Path(__file__).resolve()


def module_utils_dir() -> Path:
    """plugins/module_utils of the checkout this package runs from, else of the project dir."""
    candidate = _HERE.parents[3] / "plugins" / "module_utils"
    if (candidate / "verdicts.py").is_file():
        return candidate
    from clusterforge.paths import project_dir

    candidate = project_dir() / "plugins" / "module_utils"
    if (candidate / "verdicts.py").is_file():
        return candidate
    raise EnvironmentProblem(f"cannot find plugins/module_utils (tried {candidate})")


def load(name: str) -> ModuleType:
    """ansible.module_utils.<name> from plugins/module_utils."""
    import ansible.module_utils

    path = str(module_utils_dir())
    if path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(path)
    return importlib.import_module(f"ansible.module_utils.{name}")
