"""plugins/module_utils runs on the nodes: stdlib only, Python 3.8 syntax, siblings via ansible.module_utils."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from .samples import MODULE_UTILS

FILES = sorted(MODULE_UTILS.glob("*.py"))
SIBLINGS = {path.stem for path in FILES}
# ansible-core 2.19 runs modules on Python 3.8 and later: these names came in 3.9/3.10.
TOO_NEW = {"removeprefix", "removesuffix", "strict"}


def test_there_are_module_utils():
    assert {
        "verdicts",
        "check_module",
        "nvidia_smi",
        "gpu_judge",
        "nccl_tests",
        "nccl_judge",
        "ibstat",
        "ib_judge",
    } <= SIBLINGS


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_imports_are_stdlib_or_siblings(path: Path):
    tree = ast.parse(path.read_text(), feature_version=(3, 8))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            # Relative imports resolve only inside a package; use ansible.module_utils.<name>.
            assert node.level == 0, f"{path.name}:{node.lineno}: relative import"
            modules = [node.module or ""]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            if module.startswith("ansible.module_utils."):
                assert module.split(".")[2] in SIBLINGS, f"{path.name}: {module} is not in plugins/module_utils"
            else:
                top = module.split(".")[0]
                assert top in sys.stdlib_module_names or top == "__future__", f"{path.name}: imports {module}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_no_api_newer_than_python_3_8(path: Path):
    tree = ast.parse(path.read_text())
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used |= {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg}
    assert not used & TOO_NEW, f"{path.name} uses {sorted(used & TOO_NEW)}"
