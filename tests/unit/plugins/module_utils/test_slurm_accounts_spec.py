"""The slurm_accounts planner's input checks and value rules (no database needed): what a wrong entry
is told, how durations, TRES lists and QoS lists compare with sacctmgr's printed form."""

from __future__ import annotations

import pytest
from ansible.module_utils.sacctmgr import duration_seconds, parse_table, parse_tres
from ansible.module_utils.slurm_accounts import SpecError, render, same, validate
from ansible.module_utils.verdicts import ParseError

from . import samples  # noqa: F401 (puts plugins/module_utils into ansible.module_utils)


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("60", 3600),
        ("1:30", 90),
        ("02:00:00", 7200),
        ("1-00:00:00", 86400),
        ("2-12", 216000),
        ("1-02:03", 93780),
        ("", None),
        ("-1", None),
        ("UNLIMITED", None),
    ],
)
def test_durations_in_every_slurm_form(text, seconds):
    assert duration_seconds(text) == seconds


def test_a_duration_that_is_not_one():
    with pytest.raises(ValueError, match="not a Slurm duration"):
        duration_seconds("1 day")


def test_tres_lists():
    assert parse_tres("cpu=10,gres/gpu=4") == {"cpu": 10, "gres/gpu": 4}
    assert parse_tres("") == {}
    with pytest.raises(ParseError, match="name=count"):
        parse_tres("gres/gpu")


@pytest.mark.parametrize(
    "kind,wanted,current,equal",
    [
        ("tres", {"gres/gpu": 2}, "gres/gpu=2", True),
        ("tres", {"gres/gpu": 2, "cpu": -1}, "gres/gpu=2", True),
        ("tres", {"gres/gpu": 2}, "cpu=8,gres/gpu=2", False),  # a declared mapping is the whole limit
        ("tres", {}, "", True),
        ("duration", "1-00:00:00", "1-00:00:00", True),
        ("duration", "24:00:00", "1-00:00:00", True),
        ("duration", None, "", True),
        ("list", ["normal", "low"], "low,normal", True),
        ("list", [], "", True),
        ("list", ["normal"], "low,normal", False),
        ("int", 0, "0", True),
        ("int", None, "", True),
        ("int", 5, "", False),
        ("float", 0.5, "0.500000", True),
        ("share", 100, "100", True),
        ("share", "parent", "parent", True),
        ("mode", "requeue", "requeue", True),
        ("mode", "REQUEUE", "cluster", False),
        ("text", "Machine learning", "Machine learning", True),
    ],
)
def test_declared_values_against_printed_ones(kind, wanted, current, equal):
    assert same(kind, wanted, current) is equal


def test_rendered_values_reset_what_the_declaration_leaves_out():
    assert render("tres", {"gres/gpu": 3}, "cpu=8,gres/gpu=2") == "cpu=-1,gres/gpu=3"
    assert render("tres", {"gres/gpu": None}, "gres/gpu=2") == "gres/gpu=-1"
    assert render("list", [], "low") == "''"
    assert render("list", ["normal", "high"], "") == "high,normal"
    assert render("duration", None, "02:00:00") == "-1"


@pytest.mark.parametrize(
    "lists,message",
    [
        ({"qos": {"name": "low"}}, r"^qos: expected a list of mappings, got dict"),
        ({"qos": [{"name": "Low"}]}, r"^qos\[0\]\.name: expected lower-case letters"),
        ({"qos": [{"name": "low", "prio": 1}]}, r"^qos\[0\] \(low\): unknown fields \['prio'\]"),
        ({"qos": [{"name": "low"}, {"name": "low"}]}, r"^qos\[1\] \(low\): declared twice"),
        ({"qos": [{"name": "low", "state": "gone"}]}, r"state: expected present or absent"),
        (
            {"qos": [{"name": "low", "preempt_mode": "kill"}]},
            r"^qos\[0\] \(low\)\.preempt_mode: expected one of cluster",
        ),
        ({"qos": [{"name": "low", "usage_factor": "half"}]}, r"usage_factor: expected a number"),
        ({"qos": [{"name": "low", "max_wall": "a week"}]}, r"max_wall: expected a Slurm duration"),
        (
            {"accounts": [{"name": "ml", "grp_tres": {"gres/gpu": "two"}}]},
            r"^accounts\[0\] \(ml\)\.grp_tres: expected a mapping",
        ),
        ({"accounts": [{"name": "ml", "grp_tres": "gres/gpu=2"}]}, r"grp_tres: expected a mapping of TRES name"),
        ({"accounts": [{"name": "ml", "fairshare": -3}]}, r"fairshare: expected a whole number of shares or 'parent'"),
        ({"accounts": [{"name": "ml", "description": "a|b"}]}, r"description: expected a non-empty one-line text"),
        ({"accounts": [{"name": "ml", "parent": "ml"}]}, r"parent: an account cannot be its own parent"),
        ({"users": [{"name": "bob"}]}, r"^users\[0\] \(bob\)\.accounts: expected a non-empty list"),
        (
            {"users": [{"name": "bob", "accounts": ["physics"], "default_account": "ml"}]},
            r"^users\[0\] \(bob\)\.default_account: 'ml' is not one of its accounts \['physics'\]",
        ),
    ],
)
def test_a_wrong_entry_is_named_with_its_field(lists, message):
    with pytest.raises(SpecError, match=message):
        validate(lists.get("qos"), lists.get("accounts"), lists.get("users"))


def test_a_user_s_default_account_is_its_first():
    spec = validate([], [], [{"name": "alice", "accounts": ["ml", "vision"]}])
    assert spec["users"][0]["default_account"] == "ml"
    assert validate(None, None, [{"name": "gone", "state": "absent"}])["users"][0]["state"] == "absent"


def test_a_table_with_other_columns_is_refused():
    with pytest.raises(ParseError, match=r"expected the header Name\|Priority, found 'Name\|Descr'"):
        parse_table("Name|Descr\nnormal|Normal QOS default\n", ["Name", "Priority"])
    with pytest.raises(ParseError, match="line 2: expected 2 columns"):
        parse_table("Name|Priority\nnormal|0|x\n", ["Name", "Priority"])
    with pytest.raises(ParseError, match="empty output"):
        parse_table("", ["Name", "Priority"])
