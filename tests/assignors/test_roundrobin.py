"""RoundRobinAssignor: Java RoundRobinAssignorTest shapes and a literal reference."""
from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.roundrobin import RoundRobinAssignor
from kgroup.testing.conformance import check_assignor, check_validity, random_group
from kgroup.values import Subscription, TopicPartition
from assignors_inputs import identical_group


def tps(topic, *numbers):
    return [TopicPartition(topic, n) for n in numbers]


def parts(result):
    return {m: list(a.partitions) for m, a in result.items()}


def reference_round_robin(partitions_per_topic, subscriptions):
    """Java's loop, one partition at a time around a cycle of members."""
    def key(m):
        iid = subscriptions[m].group_instance_id
        return (0, iid, m) if iid is not None else (1, m, "")

    members = sorted(subscriptions, key=key)
    out = {m: [] for m in members}
    topics = sorted({t for s in subscriptions.values() for t in s.topics})
    i = 0
    for topic in topics:
        for p in range(partitions_per_topic.get(topic, 0)):
            while topic not in subscriptions[members[i % len(members)]].topics:
                i += 1
            out[members[i % len(members)]].append(TopicPartition(topic, p))
            i += 1
    return out


def test_two_consumers_two_topics():
    subs = {"c1": Subscription(["t1", "t2"]), "c2": Subscription(["t1", "t2"])}
    assert parts(RoundRobinAssignor().assign({"t1": 3, "t2": 3}, subs)) == {
        "c1": tps("t1", 0, 2) + tps("t2", 1), "c2": tps("t1", 1) + tps("t2", 0, 2)
    }


def test_multiple_consumers_mixed_topics():
    subs = {"c1": Subscription(["t1"]), "c2": Subscription(["t1", "t2"]), "c3": Subscription(["t1"])}
    assert parts(RoundRobinAssignor().assign({"t1": 3, "t2": 2}, subs)) == {
        "c1": tps("t1", 0), "c2": tps("t1", 1) + tps("t2", 0, 1), "c3": tps("t1", 2)
    }


def test_no_topics_nonexistent_topics_and_static_order():
    subs = {"b": Subscription([]), "a": Subscription(["gone"]),
            "z": Subscription(["t"], group_instance_id="i0")}
    assert parts(RoundRobinAssignor().assign({"t": 2}, subs)) == {"z": tps("t", 0, 1), "a": [], "b": []}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9))
def test_matches_literal_reference(seed):
    group = random_group(random.Random(seed), max_members=12, max_topics=5)
    result = RoundRobinAssignor().assign(group.partitions_per_topic, group.subscriptions)
    assert parts(result) == reference_round_robin(group.partitions_per_topic, group.subscriptions)
    check_validity(group.partitions_per_topic, group.subscriptions, result)


@pytest.mark.parametrize("seed", range(3))
def test_conformance_kit(seed):
    check_assignor(RoundRobinAssignor(), seed=seed)


def test_1000_members_10000_partitions_is_fast():
    counts, subs = identical_group(1000, 10, 1000)
    start = time.perf_counter()
    result = RoundRobinAssignor().assign(counts, subs)
    elapsed = time.perf_counter() - start
    assert {len(a.partitions) for a in result.values()} == {10}
    assert elapsed < 1.0, elapsed


@pytest.mark.slow
def test_2000_members_1m_partitions():
    counts, subs = identical_group(2000, 500, 2000)
    start = time.perf_counter()
    result = RoundRobinAssignor().assign(counts, subs)
    elapsed = time.perf_counter() - start
    assert {len(a.partitions) for a in result.values()} == {500}
    assert elapsed < 10.0, elapsed
