#!/usr/bin/python3
# Copyright: clusterforge contributors
# Apache License 2.0
"""clusterforge-node-check: run the project's node check modules (gpu_check, ib_check) on the node
itself, without Ansible, for the Slurm health hook.

    clusterforge-node-check CONFIG.json [--bundle BUNDLE.json]

CONFIG.json is {"checks": {module: {option: value}}} (the slurm role writes it with the
clusterforge_node_check_args filter, from the variables validate.yml's node checks read).
BUNDLE.json is {"modules": {name: source}, "module_utils": {name: source}}: the project's
plugins/modules and plugins/module_utils files the checks need, which the slurm role writes as one
file (one task, and no stray files such as __pycache__ copied from the controller). Each module's
own run_checks() gathers and judges, exactly as under Ansible; this file only stands in for the
small part of AnsibleModule they use (params with the spec's defaults, run_command, get_bin_path,
fail_json) and for Ansible's packaging of module_utils.

Exit status: 0 when no check failed (warn and "skipped: no hardware" pass), 1 when one did (the
first line of output names the module and the failed checks, the hook's drain reason, after
"replayed from recorded outputs: " when the module judged recorded outputs), 2 for a bad
configuration or a module that cannot run.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import types
from typing import ClassVar

DEFAULT_BUNDLE = "/usr/local/lib/clusterforge/node-checks.json"
EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
# The JSON types each AnsibleModule option type accepts as it is.
TYPES = {
    "int": (int,),
    "bool": (bool,),
    "str": (str,),
    "path": (str,),
    "dict": (dict,),
    "list": (list,),
    "float": (int, float),
}


class ConfigError(Exception):
    pass


class ModuleFailed(Exception):
    pass


class NodeModule:
    """The part of AnsibleModule a check module's run_checks() uses."""

    options: ClassVar[dict] = {}  # the configuration's options for this module (a subclass per module: run_module)

    def __init__(self, argument_spec: dict, supports_check_mode: bool = False) -> None:
        given = dict(self.options)
        unknown = sorted(set(given) - set(argument_spec))
        if unknown:
            raise ConfigError(f"unknown options {unknown}; the module takes {sorted(argument_spec)}")
        self.params = {}
        for name, spec in argument_spec.items():
            value = given.get(name, spec.get("default"))
            wanted = TYPES.get(spec.get("type", "str"), (object,))
            if value is not None and (not isinstance(value, wanted) or (int in wanted and isinstance(value, bool))):
                raise ConfigError(f"option {name}: expected {spec.get('type', 'str')}, got {value!r}")
            if value is not None and "choices" in spec and value not in spec["choices"]:
                raise ConfigError(f"option {name}: expected one of {spec['choices']}, got {value!r}")
            self.params[name] = value
        self.run_command_environ_update: dict = {}

    def get_bin_path(self, program: str, required: bool = False, opt_dirs: list | None = None) -> str | None:
        path = os.pathsep.join([*(opt_dirs or []), os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
        return shutil.which(program, path=path)

    def run_command(self, argv: list) -> tuple:
        env = {**os.environ, **self.run_command_environ_update}
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env, check=False)
        return done.returncode, done.stdout, done.stderr

    def fail_json(self, msg: str, **_: object) -> None:
        raise ModuleFailed(msg)


class BundleImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ansible.module_utils.<name> from the bundle's sources."""

    PREFIX = "ansible.module_utils."

    def __init__(self, sources: dict) -> None:
        self.sources = sources

    def find_spec(self, fullname, path=None, target=None):
        name = fullname[len(self.PREFIX) :] if fullname.startswith(self.PREFIX) else None
        return importlib.util.spec_from_loader(fullname, self) if name in self.sources else None

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        name = module.__name__[len(self.PREFIX) :]
        exec(compile(self.sources[name], f"module_utils/{name}.py", "exec"), module.__dict__)


def _install_ansible_shim(bundle: dict) -> None:
    """ansible.module_utils.X from the bundle, as Ansible's packaging gives a module on a node."""
    ansible = types.ModuleType("ansible")
    ansible.__path__ = []
    module_utils = types.ModuleType("ansible.module_utils")
    module_utils.__path__ = []
    basic = types.ModuleType("ansible.module_utils.basic")
    basic.AnsibleModule = NodeModule
    ansible.module_utils = module_utils
    module_utils.basic = basic
    sys.modules.update({"ansible": ansible, "ansible.module_utils": module_utils, "ansible.module_utils.basic": basic})
    sys.meta_path.insert(0, BundleImporter(bundle["module_utils"]))


def _load_module(bundle: dict, name: str) -> types.ModuleType:
    source = bundle["modules"].get(name)
    if source is None:
        raise ConfigError(f"no module {name!r} in the bundle (it has {sorted(bundle['modules'])})")
    module = types.ModuleType(f"clusterforge_node_check_{name}")
    sys.modules[module.__name__] = module  # as an import would: dataclasses look their module up
    exec(compile(source, f"modules/{name}.py", "exec"), module.__dict__)
    if not (hasattr(module, "build_module") and hasattr(module, "run_checks")):
        raise ConfigError(f"{name} is not a node check module (no build_module/run_checks)")
    return module


def run_module(bundle: dict, name: str, options: dict) -> tuple:
    """(failed, message) of one check module."""
    from ansible.module_utils.check_module import failure_message, payload
    from ansible.module_utils.verdicts import REPLAYED, origin

    code = _load_module(bundle, name)
    # build_module() constructs the name it imported as AnsibleModule: bind this module's options to it.
    code.AnsibleModule = type("NodeModule", (NodeModule,), {"options": dict(options)})
    try:
        node_module = code.build_module()
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    results, extra = code.run_checks(node_module)
    body = payload(results)
    # Replay mode judged recordings, not this node: the message (a drain reason) says so first.
    said = f"{REPLAYED}: " if origin(extra.get("source")) == REPLAYED else ""
    if body["status"] == "fail":
        return True, said + failure_message(name, results)
    counts = ", ".join(f"{count} {status}" for status, count in body["counts"].items() if count)
    return False, f"{said}{name}: {body['status']} ({counts or 'no checks'})"


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def read_bundle(path: str) -> dict:
    bundle = _read_json(path)
    parts = ("modules", "module_utils")
    if not isinstance(bundle, dict) or not all(isinstance(bundle.get(part), dict) for part in parts):
        raise ConfigError(f'{path}: expected {{"modules": {{name: source}}, "module_utils": {{name: source}}}}')
    return bundle


def read_config(path: str) -> dict:
    config = _read_json(path)
    checks = config.get("checks") if isinstance(config, dict) else None
    if not isinstance(checks, dict) or not all(isinstance(v, dict) for v in checks.values()):
        raise ConfigError(f'{path}: expected {{"checks": {{module: {{option: value}}}}}}, got {config!r}')
    return checks


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="clusterforge-node-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--bundle", default=DEFAULT_BUNDLE)
    args = parser.parse_args(argv)
    try:
        checks = read_config(args.config)
        bundle = read_bundle(args.bundle)
        _install_ansible_shim(bundle)
        outcomes = [run_module(bundle, name, options) for name, options in checks.items()]
    except (ConfigError, ModuleFailed) as exc:
        print(f"clusterforge-node-check: {exc}")
        return EXIT_ERROR
    # Failed modules first: the hook takes the first line as the drain reason.
    for _failed, message in sorted(outcomes, key=lambda outcome: not outcome[0]):
        print(message)
    return EXIT_FAIL if any(failed for failed, _ in outcomes) else EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
