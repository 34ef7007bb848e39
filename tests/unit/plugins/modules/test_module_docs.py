"""Each check module's documentation, as ansible-doc renders it (with the node_check doc
fragment), names exactly the options its argument spec accepts, with the same types and defaults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.module_utils.check_module import REPLAY_OPTIONS

from .conftest import MODULES, load_module

PROJECT = MODULES.parents[1]
CHECK_MODULES = sorted(path.stem for path in MODULES.glob("*_check.py"))


def argument_spec(name: str) -> dict:
    module = load_module(name)
    captured: dict = {}
    module.check_module = lambda module_class, spec: captured.update(spec, **REPLAY_OPTIONS)
    module.build_module()
    return captured


@pytest.fixture(scope="module")
def docs() -> dict:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-doc"), "-j", *CHECK_MODULES],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    return {name: entry["doc"] for name, entry in json.loads(done.stdout).items()}


def test_every_check_module_is_documented(docs):
    assert len(CHECK_MODULES) == 9
    assert sorted(docs) == CHECK_MODULES


@pytest.mark.parametrize("name", CHECK_MODULES)
def test_documented_options_match_the_argument_spec(name, docs):
    documented = docs[name]["options"]
    spec = argument_spec(name)
    assert sorted(documented) == sorted(spec)
    for option, settings in spec.items():
        assert documented[option].get("type", "str") == settings.get("type", "str"), option
        assert documented[option].get("default") == settings.get("default"), option


@pytest.mark.parametrize("name", CHECK_MODULES)
def test_the_doc_fragment_gives_the_attributes(name, docs):
    attributes = docs[name]["attributes"]
    assert attributes["check_mode"]["support"] == "full"
    assert attributes["diff_mode"]["support"] == "none"
    assert docs[name]["author"] == ["clusterforge contributors"]


PLUGIN_SOURCES = sorted(path for path in (PROJECT / "plugins").glob("*/*.py") if path.name != "__init__.py")
DOC_BLOCKS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


@pytest.mark.parametrize("path", PLUGIN_SOURCES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_plugin_s_doc_blocks_are_yaml(path):
    # ansible-doc and ansible-lint only print "Unable to parse documentation" and go on: a block that
    # is not YAML (an unquoted ": " in a description) would leave the plugin undocumented unnoticed.
    import ast

    import yaml

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in DOC_BLOCKS:
            yaml.safe_load(node.value.value)
