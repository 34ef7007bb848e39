"""The share of global links between dragonfly groups, over every shape up to 40 ports a group."""

from __future__ import annotations

from collections import Counter

import pytest

from clusterforge.topology.dragonfly import pair_links, spare_port_group


@pytest.mark.parametrize("ports", range(1, 41))  # a*h global ports per group
def test_every_group_cables_its_ports_with_an_even_spread(ports):
    for g in range(2, ports + 2):  # up to a*h + 1 groups, the most the model accepts
        pairs = {(first, second): links for first, second, links in pair_links(ports, 1, g)}
        assert len(pairs) == g * (g - 1) // 2
        # floor and ceiling of ports / (g - 1), worked out without divmod
        low = max(n for n in range(ports + 1) if n * (g - 1) <= ports)
        high = min(n for n in range(ports + 1) if n * (g - 1) >= ports)
        assert set(pairs.values()) <= {low, high}, (ports, g)
        per_group = Counter()
        for (first, second), links in pairs.items():
            per_group[first] += links
            per_group[second] += links
        odd = g * ports % 2 == 1
        short = {group for group in range(g) if per_group[group] != ports}
        assert short == ({g - 1} if odd else set()), (ports, g)
        assert per_group[g - 1] == ports - odd
        assert spare_port_group(ports, 1, g) == (g - 1 if odd else None)
