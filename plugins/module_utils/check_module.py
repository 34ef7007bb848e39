"""Plumbing shared by the node check modules (gpu_check, ib_check, nccl_check, cabling_check, ...).

A check module asks ``Tools`` for a command's output. Live, Tools finds the program on the node and
runs it with an argv list in the C locale; in replay mode it reads the output recorded earlier
from a file on the node instead and runs nothing:

* ``replay``: {command key: path}, e.g. {"nvidia-smi -q -x": "/var/tmp/h100.xml"}, one file per tool;
* ``replay_dir``: a directory holding the recordings under fixed names per key (each module lists
  them in its documentation, e.g. ``nvidia-smi-q.txt`` for "nvidia-smi -q -x").

In replay mode a key without a recording is a tool that is absent, and a node without the
recording of its main tool is reported as "skipped: no hardware": replay never falls back to the
real tools, so a lab run gives the same verdicts on any machine.

Also here: PCI probes that tell "no hardware" from "tool not installed", and the result payload
every check module returns. Stdlib only; the module object is passed in (duck-typed AnsibleModule).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from ansible.module_utils.verdicts import FAIL, PASS, SKIPPED, STATUSES, WARN, CheckResult, overall

PCI_ROOT = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"
MELLANOX_VENDOR = "0x15b3"
# PCI class codes (first four hex digits of the "class" file): VGA and 3D controllers for GPUs,
# Ethernet and InfiniBand controllers for HCAs. NVSwitches are bridges (0x0680) and not GPUs.
GPU_CLASSES = ("0x0300", "0x0302")
HCA_CLASSES = ("0x0200", "0x0207")

# run_command_environ_update of every check module: tool output is parsed, so it must not be translated.
C_LOCALE = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C", "LC_CTYPE": "C"}


class Outcome(NamedTuple):
    """What one tool printed: live (argv run) or replayed (source is the recording's path)."""

    rc: int
    stdout: str
    stderr: str
    argv: list
    source: str  # "live" or the path of the recording


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _read_small(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def pci_functions(vendor: str, classes: tuple, root: str = PCI_ROOT) -> list:
    """PCI addresses of the vendor's functions whose class starts with one of the prefixes.

    [] when the PCI tree is absent (not Linux, or a container without /sys): the caller reports
    that as no hardware."""
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    found = []
    for entry in entries:
        if _read_small(os.path.join(root, entry, "vendor")) != vendor:
            continue
        pci_class = _read_small(os.path.join(root, entry, "class")) or ""
        if pci_class.startswith(classes):
            found.append(entry)
    return found


def nvidia_gpus_on_pci(root: str = PCI_ROOT) -> list:
    return pci_functions(NVIDIA_VENDOR, GPU_CLASSES, root)


def mellanox_hcas_on_pci(root: str = PCI_ROOT) -> list:
    return pci_functions(MELLANOX_VENDOR, HCA_CLASSES, root)


class Tools:
    """Runs the node's tools, or replays their recorded outputs (see the module docstring)."""

    def __init__(
        self,
        module: Any,
        files: dict,
        replay_dir: str | None = None,
        replay: dict | None = None,
        timeout: int = 0,
    ) -> None:
        self.module = module
        self.files = files  # command key -> recording file names tried in replay_dir, in order
        self.replay_dir = replay_dir
        self.replay = dict(replay or {})
        # Seconds a live tool may run (through coreutils timeout when present): a wedged GPU or
        # HCA can hang nvidia-smi or ibstat, and with it the whole play. 0 for no limit.
        self.timeout = timeout
        self.notes: list = []

    @property
    def replaying(self) -> bool:
        return bool(self.replay_dir or self.replay)

    def recording(self, key: str) -> str | None:
        """Path of the recorded output of `key`, or None."""
        path = self.replay.get(key)
        if path:
            return path if os.path.isfile(path) else None
        if self.replay_dir:
            for name in self.files.get(key, ()):
                candidate = os.path.join(self.replay_dir, name)
                if os.path.isfile(candidate):
                    return candidate
        return None

    def recorded_dir(self, key: str) -> str | None:
        """A recorded directory (e.g. a copy of /sys/class/infiniband), or None."""
        path = self.replay.get(key)
        if path:
            return path if os.path.isdir(path) else None
        if self.replay_dir:
            for name in self.files.get(key, ()):
                candidate = os.path.join(self.replay_dir, name)
                if os.path.isdir(candidate):
                    return candidate
        return None

    def find(self, program: str, opt_dirs: list | None = None) -> str | None:
        """Absolute path of the program; a path given with a slash is used as it is."""
        if "/" in program:
            return program if os.path.isfile(program) and os.access(program, os.X_OK) else None
        return self.module.get_bin_path(program, required=False, opt_dirs=opt_dirs or [])

    def run(self, key: str, argv: list, opt_dirs: list | None = None) -> Outcome | None:
        """The tool's output; None when the tool (or, replaying, its recording) is absent.

        argv[0] is the program name (or path); the rest is passed unchanged."""
        if self.replaying:
            path = self.recording(key)
            if path is None:
                self.notes.append(f"replay: no recording of {key!r}")
                return None
            return Outcome(0, _read_text(path), "", list(argv), path)
        program = self.find(argv[0], opt_dirs)
        if program is None:
            return None
        command = [program, *argv[1:]]
        guard = self.find("timeout") if self.timeout > 0 else None
        if guard:
            command = [guard, "--kill-after=10", str(self.timeout), *command]
        rc, stdout, stderr = self.module.run_command(command)
        if guard and rc == 124:
            stderr = f"{argv[0]} timed out after {self.timeout} s\n{stderr}"
        return Outcome(rc, stdout, stderr, command, "live")


def first_line(*texts: str) -> str:
    for text in texts:
        for line in (text or "").splitlines():
            if line.strip():
                return line.strip()[:300]
    return ""


def payload(results: list) -> dict:
    """checks (as dicts), the overall status and a count per status."""
    checks = [r.as_dict() if isinstance(r, CheckResult) else dict(r) for r in results]
    counts = {status: 0 for status in STATUSES}
    for check in checks:
        counts[check["status"]] += 1
    return {"checks": checks, "status": overall(results), "counts": counts}


def failure_message(module_name: str, results: list) -> str:
    bad = [r for r in results if r.status == FAIL]
    details = "; ".join(f"{r.check}: {r.message}" for r in bad[:5])
    more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
    return f"{module_name}: {len(bad)} of {len(results)} checks failed: {details}{more}"


def finish(module: Any, module_name: str, results: list, **extra: Any) -> None:
    """exit_json, or fail_json when any check failed (a warn or skip never fails the host).

    extra carries the module's own return values; rc/stdout/stderr of a failed command go there."""
    body = payload(results)
    body.update(extra)
    body["changed"] = False
    if body["status"] == FAIL:
        module.fail_json(msg=failure_message(module_name, results), **body)
    summary = ", ".join(f"{body['counts'][s]} {s}" for s in (PASS, WARN, SKIPPED) if body["counts"][s])
    module.exit_json(msg=f"{module_name}: {body['status']} ({summary or 'no checks'})", **body)


# Options every check module takes besides its own: recorded outputs instead of live tools (Tools).
REPLAY_OPTIONS = {"replay_dir": {"type": "path"}, "replay": {"type": "dict", "default": {}}}


def check_module(module_class: Any, argument_spec: dict) -> Any:
    """The module object of a node check: its options plus REPLAY_OPTIONS, check mode (checks
    change nothing), tools run in the C locale. module_class is AnsibleModule, passed in."""
    module = module_class(argument_spec={**argument_spec, **REPLAY_OPTIONS}, supports_check_mode=True)
    module.run_command_environ_update = dict(C_LOCALE)
    return module


def run_check_module(module: Any, module_name: str, run_checks: Any) -> None:
    """A check module's main(): run_checks(module) -> (results, extra), then finish."""
    results, extra = run_checks(module)
    finish(module, module_name, results, **extra)
