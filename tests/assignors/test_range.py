"""RangeAssignor: Java RangeAssignorTest families, rack awareness, properties."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.range import RangeAssignor
from kgroup.testing.conformance import check_assignor, check_topic_balance, check_validity, random_group
from kgroup.values import Subscription, TopicPartition
from assignors_inputs import identical_group


def tps(topic, *numbers):
    return [TopicPartition(topic, n) for n in numbers]


def parts(result):
    return {m: list(a.partitions) for m, a in result.items()}


def reference_range(partitions_per_topic, subscriptions):
    """Textbook range: per topic, ordered subscribers take contiguous slices."""
    def key(m):
        iid = subscriptions[m].group_instance_id
        return (0, iid, m) if iid is not None else (1, m, "")

    out = {m: [] for m in subscriptions}
    topics = {t for s in subscriptions.values() for t in s.topics}
    for topic in sorted(topics):
        count = partitions_per_topic.get(topic, 0)
        members = sorted((m for m, s in subscriptions.items() if topic in s.topics), key=key)
        start = 0
        for i, m in enumerate(members):
            size = count // len(members) + (1 if i < count % len(members) else 0)
            out[m].extend(tps(topic, *range(start, start + size)))
            start += size
    return {m: sorted(v) for m, v in out.items()}


def test_one_consumer_no_topic_and_nonexistent_topic():
    r = RangeAssignor()
    assert parts(r.assign({"t": 3}, {"c": Subscription([])})) == {"c": []}
    assert parts(r.assign({}, {"c": Subscription(["t"])})) == {"c": []}


def test_only_assigns_partitions_from_subscribed_topics():
    result = RangeAssignor().assign({"t": 3, "other": 3}, {"c": Subscription(["t"])})
    assert parts(result) == {"c": tps("t", 0, 1, 2)}


def test_two_consumers_one_topic_three_partitions():
    result = RangeAssignor().assign({"t": 3}, {"c1": Subscription(["t"]), "c2": Subscription(["t"])})
    assert parts(result) == {"c1": tps("t", 0, 1), "c2": tps("t", 2)}


def test_multiple_consumers_mixed_topics():
    subs = {"c1": Subscription(["t1"]), "c2": Subscription(["t1", "t2"]), "c3": Subscription(["t1"])}
    result = RangeAssignor().assign({"t1": 3, "t2": 2}, subs)
    assert parts(result) == {"c1": tps("t1", 0), "c2": tps("t1", 1) + tps("t2", 0, 1), "c3": tps("t1", 2)}


def test_more_consumers_than_partitions():
    subs = {f"c{i}": Subscription(["t"]) for i in range(4)}
    assert parts(RangeAssignor().assign({"t": 2}, subs)) == {
        "c0": tps("t", 0), "c1": tps("t", 1), "c2": [], "c3": []
    }


def test_static_members_ordered_by_instance_id_before_dynamic():
    subs = {
        "a-dynamic": Subscription(["t"]),
        "z-member": Subscription(["t"], group_instance_id="i1"),
        "b-member": Subscription(["t"], group_instance_id="i2"),
    }
    assert parts(RangeAssignor().assign({"t": 5}, subs)) == {
        "z-member": tps("t", 0, 1), "b-member": tps("t", 2, 3), "a-dynamic": tps("t", 4)
    }


def test_static_member_keeps_range_when_member_id_changes():
    before = {"m1": Subscription(["t"], group_instance_id="i1"),
              "m2": Subscription(["t"], group_instance_id="i2")}
    after = {"m0-new": Subscription(["t"], group_instance_id="i2"), "m1": before["m1"]}
    first, second = RangeAssignor().assign({"t": 5}, before), RangeAssignor().assign({"t": 5}, after)
    assert first["m2"].partitions == second["m0-new"].partitions
    assert first["m1"].partitions == second["m1"].partitions


# ------------------------------------------------------------------- rack aware

def test_rack_aware_single_topic_prefers_local_partitions():
    racks = {"t": [frozenset({"b"})] * 3 + [frozenset({"a"})] * 3}
    subs = {"m1": Subscription(["t"], rack_id="a"), "m2": Subscription(["t"], rack_id="b")}
    result = RangeAssignor().assign({"t": 6}, subs, racks)
    assert parts(result) == {"m1": tps("t", 3, 4, 5), "m2": tps("t", 0, 1, 2)}


def test_rack_aware_co_partitioned_topics_stay_together():
    racks = {t: [frozenset({"b"}), frozenset({"a"})] for t in ("t", "u")}
    subs = {"m1": Subscription(["t", "u"], rack_id="a"), "m2": Subscription(["t", "u"], rack_id="b")}
    result = RangeAssignor().assign({"t": 2, "u": 2}, subs, racks)
    assert parts(result) == {"m1": tps("t", 1) + tps("u", 1), "m2": tps("t", 0) + tps("u", 0)}


def test_rack_aware_respects_range_quota():
    racks = {"t": [frozenset({"a"}), frozenset({"a"}), frozenset({"b"})]}
    subs = {"m1": Subscription(["t"], rack_id="a"), "m2": Subscription(["t"], rack_id="a")}
    result = RangeAssignor().assign({"t": 3}, subs, racks)
    assert parts(result) == {"m1": tps("t", 0, 1), "m2": tps("t", 2)}


def test_rack_aware_mismatch_falls_back_to_ranges():
    racks = {"t": [frozenset({"x"})] * 4}
    subs = {"m1": Subscription(["t"], rack_id="a"), "m2": Subscription(["t"], rack_id="b")}
    result = RangeAssignor().assign({"t": 4}, subs, racks)
    assert parts(result) == parts(RangeAssignor().assign({"t": 4}, subs))


def test_every_partition_on_every_rack_is_plain_range():
    racks = {"t": [frozenset({"a", "b"})] * 5}
    subs = {"m2": Subscription(["t"], rack_id="a"), "m1": Subscription(["t"], rack_id="b")}
    assert parts(RangeAssignor().assign({"t": 5}, subs, racks)) == \
        parts(RangeAssignor().assign({"t": 5}, subs))


# ------------------------------------------------------------------- properties

@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9))
def test_matches_reference_without_racks(seed):
    group = random_group(random.Random(seed))
    result = RangeAssignor().assign(group.partitions_per_topic, group.subscriptions)
    assert parts(result) == reference_range(group.partitions_per_topic, group.subscriptions)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9))
def test_rack_aware_is_valid_and_per_topic_balanced(seed):
    group = random_group(random.Random(seed), racks=True)
    result = RangeAssignor().assign(group.partitions_per_topic, group.subscriptions, group.partition_racks)
    check_validity(group.partitions_per_topic, group.subscriptions, result)
    check_topic_balance(group.partitions_per_topic, group.subscriptions, result)
    # members without racks: identical to the non-rack output
    no_member_racks = {m: Subscription(s.topics, group_instance_id=s.group_instance_id)
                       for m, s in group.subscriptions.items()}
    assigned = RangeAssignor().assign(group.partitions_per_topic, no_member_racks, group.partition_racks)
    assert parts(assigned) == reference_range(group.partitions_per_topic, no_member_racks)


@pytest.mark.parametrize("seed", range(3))
def test_conformance_kit(seed):
    check_assignor(RangeAssignor(), seed=seed)


def test_1000_members_10000_partitions_is_fast():
    import time

    counts, subs = identical_group(1000, 10, 1000)
    start = time.perf_counter()
    result = RangeAssignor().assign(counts, subs)
    assert time.perf_counter() - start < 1.0
    assert {len(a.partitions) for a in result.values()} == {10}


@pytest.mark.slow
def test_2000_members_1m_partitions():
    import time

    counts, subs = identical_group(2000, 500, 2000)
    start = time.perf_counter()
    result = RangeAssignor().assign(counts, subs)
    assert time.perf_counter() - start < 10.0
    assert {len(a.partitions) for a in result.values()} == {500}


# Kafka RangeAssignorTest's cases (co-partitioning included) are ported in
# tests/conformance/assignors/test_kafka_range_assignor.py.
