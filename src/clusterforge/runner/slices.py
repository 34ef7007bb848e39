"""Disjoint slices of an inventory, one ansible-playbook process each (`clusterforge run --slices N`).

Ansible's main process spends a few milliseconds per host and task that no number of forks
spreads; at 10,000 nodes that is most of a run, so N processes each run a slice.

How hosts are placed, the same way every time for the same inventory and N:
- infrastructure (outside the `compute` group, or in a control group: Slurm controller and
  login, Kubernetes control plane) goes to slice 1, and only there, so a play that targets it runs
  on it once;
- a scalable unit (group suN) stays whole, else a leaf group (under a fabric_* group): rolling
  batches and the node checks see whole units and leaves. Units by number, then leaf groups by
  name, each goes to the slice with the fewest hosts so far;
- a host in neither is placed by a hash of its name.
Each slice runs with `--limit @FILE`, the file naming its hosts; nothing is rewritten."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clusterforge.errors import Interrupted, UsageError
from clusterforge.runner import artifacts, quiet
from clusterforge.topology import groups

COMPUTE_GROUP = "compute"
# The orchestrators' groups of other roles than compute (slurm_controller, slurm_login,
# k8s_control_plane): their hosts run with slice 1 alone, as the control planes' plays must run once.
CONTROL_GROUPS = tuple(name for name, roles in groups.ORCHESTRATOR_GROUPS.items() if COMPUTE_GROUP not in roles)
UNIT_GROUP = re.compile(r"^su\d+$")
FABRIC_GROUP_PREFIX = "fabric_"
_INVENTORY_TIMEOUT_S = 600
# How often listing the inventory checks for a Ctrl-C or SIGTERM.
_CANCEL_POLL_S = 0.25


@dataclass(frozen=True)
class Inventory:
    """What slicing needs of an inventory: its hosts, each group's child groups and hosts."""

    hosts: tuple[str, ...]
    members: dict[str, frozenset[str]]  # group -> its hosts, its children's included
    children: dict[str, tuple[str, ...]]

    @classmethod
    def from_list(cls, listing: dict) -> Inventory:
        """From `ansible-inventory --list` output: groups with direct hosts and child groups."""
        found = {name: value for name, value in listing.items() if name != "_meta" and isinstance(value, dict)}
        direct = {name: list(value.get("hosts") or []) for name, value in found.items()}
        children = {name: tuple(value.get("children") or []) for name, value in found.items()}
        members: dict[str, frozenset[str]] = {}

        def resolve(name: str, seen: frozenset[str]) -> frozenset[str]:
            if name not in members:
                hosts = set(direct.get(name, ()))
                for child in children.get(name, ()):
                    if child not in seen:
                        hosts |= resolve(child, seen | {name})
                members[name] = frozenset(hosts)
            return members[name]

        for name in found:
            resolve(name, frozenset())
        hostvars = (listing.get("_meta") or {}).get("hostvars") or {}
        hosts = set(hostvars) | {host for hosts in direct.values() for host in hosts}
        return cls(tuple(sorted(hosts)), members, children)

    def group(self, name: str) -> frozenset[str]:
        return self.members.get(name, frozenset())


def parse_slice(text: str) -> tuple[int, int]:
    """`--slice i/N` as (i, N): 1 <= i <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match:
        raise UsageError(f"--slice {text}: expected I/N, slice I of N, such as 2/4")
    index, count = int(match[1]), int(match[2])
    check_count(count, "--slice")
    if not 1 <= index <= count:
        raise UsageError(f"--slice {text}: slice {index} is outside 1..{count}; expected I/N with 1 <= I <= N")
    return index, count


def check_count(count: int, option: str = "--slices") -> None:
    if count < 1:
        raise UsageError(f"{option}: {count} slices; expected N >= 1")


def assign(inventory: Inventory, count: int) -> list[list[str]]:
    """The hosts of each slice (index 0 is slice 1), each list sorted; see the module's docstring."""
    check_count(count)
    slices: list[set[str]] = [set() for _ in range(count)]
    infrastructure = infrastructure_hosts(inventory)
    slices[0] |= infrastructure
    placed = set(infrastructure)
    for _name, block in blocks(inventory, placed):
        fewest = min(range(count), key=lambda index: (len(slices[index]), index))
        slices[fewest] |= block
        placed |= block
    for host in inventory.hosts:
        if host not in placed:
            slices[_hash(host) % count].add(host)
    return [sorted(hosts) for hosts in slices]


def infrastructure_hosts(inventory: Inventory) -> set[str]:
    """Hosts outside `compute` (when the inventory has that group) or in a control group."""
    compute = inventory.group(COMPUTE_GROUP)
    found = {host for host in inventory.hosts if host not in compute} if compute else set()
    for name in CONTROL_GROUPS:
        found |= inventory.group(name)
    return found


def blocks(inventory: Inventory, placed: set[str]) -> list[tuple[str, frozenset[str]]]:
    """(group, hosts) to keep together, in placing order: units (su1, su2, ... by number), then the
    leaf groups of hosts in no unit (fabric groups by name, their leaf groups by name). A host
    already placed, or in an earlier block, is left out of a later one."""
    units = sorted((name for name in inventory.members if UNIT_GROUP.match(name)), key=lambda n: int(n[2:]))
    leaves = [
        leaf
        for fabric in sorted(name for name in inventory.members if name.startswith(FABRIC_GROUP_PREFIX))
        for leaf in _leaf_groups(inventory, fabric)
    ]
    found = []
    taken = set(placed)
    for name in [*units, *leaves]:
        block = inventory.group(name) - taken
        if block:
            found.append((name, frozenset(block)))
            taken |= block
    return found


def _leaf_groups(inventory: Inventory, group: str) -> list[str]:
    """The groups under a fabric group (through pod groups) that hold hosts: a leaf's, or a unit's leaves'."""
    found = []
    for child in sorted(inventory.children.get(group, ())):
        if inventory.children.get(child):
            found += _leaf_groups(inventory, child)
        elif inventory.group(child):
            found.append(child)
    return found


def _hash(host: str) -> int:
    """Python's hash() differs per process; this does not."""
    return int.from_bytes(hashlib.sha256(host.encode()).digest()[:8], "big")


def load_inventory(
    project: Path, inventory: Path, limit: str | None = None, cancel: Callable[[], bool] = lambda: False
) -> Inventory:
    """The inventory as Ansible reads it (any source: a topology file, INI, a directory), with
    `ansible-inventory --list`; with limit, only the hosts it matches. cancel() true (a Ctrl-C or
    SIGTERM) ends the listing with Interrupted."""
    bindir = Path(sys.executable).parent
    command = [str(bindir / "ansible-inventory"), "-i", str(inventory), "--list"]
    if limit:
        command += ["--limit", limit]
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(project / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "PYTHONWARNINGS": quiet.pythonwarnings(os.environ.get("PYTHONWARNINGS")),
    }
    try:
        # A session of its own: a Ctrl-C at the terminal reaches clusterforge, which ends the
        # listing, instead of ansible-inventory, whose traceback would be reported as the error.
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=project,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise UsageError(f"{inventory}: could not list the inventory to slice it: {exc}") from None
    deadline = time.monotonic() + _INVENTORY_TIMEOUT_S
    try:
        while True:
            try:
                stdout, stderr = process.communicate(timeout=_CANCEL_POLL_S)
                break
            except subprocess.TimeoutExpired:
                if cancel():
                    raise Interrupted(f"interrupted while listing the inventory {inventory}: nothing ran") from None
                if time.monotonic() > deadline:
                    raise UsageError(
                        f"{inventory}: could not list the inventory to slice it: "
                        f"ansible-inventory took more than {_INVENTORY_TIMEOUT_S} s"
                    ) from None
    finally:
        if process.poll() is None:  # interrupted, or timed out: it must not run on
            process.kill()
            process.wait()
    try:
        listing = json.loads(stdout) if process.returncode == 0 else None
    except ValueError:
        listing = None
    if not isinstance(listing, dict):
        said = (stderr or stdout).strip()[-2000:]
        raise UsageError(f"{inventory}: ansible-inventory --list failed (exit status {process.returncode}):\n{said}")
    return Inventory.from_list(listing)


def write_limit_file(path: Path, hosts: list[str]) -> str:
    """The file `--limit @FILE` reads (a host per line; private, like the run directory); returns
    the limit argument."""
    with artifacts.open_private(path, "w", encoding="utf-8") as file:
        file.write("".join(f"{host}\n" for host in hosts))
    return f"@{path}"
