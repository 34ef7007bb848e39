"""Which nodes run NCCL together, and which node is to blame when a run fails.

Pure functions over plain data (no Ansible, no topology loading): the filter plugin
plugins/filter/validation.py and the tests call them.

Pairs. One NCCL run per pair of GPU nodes tests both nodes' rails and the switches between them.
A pair on one leaf tests only that leaf; a pair on two leaves also tests the spines, and a pair
in two pods of a three-tier fabric also tests the core. So every node is paired, once, with a
node as far away as the fabric allows: different pod first, then disjoint leaves, then leaves
shared in part, and the same leaf only when nothing else is left. Greedy: the node from the
largest remaining leaf group goes first (so the big groups are not left to pair among
themselves), its partner is the farthest remaining node (largest group, then inventory order, on
ties). With an odd count the last node is paired again with the farthest node already paired,
in a second round, so no node runs two jobs at once.

Bisection. A failed run names a group, not a node. ``bisect`` splits a failed group in halves
and runs each half (a single node with a known-good partner), recursing into the halves that
fail; when both halves pass the fault is between them (a cable or switch on their path) and the
group stays unresolved. ``probes`` and ``culprits`` are the one-level form the playbook runs:
each node of a failed pair is run again with a node from a pair that passed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

# How far apart two nodes are, by what their traffic crosses.
SAME_LEAF = "leaf"  # the same leaves: only the leaf switches
SHARED_LEAF = "shared-leaf"  # some leaves in common (multi-homed nodes)
SPINE = "spine"  # disjoint leaves: up to the spines and back
CORE = "core"  # different pods of a three-tier fabric: through the core
_DISTANCE = {SAME_LEAF: 0, SHARED_LEAF: 1, SPINE: 2, CORE: 3}


@dataclass(frozen=True)
class Placement:
    """Where a node is cabled: its leaves (or dragonfly routers) on the fabric NCCL uses, in rail
    order, and its pod (three-tier fat tree) or dragonfly group; None where there is none."""

    host: str
    leaves: tuple[str, ...] = ()
    pod: int | None = None

    @property
    def key(self) -> tuple[str, ...]:
        return self.leaves


def crossing(a: Placement, b: Placement) -> str:
    """What the traffic between two nodes crosses: leaf, shared-leaf, spine or core."""
    if a.pod is not None and b.pod is not None and a.pod != b.pod:
        return CORE
    if a.leaves == b.leaves:
        return SAME_LEAF
    if set(a.leaves) & set(b.leaves):
        return SHARED_LEAF
    return SPINE


def distance(a: Placement, b: Placement) -> int:
    return _DISTANCE[crossing(a, b)]


@dataclass
class PairPlan:
    """rounds: lists of disjoint pairs, run one round after the other; pairs: all of them."""

    rounds: list[list[tuple[str, str]]] = field(default_factory=list)
    crossings: dict[str, str] = field(default_factory=dict)  # "a+b" -> crossing
    unpaired: list[str] = field(default_factory=list)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [pair for round_ in self.rounds for pair in round_]

    def as_dict(self) -> dict:
        return {
            "rounds": [[list(pair) for pair in round_] for round_ in self.rounds],
            "pairs": [list(pair) for pair in self.pairs],
            "crossings": dict(self.crossings),
            "unpaired": list(self.unpaired),
        }


def pair_key(pair: Sequence[str]) -> str:
    return "+".join(pair)


def select_pairs(nodes: Sequence[Placement]) -> PairPlan:
    """Pair every node once with the farthest node available (see the module docstring)."""
    order = {node.host: i for i, node in enumerate(nodes)}
    if len(order) != len(nodes):
        raise ValueError("a host is listed twice")
    groups: dict[tuple[str, ...], list[Placement]] = {}
    for node in nodes:
        groups.setdefault(node.key, []).append(node)
    plan = PairPlan()
    first: list[tuple[str, str]] = []
    paired: list[Placement] = []

    def remaining() -> int:
        return sum(len(g) for g in groups.values())

    while remaining() >= 2:
        # The largest group leads; ties go to the group whose first node comes first.
        lead_key = max((k for k in groups if groups[k]), key=lambda k: (len(groups[k]), -order[groups[k][0].host]))
        a = groups[lead_key].pop(0)
        candidates = [g[0] for g in groups.values() if g]
        b = max(candidates, key=lambda n: (distance(a, n), len(groups[n.key]), -order[n.host]))
        groups[b.key].remove(b)
        first.append((a.host, b.host))
        plan.crossings[pair_key((a.host, b.host))] = crossing(a, b)
        paired += [a, b]
    if first:
        plan.rounds.append(first)
    left = [n for g in groups.values() for n in g]
    if left and paired:
        a = left[0]
        b = max(paired, key=lambda n: (distance(a, n), -order[n.host]))
        plan.rounds.append([(a.host, b.host)])
        plan.crossings[pair_key((a.host, b.host))] = crossing(a, b)
    elif left:
        plan.unpaired.append(left[0].host)
    return plan


def schedule(pairs: Iterable[Sequence[str]]) -> list[list[tuple[str, str]]]:
    """Rounds of pairs in which no node appears twice, pairs kept in order (first fit)."""
    rounds: list[list[tuple[str, str]]] = []
    busy: list[set[str]] = []
    for pair in pairs:
        a, b = pair
        for index, nodes in enumerate(busy):
            if a not in nodes and b not in nodes:
                rounds[index].append((a, b))
                nodes.update((a, b))
                break
        else:
            rounds.append([(a, b)])
            busy.append({a, b})
    return rounds


def probes(
    failed: Iterable[Sequence[str]], good: Sequence[str], placements: dict[str, Placement] | None = None
) -> list[list[tuple[str, str]]]:
    """Rounds of (suspect, good node) runs for every node of the failed pairs.

    Each suspect gets the good node farthest from it (so the probe crosses the same tiers as the
    failed run), spreading over the good nodes; none when there is no good node."""
    placements = placements or {}
    suspects = list(dict.fromkeys(host for pair in failed for host in pair))
    good = [host for host in good if host not in suspects]
    if not good:
        return []
    use = dict.fromkeys(good, 0)
    runs = []
    for suspect in suspects:
        here = placements.get(suspect, Placement(suspect))

        def rank(host: str, here: Placement = here) -> tuple:
            there = placements.get(host, Placement(host))
            return (-distance(here, there) if placements else 0, use[host], good.index(host))

        partner = min(good, key=rank)
        use[partner] += 1
        runs.append((suspect, partner))
    return schedule(runs)


@dataclass
class Verdict:
    culprits: list[str] = field(default_factory=list)  # failed with a known-good partner as well
    cleared: list[str] = field(default_factory=list)  # passed with a known-good partner
    unresolved: list[list[str]] = field(default_factory=list)  # groups whose fault is between members
    untested: list[str] = field(default_factory=list)  # suspects no probe ran for (no good node)

    def as_dict(self) -> dict:
        return {
            "culprits": list(self.culprits),
            "cleared": list(self.cleared),
            "unresolved": [list(g) for g in self.unresolved],
            "untested": list(self.untested),
        }


def culprits(failed: Iterable[Sequence[str]], probe_results: dict[str, bool]) -> Verdict:
    """From the failed pairs and {suspect: probe passed}, the nodes to blame.

    A suspect whose probe failed is a culprit, one whose probe passed is cleared; a failed pair
    whose two nodes were both cleared failed on the path between them (unresolved)."""
    verdict = Verdict()
    for pair in failed:
        members = list(pair)
        states = [probe_results.get(host) for host in members]
        for host, passed in zip(members, states, strict=True):
            if passed is None:
                if host not in verdict.untested:
                    verdict.untested.append(host)
            elif passed:
                if host not in verdict.cleared:
                    verdict.cleared.append(host)
            elif host not in verdict.culprits:
                verdict.culprits.append(host)
        if all(passed is True for passed in states):
            verdict.unresolved.append(members)
    verdict.cleared = [h for h in verdict.cleared if h not in verdict.culprits]
    return verdict


@dataclass
class Bisection:
    culprits: list[str] = field(default_factory=list)
    unresolved: list[list[str]] = field(default_factory=list)
    runs: list[list[str]] = field(default_factory=list)  # every group run, in order


def bisect(group: Sequence[str], run: Callable[[list[str]], bool], good: str | None = None) -> Bisection:
    """Name the culprits of a failed group run by halving the group.

    run(nodes) runs the test on those nodes and returns True when it passes. A single node is run
    with the known-good node `good` when one is given (a one-node NCCL run crosses no network),
    else alone. The group itself is assumed to have failed; it is not run again."""
    found = Bisection()

    def test(nodes: list[str]) -> bool:
        members = [nodes[0], good] if len(nodes) == 1 and good is not None and nodes[0] != good else list(nodes)
        found.runs.append(members)
        return run(members)

    def search(nodes: list[str]) -> None:
        if len(nodes) == 1:
            if nodes[0] not in found.culprits:
                found.culprits.append(nodes[0])
            return
        half = len(nodes) // 2
        left, right = nodes[:half], nodes[half:]
        failing = [part for part in (left, right) if not test(part)]
        if not failing:
            found.unresolved.append(list(nodes))
        for part in failing:
            search(part)

    search(list(dict.fromkeys(group)))
    return found
