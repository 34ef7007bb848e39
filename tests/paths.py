"""Where the tests find the project's files, wherever a test module sits in the tree."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLES = PROJECT / "inventories" / "examples"
SUPERPOD = EXAMPLES / "h100-superpod.topology.yml"
NVL72_EXAMPLE = EXAMPLES / "gb200-nvl72-su.topology.yml"
LAB_TOPOLOGY = PROJECT / "inventories" / "lab" / "lab.topology.yml"
FIXTURES = PROJECT / "tests" / "fixtures"
# Schemas the tests validate rendered files against (copied from their projects, each with a .source).
SCHEMAS = PROJECT / "tests" / "schemas"


def load_plugin(relative: str) -> ModuleType:
    """A plugin file (e.g. "plugins/filter/topology.py") loaded as a module of its own, the way
    Ansible loads it: plugins are files in the project, not an importable package."""
    path = PROJECT / relative
    spec = importlib.util.spec_from_file_location(f"clusterforge_test_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def filters(relative: str) -> dict:
    """The filters a filter plugin file provides, by name."""
    return load_plugin(relative).FilterModule().filters()
