"""Scenarios for the sticky assignor (families of Kafka's AbstractStickyAssignorTest)."""
from __future__ import annotations

import random

import pytest

from kgroup.assignors import get_assignor
from kgroup.assignors.sticky import StickyAssignor
from kgroup.values import Subscription, TopicPartition as TP
from kgroup.wire.sticky_user_data import encode_sticky_user_data
from assignors_sticky_helpers import assert_balanced, assert_valid, moved, owned_subs, sizes


@pytest.fixture
def sticky():
    return StickyAssignor()


def sub(*topics, owned=(), gen=1, rack=None, instance=None):
    return Subscription(
        topics=topics, owned_partitions=owned, generation_id=gen, rack_id=rack, group_instance_id=instance
    )


def parts(result, member):
    return list(result[member].partitions)


def test_registered_by_name():
    a = get_assignor("sticky")
    assert isinstance(a, StickyAssignor) and a.name == "sticky"


def test_one_consumer_no_topics(sticky):
    assert parts(sticky.assign({}, {"c": sub()}), "c") == []
    assert parts(sticky.assign({"t": 3}, {"c": sub()}), "c") == []


def test_one_consumer_nonexistent_topic(sticky):
    assert parts(sticky.assign({}, {"c": sub("t")}), "c") == []


def test_one_consumer_multiple_topics(sticky):
    r = sticky.assign({"t1": 1, "t2": 2}, {"c": sub("t1", "t2")})
    assert parts(r, "c") == [TP("t1", 0), TP("t2", 0), TP("t2", 1)]


def test_two_consumers_one_topic_one_partition(sticky):
    r = sticky.assign({"t": 1}, {"c1": sub("t"), "c2": sub("t")})
    assert sorted(sizes(r).values()) == [0, 1]


def test_two_consumers_one_topic_two_partitions(sticky):
    r = sticky.assign({"t": 2}, {"c1": sub("t"), "c2": sub("t")})
    assert sizes(r) == {"c1": 1, "c2": 1}


def test_empty_group(sticky):
    assert sticky.assign({"t": 3}, {}) == {}


def test_member_subscribing_nothing_among_others(sticky):
    subs = {"a": sub("t"), "b": sub(), "c": sub("t")}
    r = sticky.assign({"t": 4}, subs)
    assert_valid({"t": 4}, subs, r)
    assert sizes(r) == {"a": 2, "b": 0, "c": 2}


@pytest.mark.parametrize("members,partitions", [(3, 10), (7, 100), (10, 3), (4, 4), (6, 61)])
def test_quotas_uneven_counts(sticky, members, partitions):
    ppt = {"x": partitions // 2, "y": partitions - partitions // 2}
    subs = {f"m{i}": sub("x", "y") for i in range(members)}
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert_balanced(ppt, subs, r)


def test_sticky_on_member_removal_moves_only_its_partitions(sticky):
    ppt = {f"t{i}": 50 for i in range(4)}
    subs = {f"m{i}": sub(*ppt) for i in range(7)}
    first = sticky.assign(ppt, subs)
    del subs["m3"]
    second = sticky.assign(ppt, owned_subs(first, subs))
    assert_valid(ppt, subs, second)
    assert_balanced(ppt, subs, second)
    assert moved(first, second) == set()  # nothing moved between survivors
    for m in subs:
        assert set(first[m].partitions) <= set(second[m].partitions)


def test_sticky_on_member_added_moves_only_its_quota(sticky):
    ppt = {"t": 40}
    subs = {f"m{i}": sub("t") for i in range(4)}
    first = sticky.assign(ppt, subs)
    subs = owned_subs(first, subs)
    subs["new"] = sub("t")
    second = sticky.assign(ppt, subs)
    assert_balanced(ppt, subs, second)
    assert len(second["new"].partitions) == 8
    # Exactly the new member's 8 partitions changed owner; survivors only shrank.
    assert len(moved(first, second)) == 8
    for m in first:
        assert set(second[m].partitions) <= set(first[m].partitions)


def test_thousand_members_one_leaves_only_its_partitions_move(sticky):
    ppt = {f"t{i}": 1000 for i in range(10)}
    subs = {f"m{i:04d}": sub(*ppt) for i in range(1000)}
    first = sticky.assign(ppt, subs)
    leaver = "m0500"
    del subs[leaver]
    second = sticky.assign(ppt, owned_subs(first, subs))
    assert_valid(ppt, subs, second)
    assert_balanced(ppt, subs, second)
    changed = {tp for m in subs for tp in set(second[m].partitions) - set(first[m].partitions)}
    assert changed == set(first[leaver].partitions)


def test_non_identical_subscriptions_balance_as_allowed(sticky):
    # Java's example 2: C0 -> t0, C1 -> t0,t1, C2 -> t0,t1,t2 with 1, 2, 3 partitions.
    ppt = {"t0": 1, "t1": 2, "t2": 3}
    subs = {"c0": sub("t0"), "c1": sub("t0", "t1"), "c2": sub("t0", "t1", "t2")}
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert_balanced(ppt, subs, r)
    assert sizes(r) == {"c0": 1, "c1": 2, "c2": 3}
    # C0 leaves: C1 and C2 keep everything they had.
    del subs["c0"]
    r2 = sticky.assign(ppt, owned_subs(r, subs))
    assert_valid(ppt, subs, r2)
    assert_balanced(ppt, subs, r2)
    assert set(r["c1"].partitions) <= set(r2["c1"].partitions)
    assert set(r["c2"].partitions) <= set(r2["c2"].partitions)


def test_non_identical_one_topic_each_plus_shared(sticky):
    ppt = {"a": 6, "b": 6, "shared": 12}
    subs = {"x": sub("a", "shared"), "y": sub("b", "shared"), "z": sub("shared")}
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert_balanced(ppt, subs, r)
    assert sizes(r) == {"x": 8, "y": 8, "z": 8}


def test_topic_added_keeps_existing(sticky):
    ppt = {"t1": 6}
    subs = {"a": sub("t1", "t2"), "b": sub("t1", "t2")}
    first = sticky.assign(ppt, subs)
    ppt = {"t1": 6, "t2": 4}
    second = sticky.assign(ppt, owned_subs(first, subs))
    assert_valid(ppt, subs, second)
    assert_balanced(ppt, subs, second)
    assert moved(first, second) == set()


def test_topic_deleted_drops_its_partitions(sticky):
    ppt = {"t1": 6, "t2": 6}
    subs = {"a": sub("t1", "t2"), "b": sub("t1", "t2")}
    first = sticky.assign(ppt, subs)
    ppt = {"t1": 6}
    second = sticky.assign(ppt, owned_subs(first, subs))
    assert_valid(ppt, subs, second)
    assert_balanced(ppt, subs, second)
    assert all(tp.topic == "t1" for a in second.values() for tp in a.partitions)


def test_unsubscribed_topic_claims_dropped(sticky):
    ppt = {"t1": 4, "t2": 4}
    subs = {"a": sub("t1", owned=[TP("t2", 0), TP("t1", 0)]), "b": sub("t1", "t2")}
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert TP("t1", 0) in r["a"].partitions


def test_partition_count_shrunk_claims_dropped(sticky):
    ppt = {"t": 2}
    subs = {"a": sub("t", owned=[TP("t", 0), TP("t", 5)]), "b": sub("t")}
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert parts(r, "a") == [TP("t", 0)]


def test_stale_generation_claim_ignored(sticky):
    ppt = {"t": 4}
    # b claims t-0 in a newer generation than a: b keeps it.
    subs = {
        "a": sub("t", owned=[TP("t", 0), TP("t", 1)], gen=1),
        "b": sub("t", owned=[TP("t", 0), TP("t", 2)], gen=2),
    }
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert TP("t", 0) in r["b"].partitions and TP("t", 2) in r["b"].partitions
    assert TP("t", 1) in r["a"].partitions


def test_same_generation_conflict_neither_keeps_by_claim(sticky):
    ppt = {"t": 3}
    subs = {
        "a": sub("t", owned=[TP("t", 0), TP("t", 1)], gen=3),
        "b": sub("t", owned=[TP("t", 0), TP("t", 2)], gen=3),
        "c": sub("t", gen=3),
    }
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    # The contested partition is unassigned-by-claim, so the empty member gets it.
    assert parts(r, "c") == [TP("t", 0)]
    assert parts(r, "a") == [TP("t", 1)] and parts(r, "b") == [TP("t", 2)]


def test_duplicate_claim_within_one_member(sticky):
    ppt = {"t": 2}
    subs = {"a": sub("t", owned=[TP("t", 0), TP("t", 0)]), "b": sub("t")}
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert parts(r, "a") == [TP("t", 0)]


def test_general_path_generation_conflict():
    ppt = {"t": 4, "u": 2}
    subs = {
        "a": sub("t", "u", owned=[TP("t", 0), TP("t", 1)], gen=2),
        "b": sub("t", owned=[TP("t", 0), TP("t", 2)], gen=2),
        "c": sub("t", "u", owned=[TP("t", 1)], gen=1),
    }
    r = StickyAssignor().assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert_balanced(ppt, subs, r)
    assert TP("t", 1) in r["a"].partitions and TP("t", 2) in r["b"].partitions


def test_static_members_keep_partitions_across_member_id_change(sticky):
    ppt = {"t": 12}
    subs = {f"m{i}": sub("t", instance=f"i{i}") for i in range(3)}
    first = sticky.assign(ppt, subs)
    # m1 restarts with a new member id but the same instance id and its owned partitions.
    nxt = owned_subs(first, subs)
    nxt["m1-new"] = nxt.pop("m1")
    second = sticky.assign(ppt, nxt)
    assert second["m1-new"].partitions == first["m1"].partitions
    assert second["m0"].partitions == first["m0"].partitions


def test_user_data_is_the_ownership_source_for_eager_sticky(sticky):
    ppt = {"t": 4}
    data_a = encode_sticky_user_data([TP("t", 2), TP("t", 3)], 5)
    subs = {
        "a": Subscription(topics=["t"], user_data=data_a),
        "b": Subscription(
            topics=["t"], user_data=sticky.subscription_user_data(["t"], [TP("t", 0), TP("t", 1)], 5)
        ),
    }
    r = sticky.assign(ppt, subs)
    assert parts(r, "a") == [TP("t", 2), TP("t", 3)]
    assert parts(r, "b") == [TP("t", 0), TP("t", 1)]


def test_user_data_generation_beats_older_claim(sticky):
    ppt = {"t": 2}
    subs = {
        "a": Subscription(topics=["t"], user_data=encode_sticky_user_data([TP("t", 0), TP("t", 1)], 4)),
        "b": Subscription(topics=["t"], user_data=encode_sticky_user_data([TP("t", 0)], 3)),
    }
    r = sticky.assign(ppt, subs)
    assert_valid(ppt, subs, r)
    assert sizes(r) == {"a": 1, "b": 1}
    assert TP("t", 0) in r["a"].partitions or TP("t", 1) in r["a"].partitions


def test_garbage_user_data_means_no_claim(sticky):
    subs = {"a": Subscription(topics=["t"], user_data=b"\xff\x00"), "b": Subscription(topics=["t"])}
    r = sticky.assign({"t": 2}, subs)
    assert_valid({"t": 2}, subs, r)


def test_rack_aware_prefers_local_replicas(sticky):
    ppt = {"t": 6}
    racks = {"t": [frozenset({f"r{p % 3}"}) for p in range(6)]}
    subs = {f"m{i}": sub("t", rack=f"r{i}") for i in range(3)}
    r = sticky.assign(ppt, subs, partition_racks=racks)
    assert_valid(ppt, subs, r)
    assert_balanced(ppt, subs, r)
    for i in range(3):
        assert all(tp.partition % 3 == i for tp in r[f"m{i}"].partitions)


def test_rack_aware_general_path_prefers_local_without_losing_balance(sticky):
    ppt = {"t": 6, "u": 2}
    racks = {"t": [frozenset({f"r{p % 2}"}) for p in range(6)], "u": [frozenset({"r0"}), frozenset({"r1"})]}
    subs = {"a": sub("t", "u", rack="r0"), "b": sub("t", "u", rack="r1"), "c": sub("t")}
    r = sticky.assign(ppt, subs, partition_racks=racks)
    assert_valid(ppt, subs, r)
    assert_balanced(ppt, subs, r)
    local = sum(
        1 for m in ("a", "b") for tp in r[m].partitions if subs[m].rack_id in racks[tp.topic][tp.partition]
    )
    assert local >= 4


def test_rack_info_absent_matches_plain_output(sticky):
    ppt = {"t": 7, "u": 5}
    subs = {f"m{i}": sub("t", "u") for i in range(3)}
    racks = {"t": [frozenset({"r0"})] * 7, "u": [frozenset({"r1"})] * 5}
    assert sticky.assign(ppt, subs, partition_racks=racks) == sticky.assign(ppt, subs)


def test_deterministic(sticky):
    ppt = {"t": 13, "u": 7}
    subs = {f"m{i}": sub("t", "u") if i % 2 else sub("t") for i in range(5)}
    assert sticky.assign(ppt, subs) == sticky.assign(ppt, dict(reversed(list(subs.items()))))


def _random_round(rng, members, topics):
    """Random membership change: join, leave or change subscription."""
    action = rng.random()
    if action < 0.35 or len(members) < 2:
        members[f"m{rng.randrange(10**6)}"] = rng.sample(topics, rng.randint(1, len(topics)))
    elif action < 0.7:
        del members[rng.choice(sorted(members))]
    else:
        members[rng.choice(sorted(members))] = rng.sample(topics, rng.randint(1, len(topics)))


@pytest.mark.parametrize("identical", [True, False])
def test_stickiness_over_100_random_rounds(sticky, identical):
    rng = random.Random(7 if identical else 11)
    ppt = {f"t{i}": rng.randint(1, 12) for i in range(5)}
    topics = sorted(ppt)
    members = {f"m{i}": topics for i in range(4)}
    previous = {}
    for round_no in range(100):
        if identical:
            if rng.random() < 0.5 or len(members) < 2:
                members[f"n{round_no}"] = topics
            else:
                del members[rng.choice(sorted(members))]
        else:
            _random_round(rng, members, topics)
        subs = {
            m: sub(*t, owned=previous[m].partitions if m in previous else (), gen=round_no)
            for m, t in members.items()
        }
        r = sticky.assign(ppt, subs)
        assert_valid(ppt, subs, r)
        assert_balanced(ppt, subs, r)
        if identical and previous:
            # Only-needed moves: a surviving member keeps min(its old count, its new size).
            for m in members:
                if m in previous:
                    kept = len(set(previous[m].partitions) & set(r[m].partitions))
                    assert kept == min(len(previous[m].partitions), len(r[m].partitions))
        previous = r


def test_owned_partitions_used_when_no_user_data(sticky):
    ppt = {"t": 4}
    subs = {"a": sub("t", owned=[TP("t", 3), TP("t", 2)]), "b": sub("t", owned=[TP("t", 0)])}
    r = sticky.assign(ppt, subs)
    assert parts(r, "a") == [TP("t", 2), TP("t", 3)]
    assert parts(r, "b") == [TP("t", 0), TP("t", 1)]


def test_rack_aware_trim_keeps_local_owned_partitions(sticky):
    ppt = {"t": 4}
    racks = {"t": [frozenset({"r0"}), frozenset({"r1"}), frozenset({"r0"}), frozenset({"r1"})]}
    # a (rack r0) owns everything; it keeps its two rack-local partitions.
    subs = {"a": sub("t", owned=[TP("t", p) for p in range(4)], rack="r0"), "b": sub("t", rack="r1")}
    r = sticky.assign(ppt, subs, partition_racks=racks)
    assert parts(r, "a") == [TP("t", 0), TP("t", 2)]
    assert parts(r, "b") == [TP("t", 1), TP("t", 3)]
