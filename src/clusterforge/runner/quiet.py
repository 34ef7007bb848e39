"""Python warnings that a dependency prints on every Ansible run and that a user can do nothing
about, silenced by name in the Ansible processes clusterforge starts. Each filter names the
warning's message, category and the dependency module it is attributed to, so any other warning
(ours above all, or the same one from elsewhere) still shows; a user's own PYTHONWARNINGS comes
after these filters and so takes precedence over them."""

from __future__ import annotations

from typing import NamedTuple


class Silenced(NamedTuple):
    message: str  # the start of the message (PYTHONWARNINGS matches it case-insensitively)
    category: str  # a built-in category: Python resolves it at startup without importing anything
    module: str  # the module the warning is attributed to, exactly


SILENCED = (
    # ansible-core (2.19 to 2.21) imports cryptography's DSA classes for its ssh-agent client as its
    # CLI starts; cryptography deprecates DSA with a CryptographyDeprecationWarning, a UserWarning,
    # so every ansible-playbook and ansible-inventory run printed it before anything else.
    Silenced("DSA is deprecated", "UserWarning", "ansible._internal._ssh._ssh_agent"),
)


def pythonwarnings(user: str | None) -> str:
    """PYTHONWARNINGS for an Ansible process: the filters above, then the user's own (later
    entries take precedence)."""
    ours = [f"ignore:{s.message}:{s.category}:{s.module}" for s in SILENCED]
    return ",".join([*ours, *([user] if user else [])])
