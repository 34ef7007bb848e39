"""NCCL pair selection, bisection and the validation plan from topologies (pure functions)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterforge.topology import load
from clusterforge.validation import pairs as P
from clusterforge.validation.plan import cabling_host, placements, validation_plan
from tests.paths import PROJECT
from tests.paths import filters as filters_of

EXAMPLES = PROJECT / "inventories" / "examples"
LAB = PROJECT / "inventories" / "lab" / "lab.topology.yml"


def nodes(spec: dict[str, list[str]], pods: dict[str, int] | None = None) -> list[P.Placement]:
    """{leaf: [hosts]} -> placements, leaves in the given order."""
    pods = pods or {}
    return [P.Placement(h, (leaf,), pods.get(leaf)) for leaf, hosts in spec.items() for h in hosts]


def covered(plan: P.PairPlan) -> Counter:
    return Counter(host for pair in plan.pairs for host in pair)


def check_rounds(plan: P.PairPlan) -> None:
    for round_ in plan.rounds:
        hosts = [h for pair in round_ for h in pair]
        assert len(hosts) == len(set(hosts)), f"a node is in two pairs of one round: {round_}"


def test_two_leaves_pair_across_the_spine():
    plan = P.select_pairs(nodes({"leaf1": ["a", "b"], "leaf2": ["c", "d"]}))
    assert plan.rounds == [[("a", "c"), ("b", "d")]]
    assert set(plan.crossings.values()) == {P.SPINE}


def test_three_tier_prefers_other_pods():
    spec = {"l1": ["a", "b"], "l2": ["c", "d"], "l3": ["e", "f"], "l4": ["g", "h"]}
    plan = P.select_pairs(nodes(spec, pods={"l1": 1, "l2": 1, "l3": 2, "l4": 2}))
    assert set(plan.crossings.values()) == {P.CORE}
    assert covered(plan) == Counter("abcdefgh")


def test_a_big_group_is_spread_over_the_others():
    plan = P.select_pairs(nodes({"l1": ["a", "b", "c"], "l2": ["d"], "l3": ["e"], "l4": ["f"]}))
    assert set(plan.crossings.values()) == {P.SPINE}
    assert all({"a", "b", "c"} & set(pair) for pair in plan.pairs)


def test_odd_count_adds_a_second_round():
    plan = P.select_pairs(nodes({"l1": ["a", "b"], "l2": ["c", "d"], "l3": ["e"]}))
    assert len(plan.rounds) == 2 and len(plan.rounds[1]) == 1
    assert set(covered(plan)) == set("abcde")
    check_rounds(plan)


def test_one_leaf_pairs_on_the_leaf_and_one_node_is_unpaired():
    plan = P.select_pairs(nodes({"l1": ["a", "b", "c", "d"]}))
    assert set(plan.crossings.values()) == {P.SAME_LEAF}
    single = P.select_pairs(nodes({"l1": ["a"]}))
    assert (single.rounds, single.unpaired) == ([], ["a"])
    assert P.select_pairs([]).as_dict() == {"rounds": [], "pairs": [], "crossings": {}, "unpaired": []}


def test_multi_homed_nodes_prefer_disjoint_leaves():
    a = P.Placement("a", ("l1", "l2"))
    b = P.Placement("b", ("l2", "l3"))
    c = P.Placement("c", ("l3", "l4"))
    d = P.Placement("d", ("l1", "l2"))
    assert P.crossing(a, b) == P.SHARED_LEAF and P.crossing(a, c) == P.SPINE and P.crossing(a, d) == P.SAME_LEAF
    plan = P.select_pairs([a, b, c, d])
    assert ("a", "c") in plan.pairs or ("c", "a") in plan.pairs


def test_duplicate_hosts_are_refused():
    with pytest.raises(ValueError, match="twice"):
        P.select_pairs([P.Placement("a"), P.Placement("a")])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=12))
def test_every_node_is_paired_and_no_node_runs_twice_at_once(sizes):
    spec = {f"leaf{i}": [f"n{i}-{j}" for j in range(size)] for i, size in enumerate(sizes)}
    everyone = [h for hosts in spec.values() for h in hosts]
    plan = P.select_pairs(nodes(spec))
    check_rounds(plan)
    if len(everyone) >= 2:
        assert set(covered(plan)) == set(everyone)
        assert len(plan.pairs) == (len(everyone) + 1) // 2
        assert len(plan.rounds) <= 2
        # When no leaf holds more than half the nodes, every pair crosses the spine.
        if max(sizes) * 2 <= len(everyone):
            assert set(plan.crossings.values()) == {P.SPINE}
    else:
        assert plan.unpaired == everyone


def test_schedule_keeps_nodes_apart():
    assert P.schedule([("a", "b"), ("a", "c"), ("d", "e"), ("b", "c")]) == [
        [("a", "b"), ("d", "e")],
        [("a", "c")],
        [("b", "c")],
    ]


def test_probes_pair_each_suspect_with_the_farthest_good_node():
    where = {p.host: p for p in nodes({"l1": ["a", "b"], "l2": ["c", "d"]})}
    rounds = P.probes([("a", "c")], ["b", "d"], where)
    assert rounds == [[("a", "d"), ("c", "b")]]
    # More suspects than good nodes: the good node is reused in a later round.
    rounds = P.probes([("a", "c"), ("b", "e")], ["d"])
    assert [len(r) for r in rounds] == [1, 1, 1, 1]
    assert P.probes([("a", "c")], []) == []


def test_culprits_from_probes():
    failed = [("a", "c"), ("b", "d"), ("e", "f")]
    verdict = P.culprits(failed, {"a": True, "c": False, "b": True, "d": True})
    assert verdict.as_dict() == {
        "culprits": ["c"],
        "cleared": ["a", "b", "d"],
        "unresolved": [["b", "d"]],  # both good alone: the path between them is at fault
        "untested": ["e", "f"],
    }


def fault(bad: set[str], link: frozenset[str] = frozenset()):
    """A run fails when it includes a bad node, or both ends of a bad link."""
    runs = []

    def run(group: list[str]) -> bool:
        runs.append(group)
        return not (set(group) & bad or (link and link <= set(group)))

    return run, runs


@pytest.mark.parametrize(
    "bad,expect",
    [({"n3"}, ["n3"]), ({"n2", "n6"}, ["n2", "n6"]), ({"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}, None)],
)
def test_bisect_names_bad_nodes(bad, expect):
    group = [f"n{i}" for i in range(8)]
    run, runs = fault(bad)
    found = P.bisect(group, run, good="g")
    assert found.culprits == (expect if expect is not None else group)
    assert not found.unresolved
    if len(bad) == 1:
        assert len(runs) <= 2 * 3  # two runs per level, log2(8) levels
    assert all(r == [r[0], "g"] for r in runs if len(r) == 2 and "g" in r)


def test_bisect_leaves_a_link_fault_unresolved():
    run, _ = fault(set(), frozenset({"n1", "n5"}))
    found = P.bisect([f"n{i}" for i in range(8)], run, good="g")
    assert found.culprits == []
    assert found.unresolved == [[f"n{i}" for i in range(8)]]


def test_bisect_a_failed_pair_with_a_good_partner():
    run, runs = fault({"b"})
    found = P.bisect(["a", "b"], run, good="g")
    assert (found.culprits, runs) == (["b"], [["a", "g"], ["b", "g"]])


def test_bisection_in_rounds_names_one_bad_node_among_sixteen_in_four():
    group = [f"n{i:02d}" for i in range(16)]
    found = P.Bisection.of_failed(group)
    assert found.depth == 4  # ceil(log2(16))
    while found.open:
        runs = found.next_round()
        assert len({node for run in runs for node in run}) == sum(len(run) for run in runs)  # no node twice
        found.record({run[0]: "n11" not in run for run in runs})
    # n08-n15 fail, then n08-n11, then n10+n11, then n11 with a cleared partner.
    assert [len(r) for r in found.rounds] == [2, 2, 2, 2]
    assert found.rounds[2] == [["n08", "n09"], ["n10", "n11"]]
    assert found.rounds[3] == [["n10", "n00"], ["n11", "n01"]]  # the first cleared nodes, one each
    assert (found.culprits, found.unresolved) == (["n11"], [])
    assert "n11" not in found.cleared and set(found.cleared) == set(group) - {"n11"}


def test_bisection_survives_plain_data_and_merges_into_the_verdict():
    found = P.Bisection.of_failed(["a", "b", "c", "d"])
    found.next_round()
    again = P.Bisection.from_dict(json.loads(json.dumps(found.as_dict())))
    assert again == found
    again.record({"a": True, "c": False})
    pairs_verdict = {"culprits": ["x"], "cleared": ["a"], "unresolved": [["p", "q"]], "untested": []}
    assert P.with_bisection(pairs_verdict, again.as_dict()) == {
        "culprits": ["x"],
        "cleared": ["a", "b"],
        "unresolved": [["p", "q"]],
        "untested": [],
    }
    assert P.Bisection.of_failed([]).depth == 0


def test_bisect_filter_drives_the_rounds_from_records(filters):
    bisect = filters["clusterforge_validation_bisect"]
    state = bisect(["a", "b", "c", "d"], None, ["g"])
    assert (state["next"], state["depth"]) == ([["a", "b"], ["c", "d"]], 2)
    records = [  # nccl_check records of the round, as the hosts that led them keep them
        {"module": "nccl_check", "hosts": ["a", "b"], "status": "pass"},
        {"module": "nccl_check", "hosts": ["c", "d"], "status": "fail"},
        {"module": "nccl_check", "hosts": ["a", "b", "c", "d"], "status": "fail"},  # not of this round
    ]
    state = bisect(state, records, ["g"])
    assert (state["next"], state["open"]) == ([["c", "g"], ["d", "a"]], [["c", "d"]])
    state = bisect(state, [*records, {"hosts": ["c", "g"], "status": "pass"}, {"hosts": ["d", "a"], "status": "fail"}])
    assert (state["next"], state["culprits"], state["depth"]) == ([], ["d"], 0)
    assert bisect([], None, ["g"])["next"] == []  # the run passed: nothing to bisect


# --- the plan from real topologies -------------------------------------------------------------


def test_superpod_pairs_cross_scalable_units():
    plan = load(EXAMPLES / "h100-superpod.topology.yml", links=False)
    found = validation_plan(plan)
    assert found["nccl_fabric"] == "compute"
    assert len(found["gpu_hosts"]) == 127
    pairs = found["pairs"]
    assert [len(r) for r in pairs["rounds"]] == [63, 1]
    assert set(pairs["crossings"].values()) == {P.SPINE}
    unit = {h.name: h.unit for h in plan.hosts}
    assert all(unit[a] != unit[b] for a, b in pairs["pairs"])
    # Head nodes have no HCA; the UFM fabric manager (role management) is the first host that has one.
    assert found["cabling"] == {"host": "ufm01", "fabric": "compute"}
    assert plan.expectations(plan.host("dgx001")).as_dict() | {
        "hca_rates": None,
        "link_layers": None,
        "rail_hcas": None,
        "hca_gpus": None,
    } == {
        "gpus": 8,
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "nvlink_generation": 4,
        "nvswitch": True,
        "hca_rates": None,
        "link_layers": None,
        "rail_hcas": None,
        "hca_gpus": None,
        "rails": 8,
        "nic_rate_gbps": 400,
    }
    assert plan.expectations(plan.host("head01")).gpus == 0


def test_plan_is_limited_to_the_given_hosts():
    plan = load(EXAMPLES / "h100-superpod.topology.yml", links=False)
    found = validation_plan(plan, ["head01", "dgx001", "dgx002", "dgx040"])
    assert found["gpu_hosts"] == ["dgx001", "dgx002", "dgx040"]
    assert found["pairs"]["pairs"] == [["dgx001", "dgx040"], ["dgx002", "dgx040"]]
    assert found["cabling"]["host"] == "dgx001"


def test_dragonfly_groups_act_as_pods():
    plan = load(EXAMPLES / "dragonfly-1k.topology.yml", links=False)
    where = placements(plan)
    assert {p.pod for p in where} == set(range(1, 1 + len({p.pod for p in where})))
    found = validation_plan(plan)
    assert set(found["pairs"]["crossings"].values()) == {P.CORE}


def test_lab_has_no_gpu_nodes_and_checks_cabling_from_the_head():
    plan = load(LAB, links=False)
    found = validation_plan(plan)
    assert (found["gpu_hosts"], found["pairs"]["pairs"]) == ([], [])
    # The model's InfiniBand fabric, from its first host with a port there (no device: the check skips).
    assert cabling_host(plan) == "head01"
    assert found["cabling"]["fabric"] == "ib"


# --- the filter plugin -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def filters():
    return filters_of("plugins/filter/validation.py")


def test_filters_plan_and_cabling(filters):
    superpod = str(EXAMPLES / "h100-superpod.topology.yml")
    assert filters["clusterforge_validation_plan"](superpod, ["dgx001", "dgx033"])["pairs"]["pairs"] == [
        ["dgx001", "dgx033"]
    ]
    assert filters["clusterforge_cabling_csv"](superpod).startswith("fabric,tier,source_device,")


def test_filter_errors_name_the_problem(filters, tmp_path):
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="cannot read the topology file"):
        filters["clusterforge_validation_plan"](str(tmp_path / "nope.topology.yml"))


def test_filters_for_rounds_and_bisection(filters):
    led_by = filters["clusterforge_validation_led_by"]
    assert led_by([["a", "b"], ["c", "d"]], "c") == ["c", "d"]
    assert led_by([["a", "b"]], "b") is None
    assert filters["clusterforge_validation_probes"]([["a", "c"]], ["b", "d"]) == [[["a", "b"], ["c", "d"]]]
    records = [
        {"module": "nccl_check", "hosts": ["a", "b"], "status": "pass"},
        {"module": "nccl_check", "hosts": ["c", "d"], "status": "fail"},
    ]
    assert filters["clusterforge_validation_culprits"]([["a", "c"]], records) == {
        "culprits": ["c"],
        "cleared": ["a"],
        "unresolved": [],
        "untested": [],
    }


def test_records_trim_registered_results(filters):
    records = filters["clusterforge_validation_records"]
    looped = {
        "results": [
            {"status": "pass", "checks": [], "label": "all_reduce", "invocation": {"module_args": {}}, "item": "x"},
            {"skipped": True, "skip_reason": "Conditional result was False"},
            {"failed": True, "msg": "MODULE FAILURE: boom"},
        ]
    }
    assert records(looped, "nccl_check", scope="node") == [
        {"module": "nccl_check", "scope": "node", "status": "pass", "checks": [], "label": "all_reduce"},
        {
            "module": "nccl_check",
            "scope": "node",
            "status": "fail",
            "msg": "MODULE FAILURE: boom",
            "error": "MODULE FAILURE: boom",
        },
    ]
    assert records({"skipped": True}, "cabling_check") == []
    assert records(None, "gpu_check") == []


def test_an_unreachable_run_is_no_record_and_gives_the_reason(filters):
    records, unreachable = filters["clusterforge_validation_records"], filters["clusterforge_validation_unreachable"]
    # What ansible-core registers when the connection fails (seen with ssh to a closed port).
    lost = {"unreachable": True, "changed": False, "msg": "Failed to connect to the host via ssh: Connection refused"}
    passed = {"status": "pass", "checks": []}
    assert records(lost, "gpu_check") == []
    assert records({"results": [passed, lost]}, "nccl_check") == [
        {"module": "nccl_check", "status": "pass", "checks": []}
    ]
    assert unreachable([passed, {}, {"results": [passed, lost]}]) == lost["msg"]
    assert unreachable([passed, lost]) == lost["msg"]
    assert unreachable([passed, {}, {"skipped": True}]) is None
