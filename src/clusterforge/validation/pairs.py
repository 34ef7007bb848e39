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

Bisection. A failed run names a group, not a node. ``Bisection`` splits a failed group in halves
and runs each half (a single node with a known-good partner), round after round, going on with
the halves that fail; when both halves pass the fault is between them (a cable or switch on their
path) and the group stays unresolved. The playbook runs it a round at a time on a failed run of
all its GPU nodes (``bisect`` runs it with a callback). ``probes`` and ``culprits`` are the
one-level form for the pairs: each node of a failed pair is run again with a node from a pair
that passed.
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
    """A bisection in rounds: every round runs both halves of each group known to fail (``open``),
    all at once (the halves are disjoint), and the failing halves are the next round's groups.

    A half of one node runs with a known-good partner (a node of a run that passed, or one given),
    else alone (a one-node NCCL run crosses no network). When both halves of a group pass, the
    fault is between them (a cable or switch on their path): the group stays unresolved. One bad
    node among N is named after ceil(log2(N)) rounds."""

    open: list[list[str]] = field(default_factory=list)  # failed groups to halve in the next round
    culprits: list[str] = field(default_factory=list)
    unresolved: list[list[str]] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)  # nodes of runs that passed
    runs: list[list[str]] = field(default_factory=list)  # every run, in order
    rounds: list[list[list[str]]] = field(default_factory=list)  # the runs of each round

    @classmethod
    def of_failed(cls, group: Sequence[str]) -> Bisection:
        """The bisection of a group whose run failed (it is not run again)."""
        members = list(dict.fromkeys(group))
        return cls(open=[members] if members else [])

    @property
    def depth(self) -> int:
        """Rounds still needed at most: ceil(log2) of the largest open group."""
        return max(((len(g) - 1).bit_length() for g in self.open), default=0)

    def as_dict(self) -> dict:
        return {
            "open": [list(g) for g in self.open],
            "culprits": list(self.culprits),
            "unresolved": [list(g) for g in self.unresolved],
            "cleared": list(self.cleared),
            "runs": [list(r) for r in self.runs],
            "rounds": [[list(r) for r in round_] for round_ in self.rounds],
        }

    @classmethod
    def from_dict(cls, data: dict) -> Bisection:
        return cls(**{name: [list(x) if isinstance(x, list) else x for x in data.get(name) or []] for name in FIELDS})

    def next_round(self, good: Sequence[str] = ()) -> list[list[str]]:
        """The runs of the next round (each led by its first node), added to rounds and runs."""
        parts = [half for group in self.open for half in _halves(group)]
        busy = {node for part in parts for node in part}
        pool = [node for node in dict.fromkeys([*good, *self.cleared]) if node not in busy]
        use = dict.fromkeys(pool, 0)
        runs = []
        for part in parts:
            if len(part) == 1 and pool:
                partner = min(pool, key=lambda node: (use[node], pool.index(node)))  # spread over the good nodes
                use[partner] += 1
                part = [part[0], partner]
            runs.append(list(part))
        if runs:
            self.rounds.append(runs)
            self.runs.extend(runs)
        return runs

    def record(self, passed: dict[str, bool]) -> None:
        """Take the outcomes of the last round's runs, {first node of the run: passed}, and open
        the failing halves; a run without an outcome counts as failed (it is not known to pass)."""
        runs = {run[0]: run for run in (self.rounds[-1] if self.rounds else [])}
        still_open = []
        for group in self.open:
            failing = []
            for half in _halves(group):
                if passed.get(half[0]):
                    self.cleared.extend(n for n in runs.get(half[0], half) if n not in self.cleared)
                else:
                    failing.append(half)
            if not failing:
                self.unresolved.append(list(group))
            for half in failing:
                if len(half) > 1:
                    still_open.append(half)
                elif half[0] not in self.culprits:
                    self.culprits.append(half[0])
        self.open = still_open
        self.cleared = [n for n in self.cleared if n not in self.culprits]


FIELDS = ("open", "culprits", "unresolved", "cleared", "runs", "rounds")


def _halves(group: Sequence[str]) -> list[list[str]]:
    half = len(group) // 2
    return [list(group[:half]), list(group[half:])]


def bisect(group: Sequence[str], run: Callable[[list[str]], bool], good: str | None = None) -> Bisection:
    """Name the culprits of a failed group run by halving the group, round after round.

    run(nodes) runs the test on those nodes and returns True when it passes; a single node runs
    with the known-good node `good` when one is given or a node cleared earlier, else alone. The
    group itself is assumed to have failed; it is not run again."""
    found = Bisection.of_failed(group)
    while found.open:
        runs = found.next_round([good] if good is not None else [])
        found.record({members[0]: run(members) for members in runs})
    return found


def with_bisection(verdict: dict, bisection: dict | None) -> dict:
    """The pairs' verdict (Verdict.as_dict) with a group bisection's culprits, cleared nodes and
    unresolved groups added."""
    found = Bisection.from_dict(bisection or {})
    culprits = list(dict.fromkeys([*verdict.get("culprits", []), *found.culprits]))
    cleared = [n for n in dict.fromkeys([*verdict.get("cleared", []), *found.cleared]) if n not in culprits]
    return {
        **verdict,
        "culprits": culprits,
        "cleared": cleared,
        "unresolved": [*verdict.get("unresolved", []), *found.unresolved],
    }
