"""How a dragonfly shares its global ports between groups, worked out without building links.

Each group has a*h global ports for its g - 1 partner groups. When they do not divide evenly,
every pair gets the floor and the remainder r = a*h mod (g - 1) goes one more link at a time
to the pairs of a circulant graph on the groups (neighbours up to r // 2 steps round the
ring, plus the opposite group when r is odd), so every group cables all its ports. When
g*a*h is odd no pairing can: one group keeps one port free (spare_port_group)."""

from __future__ import annotations

from collections.abc import Iterator


def pair_links(a: int, h: int, g: int) -> Iterator[tuple[int, int, int]]:
    """(first, second, links) for every pair of groups, 0-based, first < second."""
    base, extra = divmod(a * h, g - 1)
    for first in range(g):
        for second in range(first + 1, g):
            yield first, second, base + _takes_extra(first, second, extra, g)


def spare_port_group(a: int, h: int, g: int) -> int | None:
    """The group (0-based) left with one uncabled global port, or None when every port is cabled."""
    return g - 1 if (g * a * h) % 2 else None


def _takes_extra(first: int, second: int, extra: int, g: int) -> bool:
    """Whether the pair is an edge of an `extra`-regular graph on the g groups (the last group
    one edge short when g and extra are both odd)."""
    step = second - first
    if min(step, g - step) <= extra // 2:
        return True
    if extra % 2 == 0:
        return False
    if g % 2 == 0:
        return step == g // 2  # a perfect matching of opposite groups
    # Odd g: the pairs (i, i + (g-1)/2) for i < (g-1)/2 match every group but the last.
    # Their distance (g-1)/2 exceeds extra // 2 (extra <= g - 2), so no pair gets two extras.
    return step == (g - 1) // 2 and second < g - 1
