"""The expectation keys a judge reads, with their types: one table per judge, beside the judge.

A table maps each key to a Key: the value types it takes, what it means, and the keys it is read
only together with (nvlink_generation gives a link count only on NVSwitch boards). The node modules'
options are checked against the tables by a test, ``clusterforge check judge`` types ``--expect``
values by them and refuses keys outside them, and docs/validation.md's table of kinds and keys is
generated from them. Adding a key to a judge is one entry in its table.

Types are the names Ansible argument specs use: int, float, bool, str, list, dict. Stdlib only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

TYPES = ("int", "float", "bool", "str", "list", "dict")
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class ExpectationError(ValueError):
    """An expectation a judge cannot check: unknown key, wrong type, or not answerable by this output."""


@dataclass(frozen=True)
class Key:
    types: tuple  # of TYPES; the first that reads a command-line value wins, so "dict" before "str"
    meaning: str
    requires: tuple = ()  # keys without which this one is not read
    # The values a judge can judge against; out of range, a check would be skipped or pass on
    # nothing (a threshold of 0 or less, an NVLink generation with no reference).
    items: tuple = ()  # of TYPES: what every element of a list value must be
    above: float | None = None  # numbers must be greater than this
    minimum: float | None = None  # numbers must be this or more
    maximum: float | None = None  # numbers must be this or less
    choices: tuple = ()  # the only values allowed

    def __post_init__(self) -> None:
        unknown = [t for t in self.types + self.items if t not in TYPES]
        if unknown or not self.types:
            raise ValueError(f"Key types must be some of {TYPES}, got {self.types!r}")

    def allowed(self) -> str:
        """The range in words, e.g. "above 0 and at most 1"; empty when any value of the type goes."""
        if self.choices:
            return "one of " + ", ".join(str(choice) for choice in self.choices)
        parts = []
        if self.above is not None:
            parts.append(f"above {self.above:g}")
        if self.minimum is not None:
            parts.append(f"at least {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"at most {self.maximum:g}")
        return " and ".join(parts)

    def refuses(self, value: Any) -> bool:
        """True for a value of the right type outside the key's range."""
        if self.choices:
            return value not in self.choices
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        return (
            (self.above is not None and not value > self.above)
            or (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
        )


def _is(value: Any, type_name: str) -> bool:
    if type_name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "bool":
        return isinstance(value, bool)
    if type_name == "str":
        return isinstance(value, str)
    if type_name == "list":
        return isinstance(value, (list, tuple))
    return isinstance(value, dict)


def type_text(key: Key) -> str:
    return " or ".join(key.types)


def _key(what: str, table: dict, name: str) -> Key:
    key = table.get(name)
    if key is None:
        raise ExpectationError(f"{name}: {what} reads no such key; its keys: {', '.join(sorted(table)) or 'none'}")
    return key


def validate(what: str, table: dict, expected: dict) -> None:
    """Raise ExpectationError for a key the table does not hold, a value of another type, or a key
    given without the keys it is read with. ``what`` names the judge or kind in the message."""
    for name, value in expected.items():
        key = _key(what, table, name)
        if not any(_is(value, t) for t in key.types):
            raise ExpectationError(f"{what}: {name} must be {type_text(key)}, got {value!r}")
        if not _finite(value):
            raise ExpectationError(f"{what}: {name} must be a finite number, not NaN or infinity, got {value!r}")
        if key.items and _is(value, "list"):
            wrong = [item for item in value if not any(_is(item, t) for t in key.items)]
            if wrong:
                raise ExpectationError(
                    f"{what}: {name} must be a list of {' or '.join(key.items)}, got {value!r} ({wrong[0]!r} is not)"
                )
        if key.refuses(value):
            raise ExpectationError(f"{what}: {name} must be {key.allowed()}, got {value!r}")
        # A required key counts as given unless absent, None or False (nvswitch=false); 0 is given,
        # so the judge can say that a zero threshold is wrong.
        missing = [other for other in key.requires if expected.get(other) is None or expected.get(other) is False]
        if missing:
            raise ExpectationError(f"{what}: {name} is read only with {', '.join(missing)} set ({key.meaning})")


def _finite(value: Any) -> bool:
    """False for NaN or an infinity anywhere in a value (json.loads and float() read NaN, Infinity, 1e999)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    return True


def _from_text(text: str, type_name: str) -> Any:
    """The value of one type written on a command line; ValueError when it is not one."""
    stripped = text.strip()
    if type_name == "str":
        return text
    if type_name == "int":
        return int(stripped)
    if type_name == "float":
        return float(stripped)
    if type_name == "bool":
        if stripped.lower() in _TRUE:
            return True
        if stripped.lower() in _FALSE:
            return False
        raise ValueError(stripped)
    if type_name == "list":
        if stripped.startswith("["):
            value = json.loads(stripped)
            if not isinstance(value, list):
                raise ValueError(stripped)
            return value
        return [item.strip() for item in stripped.split(",") if item.strip()]
    value = json.loads(stripped)
    if not isinstance(value, dict):
        raise ValueError(stripped)
    return value


def from_text(what: str, table: dict, name: str, text: str) -> Any:
    """A KEY=VALUE value typed by the table: text stays text for str keys ("12.10" is not 12.1),
    lists are comma-separated or JSON, dicts JSON."""
    key = _key(what, table, name)
    for type_name in key.types:
        try:
            return _from_text(text, type_name)
        except ValueError:  # json.JSONDecodeError is a ValueError too
            continue
    raise ExpectationError(f"{what}: {name} must be {type_text(key)}, got {text!r}")
