"""expectation_keys: values checked against a key table, and command-line text typed by it."""

from __future__ import annotations

import pytest
from ansible.module_utils.expectation_keys import ExpectationError, Key, from_text, validate

TABLE = {
    "count": Key(("int",), "how many"),
    "rate": Key(("float", "dict"), "Gb/s, or per device"),
    "layer": Key(("dict", "str"), "a name, or per device"),
    "switch": Key(("bool",), "switched"),
    "names": Key(("list",), "devices"),
    "generation": Key(("int",), "with switch only", requires=("switch",)),
}


def test_values_of_the_keys_types_pass():
    validate("t", TABLE, {"count": 8, "rate": 400, "layer": {"a": "IB"}, "switch": False, "names": ("a",)})
    validate("t", TABLE, {"rate": 400.5, "layer": "IB", "generation": 4, "switch": True})


@pytest.mark.parametrize(
    "expected,match",
    [
        ({"speed": 1}, "speed: t reads no such key; its keys: count, generation, layer, names, rate, switch"),
        ({"count": True}, "t: count must be int, got True"),  # a bool is no count
        ({"count": 8.0}, "count must be int"),
        ({"rate": "400"}, "rate must be float or dict"),
        ({"switch": 1}, "switch must be bool"),
        ({"names": "a,b"}, "names must be list"),
        ({"generation": 4}, "generation is read only with switch set"),
        ({"generation": 4, "switch": False}, "generation is read only with switch set"),
    ],
)
def test_other_keys_and_types_are_refused(expected: dict, match: str):
    with pytest.raises(ExpectationError, match=match):
        validate("t", TABLE, expected)


@pytest.mark.parametrize(
    "key,text,value",
    [
        ("count", "8", 8),
        ("rate", "400", 400.0),
        ("rate", '{"mlx5_0": 400}', {"mlx5_0": 400}),
        ("layer", "infiniband", "infiniband"),
        ("layer", '{"mlx5_0": "Ethernet"}', {"mlx5_0": "Ethernet"}),
        ("switch", "yes", True),
        ("switch", "False", False),
        ("names", "a, b,", ["a", "b"]),
        ("names", '["a"]', ["a"]),
    ],
)
def test_text_is_typed_by_the_table(key: str, text: str, value):
    assert from_text("t", TABLE, key, text) == value


@pytest.mark.parametrize(
    "key,text,match",
    [
        ("count", "8.5", "count must be int, got '8.5'"),
        ("switch", "maybe", "switch must be bool"),
        ("rate", "[400]", "rate must be float or dict"),
        ("other", "1", "other: t reads no such key"),
    ],
)
def test_text_of_another_type_is_refused(key: str, text: str, match: str):
    with pytest.raises(ExpectationError, match=match):
        from_text("t", TABLE, key, text)


def test_a_key_names_known_types_only():
    with pytest.raises(ValueError, match="Key types must be some of"):
        Key(("number",), "no such type")
