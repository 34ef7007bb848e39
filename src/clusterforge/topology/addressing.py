"""The address plan: which address each host gets in each subnet."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass


@dataclass(frozen=True)
class Subnet:
    name: str  # e.g. inband, oob, ipoib_rail1
    network: ipaddress.IPv4Network
    offset: int

    @property
    def capacity(self) -> int:
        """Usable host addresses from the offset up to (not including) broadcast."""
        return max(self.network.num_addresses - self.offset - 1, 0)

    def address(self, position: int) -> str:
        """The address of the host at 0-based `position` among the subnet's hosts."""
        # Plain integer formatting: ipaddress objects cost a second at 100,000 hosts.
        value = int(self.network.network_address) + self.offset + position
        return f"{value >> 24}.{(value >> 16) & 255}.{(value >> 8) & 255}.{value & 255}"


def overlapping(subnets: list[Subnet]) -> list[tuple[Subnet, Subnet]]:
    pairs = []
    ordered = sorted(subnets, key=lambda s: (int(s.network.network_address), s.network.prefixlen))
    for i, first in enumerate(ordered):
        for second in ordered[i + 1 :]:
            if int(second.network.network_address) > int(first.network.broadcast_address):
                break
            pairs.append((first, second))
    return pairs
