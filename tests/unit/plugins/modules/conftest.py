"""Module tests: the check modules run in-process with run_command and get_bin_path mocked.

Importing samples puts plugins/module_utils into ``ansible.module_utils`` (as Ansible does when it
packs a module) and gives the real captured outputs in tests/fixtures.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from tests.paths import PROJECT
from tests.unit.plugins.module_utils import samples  # noqa: F401 (puts plugins/module_utils into ansible.module_utils)

MODULES = PROJECT / "plugins" / "modules"


class ModuleExit(Exception):
    """exit_json was called."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result.get("msg"))
        self.result = result


class ModuleFail(Exception):
    """fail_json was called."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result.get("msg"))
        self.result = result


def load_module(name: str):
    spec = importlib.util.spec_from_file_location(f"clusterforge_test_{name}", MODULES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Node:
    """What the mocked node has: programs on PATH and the output each command line gives."""

    programs: set[str] = field(default_factory=set)
    # "prog arg ..." prefix -> result, or a list of results given in turn (the last one from then on).
    outputs: dict[str, tuple[int, str, str] | list[tuple[int, str, str]]] = field(default_factory=dict)
    calls: list[list[str]] = field(default_factory=list)
    environ: list[dict[str, str]] = field(default_factory=list)

    def output(self, argv: list[str]) -> tuple[int, str, str]:
        line = " ".join([os.path.basename(argv[0]), *argv[1:]])
        matches = [key for key in self.outputs if line == key or line.startswith(key + " ")]
        if not matches:
            raise AssertionError(f"unexpected command {argv}")
        result = self.outputs[max(matches, key=len)]
        if isinstance(result, list):
            return result.pop(0) if len(result) > 1 else result[0]
        return result


@dataclass
class Outcome:
    failed: bool
    result: dict[str, Any]

    @property
    def checks(self) -> dict[str, dict[str, Any]]:
        return {c["check"]: c for c in self.result["checks"]}

    def status(self, check: str) -> str:
        return self.checks[check]["status"]


@pytest.fixture
def node(monkeypatch) -> Node:
    fake = Node()

    def run_command(self, args, **kwargs):
        assert isinstance(args, list), "run_command must get an argv list"
        fake.calls.append(list(args))
        fake.environ.append({**self.run_command_environ_update, **(kwargs.get("environ_update") or {})})
        return fake.output(args)

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        return f"/usr/bin/{arg}" if arg in fake.programs else None

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs)

    def fail_json(self, msg, **kwargs):
        raise ModuleFail({"msg": msg, **kwargs})

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    return fake


@pytest.fixture
def run():
    """run(name, args, check_mode=False) -> Outcome: the module's main() with these arguments."""

    def runner(name: str, args: dict[str, Any], check_mode: bool = False) -> Outcome:
        module = load_module(name)
        arguments = dict(args)
        if check_mode:
            arguments["_ansible_check_mode"] = True
        with patch_module_args(arguments):
            try:
                module.main()
            except ModuleExit as done:
                return Outcome(False, done.result)
            except ModuleFail as failed:
                return Outcome(True, failed.result)
        raise AssertionError(f"{name} returned without exit_json or fail_json")

    return runner


def pci_tree(root: Path, devices: dict[str, tuple[str, str]]) -> Path:
    """A fake /sys/bus/pci/devices: {address: (vendor, class)}."""
    root.mkdir(parents=True, exist_ok=True)
    for address, (vendor, pci_class) in devices.items():
        (root / address).mkdir()
        (root / address / "vendor").write_text(vendor + "\n")
        (root / address / "class").write_text(pci_class + "\n")
    return root


# Eight H100s and a ConnectX-7, as a DGX H100 shows them (NVIDIA 0x10de 3D controller, Mellanox 0x15b3 IB).
GPU_PCI = {f"0000:{bus}:00.0": ("0x10de", "0x030200") for bus in ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")}
HCA_PCI = {"0000:18:00.0": ("0x15b3", "0x020700")}
# A machine without either: a virtio disk and an Intel bridge (this CI host).
PLAIN_PCI = {"0000:00:00.0": ("0x8086", "0x060000"), "0000:00:04.0": ("0x1af4", "0x010000")}


@pytest.fixture
def gpu_pci(tmp_path) -> Path:
    return pci_tree(tmp_path / "pci-gpu", {**GPU_PCI, **HCA_PCI, **PLAIN_PCI})


@pytest.fixture
def plain_pci(tmp_path) -> Path:
    return pci_tree(tmp_path / "pci-plain", PLAIN_PCI)
