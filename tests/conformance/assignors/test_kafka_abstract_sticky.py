"""Kafka AbstractStickyAssignorTest (clients, trunk), ported for kgroup's sticky and cooperative-sticky.

One test per Kafka test, run for both assignors (Kafka runs the abstract
class through StickyAssignorTest and CooperativeStickyAssignorTest) and over
the rack configurations Kafka parametrizes with.  ``g.verify(...)`` is
Kafka's ``verifyValidityAndBalance``; for the cooperative assignor it first
runs the follow-up rebalances, so assertions after it see the settled
assignment, as in Kafka.  Kafka's ``partitionsTransferringOwnership`` is
read as ``g.transferring_ownership()`` (see the kit); where Kafka asserts it
is null (general path) there is nothing to compare.  Where Kafka's exact
answer depends on HashMap order we assert the property the test checks.
The rack-aware scenarios are in test_kafka_sticky_rack_aware.py.
"""
from __future__ import annotations

import random

import pytest

from assignors_kafka_kit import (
    GENERATION_ID,
    RACK_CONFIGS,
    STICKY_ASSIGNORS,
    KafkaAssignorGroup,
    is_fully_balanced,
    topic_count,
)
from kgroup.values import NO_GENERATION, TopicPartition as TP

WITH_RACKS = pytest.mark.parametrize("rack_config", RACK_CONFIGS)
WITH_CONSUMER_RACK = pytest.mark.parametrize("has_consumer_rack", [False, True])
BOTH = pytest.mark.parametrize("name", STICKY_ASSIGNORS)


def group(name, rack_config):
    return KafkaAssignorGroup(name, rack_config)


def group_consumer_rack(name, has_consumer_rack):
    return KafkaAssignorGroup(name, "BROKER_AND_CONSUMER_RACK" if has_consumer_rack else "NO_CONSUMER_RACK")


def tp(topic, partition):
    return TP(topic, partition)


def name_of(prefix, i, max_num):
    """AbstractStickyAssignorTest.getCanonicalName: zero-padded to max_num's digits."""
    return prefix + str(i).zfill(len(str(max_num)))


def is_sticky(previous: dict, current: dict) -> bool:
    """AbstractStickyAssignor.isSticky: no two members swap partitions of one topic.

    ``previous`` maps member -> partitions it owned; a movement is a partition
    whose previous owner is someone else now.  Kafka flags a cycle of length
    two among a topic's movements (A -> B and B -> A).
    """
    owner = {p: m for m, parts in previous.items() for p in parts}
    pairs: dict = {}
    for member, parts in current.items():
        for p in parts:
            src = owner.get(p)
            if src is not None and src != member:
                pairs.setdefault(p.topic, set()).add((src, member))
    return not any((b, a) in moves for moves in pairs.values() for a, b in moves)


# ---------------------------------------------------------------------------------------------


@BOTH
@WITH_CONSUMER_RACK
def test_one_consumer_no_topic(name, has_consumer_rack):
    """Kafka AbstractStickyAssignorTest.testOneConsumerNoTopic."""
    g = group_consumer_rack(name, has_consumer_rack)
    g.subscriptions = {"consumer": g.subscription([], 0)}
    assignment = g.assign()
    assert assignment == {"consumer": []}
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_CONSUMER_RACK
def test_one_consumer_nonexistent_topic(name, has_consumer_rack):
    """Kafka AbstractStickyAssignorTest.testOneConsumerNonexistentTopic."""
    g = group_consumer_rack(name, has_consumer_rack)
    g.add_topic("topic", 0)
    g.subscriptions = {"consumer": g.subscription(["topic"], 0)}
    assignment = g.assign()
    assert assignment == {"consumer": []}
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_one_consumer_one_topic(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testOneConsumerOneTopic."""
    g = group(name, rack_config)
    g.add_topic("topic", 3)
    g.subscriptions = {"consumer": g.subscription(["topic"], 0)}
    assignment = g.assign()
    assert assignment["consumer"] == [tp("topic", 0), tp("topic", 1), tp("topic", 2)]
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_only_assigns_partitions_from_subscribed_topics(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics."""
    g = group(name, rack_config)
    g.add_topic("topic", 2)
    owned = [tp("topic", 0), tp("topic", 1), tp("other", 0), tp("other", 1)]
    g.subscriptions = {"consumer": g.subscription_v2(["topic"], owned, GENERATION_ID, 0)}
    assignment = g.assign()
    assert assignment["consumer"] == [tp("topic", 0), tp("topic", 1)]
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_one_consumer_multiple_topics(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testOneConsumerMultipleTopics."""
    g = group(name, rack_config)
    g.add_topic("topic1", 1)
    g.add_topic("topic2", 2)
    g.subscriptions = {"consumer": g.subscription(["topic1", "topic2"], 0)}
    assignment = g.assign()
    assert assignment["consumer"] == [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_two_consumers_one_topic_one_partition(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testTwoConsumersOneTopicOnePartition."""
    g = group(name, rack_config)
    g.add_topic("topic", 1)
    g.subscriptions = {"consumer1": g.subscription(["topic"], 0), "consumer2": g.subscription(["topic"], 1)}
    assignment = g.assign()
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_two_consumers_one_topic_two_partitions(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testTwoConsumersOneTopicTwoPartitions."""
    g = group(name, rack_config)
    g.add_topic("topic", 2)
    g.subscriptions = {"consumer1": g.subscription(["topic"], 0), "consumer2": g.subscription(["topic"], 1)}
    assignment = g.assign()
    assert assignment["consumer1"] == [tp("topic", 0)]
    assert assignment["consumer2"] == [tp("topic", 1)]
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_multiple_consumers_mixed_topic_subscriptions(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testMultipleConsumersMixedTopicSubscriptions."""
    g = group(name, rack_config)
    g.add_topic("topic1", 3)
    g.add_topic("topic2", 2)
    g.subscriptions = {
        "consumer1": g.subscription(["topic1"], 0),
        "consumer2": g.subscription(["topic1", "topic2"], 1),
        "consumer3": g.subscription(["topic1"], 2),
    }
    assignment = g.assign()
    assert assignment["consumer1"] == [tp("topic1", 0), tp("topic1", 2)]
    assert assignment["consumer2"] == [tp("topic2", 0), tp("topic2", 1)]
    assert assignment["consumer3"] == [tp("topic1", 1)]
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_two_consumers_two_topics_six_partitions(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testTwoConsumersTwoTopicsSixPartitions (KAFKA-16277 spread)."""
    g = group(name, rack_config)
    g.add_topic("topic1", 3)
    g.add_topic("topic2", 3)
    topics = ["topic1", "topic2"]
    g.subscriptions = {"consumer1": g.subscription(topics, 0), "consumer2": g.subscription(topics, 1)}
    assignment = g.assign()
    assert assignment["consumer1"] == [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)]
    assert assignment["consumer2"] == [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)]
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_consumer_owning_min_quota_expected_max_quota(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testConsumerOwningMinQuotaExpectedMaxQuota."""
    g = group(name, rack_config)
    g.add_topic("topic1", 2)
    g.add_topic("topic2", 3)
    topics = ["topic1", "topic2"]
    g.subscriptions = {
        "consumer1": g.subscription_v2(topics, [tp("topic1", 0), tp("topic2", 1)], GENERATION_ID, 0),
        "consumer2": g.subscription_v2(topics, [tp("topic1", 1), tp("topic2", 2)], GENERATION_ID, 1),
    }
    assignment = g.assign()
    assert sorted(assignment["consumer1"]) == sorted([tp("topic1", 0), tp("topic2", 1), tp("topic2", 0)])
    assert sorted(assignment["consumer2"]) == [tp("topic1", 1), tp("topic2", 2)]
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_max_quota_consumer_more_than_num_expected_max_capacity_members(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers.

    Which of the two max-quota owners keeps both depends on Java's HashMap
    order; kgroup keeps them in member id order, so consumer1 keeps two and
    consumer2 gives up its partition with the lowest number (topic1-1 sorts
    before topic2-1 by partition, then topic: KAFKA-16277), where Java has
    consumer1 give up topic2-0.  Asserted: one owner keeps both, the other
    keeps one, the newcomer gets the one given up.
    """
    g = group(name, rack_config)
    g.add_topic("topic1", 2)
    g.add_topic("topic2", 2)
    topics = ["topic1", "topic2"]
    c1_owned = [tp("topic1", 0), tp("topic2", 0)]
    c2_owned = [tp("topic1", 1), tp("topic2", 1)]
    g.subscriptions = {
        "consumer1": g.subscription_v2(topics, c1_owned, GENERATION_ID, 0),
        "consumer2": g.subscription_v2(topics, c2_owned, GENERATION_ID, 1),
        "consumer3": g.subscription_v2(topics, [], GENERATION_ID, 2),
    }
    transferring = g.transferring_ownership()
    assert len(transferring) == 1 and list(transferring.values()) == ["consumer3"]
    assignment = g.verify_validity_and_balance(g.assign())
    moved = next(iter(transferring))
    assert assignment["consumer3"] == [moved]
    kept = {m: set(assignment[m]) for m in ("consumer1", "consumer2")}
    assert sorted(len(k) for k in kept.values()) == [1, 2]
    assert kept["consumer1"] <= set(c1_owned) and kept["consumer2"] <= set(c2_owned)
    assert is_fully_balanced(assignment)


@BOTH
@WITH_RACKS
def test_all_consumers_are_under_min_quota(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testAllConsumersAreUnderMinQuota."""
    g = group(name, rack_config)
    g.add_topic("topic1", 2)
    g.add_topic("topic2", 3)
    topics = ["topic1", "topic2"]
    g.subscriptions = {
        "consumer1": g.subscription_v2(topics, [tp("topic1", 0)], GENERATION_ID, 0),
        "consumer2": g.subscription_v2(topics, [tp("topic1", 1)], GENERATION_ID, 1),
        "consumer3": g.subscription_v2(topics, [], GENERATION_ID, 2),
    }
    assert g.transferring_ownership() == {}
    assignment = g.verify_validity_and_balance(g.assign())
    assert sorted(assignment["consumer1"]) == [tp("topic1", 0), tp("topic2", 1)]
    assert sorted(assignment["consumer2"]) == [tp("topic1", 1), tp("topic2", 2)]
    assert assignment["consumer3"] == [tp("topic2", 0)]
    assert is_fully_balanced(assignment)


@BOTH
@WITH_RACKS
def test_add_remove_consumer_one_topic(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testAddRemoveConsumerOneTopic."""
    g = group(name, rack_config)
    g.add_topic("topic", 3)
    g.subscriptions = {"consumer1": g.subscription(["topic"], 0)}
    assignment = g.assign()
    assert assignment["consumer1"] == [tp("topic", 0), tp("topic", 1), tp("topic", 2)]
    assignment = g.verify_validity_and_balance(assignment)

    g.subscriptions["consumer1"] = g.subscription_v2(["topic"], assignment["consumer1"], GENERATION_ID, 0)
    g.subscriptions["consumer2"] = g.subscription_v2(["topic"], [], GENERATION_ID, 1)
    assert g.transferring_ownership() == {tp("topic", 2): "consumer2"}
    assignment = g.verify_validity_and_balance(g.assign())
    assert assignment["consumer1"] == [tp("topic", 0), tp("topic", 1)]
    assert assignment["consumer2"] == [tp("topic", 2)]
    assert is_fully_balanced(assignment)

    del g.subscriptions["consumer1"]
    g.subscriptions["consumer2"] = g.subscription_v2(["topic"], assignment["consumer2"], GENERATION_ID, 1)
    assert g.transferring_ownership() == {}
    assignment = g.verify_validity_and_balance(g.assign())
    assert set(assignment["consumer2"]) == {tp("topic", 0), tp("topic", 1), tp("topic", 2)}


@BOTH
@WITH_RACKS
def test_topic_balance_after_reassignment(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testTopicBalanceAfterReassignment (KAFKA-16277)."""
    g = group(name, rack_config)
    topics = ["topic1", "topic2"]
    g.add_topic("topic1", 12)
    g.add_topic("topic2", 12)
    g.subscriptions = {"consumer1": g.subscription(topics, 0)}

    def each_gets(assignment, count):
        for parts in assignment.values():
            assert topic_count(parts, "topic1") == count and topic_count(parts, "topic2") == count

    assignment = g.verify_validity_and_balance(g.assign())
    each_gets(assignment, 12)
    # Add another consumer.
    g.subscriptions["consumer1"] = g.subscription_v2(topics, assignment["consumer1"], GENERATION_ID, 0)
    g.subscriptions["consumer2"] = g.subscription_v2(topics, [], GENERATION_ID, 1)
    assignment = g.verify_validity_and_balance(g.assign())
    each_gets(assignment, 6)
    # Add two more consumers.
    for i, member in enumerate(["consumer1", "consumer2", "consumer3", "consumer4"]):
        g.subscriptions[member] = g.subscription_v2(topics, assignment.get(member, []), GENERATION_ID, i)
    assignment = g.verify_validity_and_balance(g.assign())
    each_gets(assignment, 3)
    # Remove two consumers.
    del g.subscriptions["consumer1"], g.subscriptions["consumer2"]
    g.subscriptions["consumer3"] = g.subscription_v2(topics, assignment["consumer3"], GENERATION_ID, 2)
    g.subscriptions["consumer4"] = g.subscription_v2(topics, assignment["consumer4"], GENERATION_ID, 3)
    assert g.transferring_ownership() == {}
    assignment = g.verify_validity_and_balance(g.assign())
    each_gets(assignment, 6)
    assert is_fully_balanced(assignment)


@BOTH
@WITH_RACKS
def test_add_remove_two_consumers_two_topics(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testAddRemoveTwoConsumersTwoTopics (as updated by KAFKA-16277)."""
    g = group(name, rack_config)
    topics = ["topic1", "topic2"]
    g.add_topic("topic1", 3)
    g.add_topic("topic2", 4)
    g.subscriptions = {"consumer1": g.subscription(topics, 0), "consumer2": g.subscription(topics, 1)}
    assignment = g.assign()
    assert assignment["consumer1"] == [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1), tp("topic2", 3)]
    assert assignment["consumer2"] == [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)]
    assignment = g.verify_validity_and_balance(assignment)
    # Add two consumers.
    for i, member in enumerate(["consumer1", "consumer2", "consumer3", "consumer4"]):
        g.subscriptions[member] = g.subscription_v2(topics, assignment.get(member, []), GENERATION_ID, i)
    assert g.transferring_ownership() == {
        tp("topic1", 2): "consumer3",
        tp("topic2", 3): "consumer3",
        tp("topic2", 2): "consumer4",
    }
    assignment = g.verify_validity_and_balance(g.assign())
    assert set(assignment["consumer1"]) == {tp("topic1", 0), tp("topic2", 1)}
    assert set(assignment["consumer2"]) == {tp("topic2", 0), tp("topic1", 1)}
    assert set(assignment["consumer3"]) == {tp("topic1", 2), tp("topic2", 3)}
    assert set(assignment["consumer4"]) == {tp("topic2", 2)}
    # Remove two consumers.
    del g.subscriptions["consumer1"], g.subscriptions["consumer2"]
    g.subscriptions["consumer3"] = g.subscription_v2(topics, assignment["consumer3"], GENERATION_ID, 2)
    g.subscriptions["consumer4"] = g.subscription_v2(topics, assignment["consumer4"], GENERATION_ID, 3)
    assert g.transferring_ownership() == {}
    assignment = g.verify_validity_and_balance(g.assign())
    assert set(assignment["consumer3"]) == {
        tp("topic1", 2), tp("topic2", 3), tp("topic1", 0), tp("topic2", 1)
    }
    assert set(assignment["consumer4"]) == {tp("topic2", 2), tp("topic1", 1), tp("topic2", 0)}


@BOTH
@WITH_RACKS
def test_poor_round_robin_assignment_scenario(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testPoorRoundRobinAssignmentScenario."""
    g = group(name, rack_config)
    for i in range(1, 6):
        g.add_topic(f"topic{i}", (i % 2) + 1)
    everything = ["topic1", "topic2", "topic3", "topic4", "topic5"]
    odd = ["topic1", "topic3", "topic5"]
    g.subscriptions = {
        "consumer1": g.subscription(everything, 0),
        "consumer2": g.subscription(odd, 1),
        "consumer3": g.subscription(odd, 2),
        "consumer4": g.subscription(everything, 3),
    }
    g.verify_validity_and_balance(g.assign())


@BOTH
@WITH_RACKS
def test_add_remove_topic_two_consumers(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testAddRemoveTopicTwoConsumers."""
    g = group(name, rack_config)
    g.add_topic("topic", 3)
    g.subscriptions = {"consumer1": g.subscription(["topic"], 0), "consumer2": g.subscription(["topic"], 1)}
    assert g.transferring_ownership() == {}
    first = g.verify_validity_and_balance(g.assign())
    assert sorted(len(p) for p in first.values()) == [1, 2]

    g.add_topic("topic2", 3)
    for i, member in enumerate(["consumer1", "consumer2"]):
        g.subscriptions[member] = g.subscription_v2(["topic", "topic2"], first[member], GENERATION_ID, i)
    assert g.transferring_ownership() == {}
    second = g.verify_validity_and_balance(g.assign())
    assert [len(second[m]) for m in ("consumer1", "consumer2")] == [3, 3]
    for member in first:
        assert set(first[member]) <= set(second[member])

    g.remove_topic("topic")
    for i, member in enumerate(["consumer1", "consumer2"]):
        g.subscriptions[member] = g.subscription_v2(["topic2"], second[member], GENERATION_ID, i)
    assert g.transferring_ownership() == {}
    third = g.verify_validity_and_balance(g.assign())
    assert sorted(len(p) for p in third.values()) == [1, 2]
    for member in third:
        assert set(third[member]) <= set(second[member])


@BOTH
@WITH_RACKS
def test_reassignment_after_one_consumer_leaves(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testReassignmentAfterOneConsumerLeaves.

    Kafka removes "consumer10", which is not a member (members are c01..c19),
    so the second assignment has the same members; ported as is.
    """
    g = group(name, rack_config)
    for i in range(1, 20):
        g.add_topic(name_of("t", i, 20), i)
    for i in range(1, 20):
        topics = [name_of("t", j, 20) for j in range(1, i + 1)]
        g.subscriptions[name_of("c", i, 20)] = g.subscription(topics, i)
    assignment = g.verify_validity_and_balance(g.assign())
    for i in range(1, 20):
        member = name_of("c", i, 20)
        g.subscriptions[member] = g.subscription_v2(g.subscriptions[member].topics, assignment[member],
                                                    GENERATION_ID, i)
    g.subscriptions.pop("consumer10", None)
    previous = {m: list(p) for m, p in assignment.items()}
    assignment = g.verify_validity_and_balance(g.assign())
    assert is_sticky(previous, assignment)


@BOTH
@WITH_RACKS
def test_reassignment_after_one_consumer_added(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testReassignmentAfterOneConsumerAdded."""
    g = group(name, rack_config)
    g.add_topic("topic", 20)
    for i in range(1, 10):
        g.subscriptions[name_of("c", i, 10)] = g.subscription(["topic"], i)
    assert g.transferring_ownership() == {}
    g.verify_validity_and_balance(g.assign())
    # Add a consumer; like Kafka, nobody claims the first assignment.
    g.subscriptions[name_of("c", 10, 10)] = g.subscription(["topic"], 10)
    assert g.transferring_ownership() == {}
    g.verify_validity_and_balance(g.assign())


@BOTH
@WITH_RACKS
def test_same_subscriptions(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testSameSubscriptions."""
    g = group(name, rack_config)
    for i in range(1, 15):
        g.add_topic(name_of("t", i, 15), i)
    topics = [name_of("t", j, 15) for j in range(1, 15)]
    for i in range(1, 9):
        g.subscriptions[name_of("c", i, 9)] = g.subscription(topics, i)
    assert g.transferring_ownership() == {}
    assignment = g.verify_validity_and_balance(g.assign())
    for i in range(1, 9):
        member = name_of("c", i, 9)
        g.subscriptions[member] = g.subscription_v2(topics, assignment[member], GENERATION_ID, i)
    del g.subscriptions[name_of("c", 5, 9)]
    assert g.transferring_ownership() == {}
    g.verify_validity_and_balance(g.assign())


def _large_group(g, topic_count_, partition_count, consumer_count, topics_of):
    topics = [name_of("t", i, topic_count_) for i in range(topic_count_)]
    for t in topics:
        g.add_topic(t, partition_count)
    for i in range(consumer_count):
        g.subscriptions[name_of("c", i, consumer_count)] = g.subscription(topics_of(i, topics), i)
    assignment = g.assign()
    for i in range(1, consumer_count):
        member = name_of("c", i, consumer_count)
        owned = assignment[member]
        g.subscriptions[member] = g.subscription_v2(topics_of(i, topics), owned, GENERATION_ID, i)
    return g.assign()


@pytest.mark.slow
@BOTH
@WITH_CONSUMER_RACK
def test_large_assignment_and_group_with_uniform_subscription(name, has_consumer_rack):
    """Kafka AbstractStickyAssignorTest.testLargeAssignmentAndGroupWithUniformSubscription (1M partitions)."""
    g = group_consumer_rack(name, has_consumer_rack)
    _large_group(g, 50 if has_consumer_rack else 500, 2_000, 2_000, lambda i, topics: topics)


@pytest.mark.slow
@BOTH
@WITH_CONSUMER_RACK
def test_large_assignment_and_group_with_non_equal_subscription(name, has_consumer_rack):
    """Kafka AbstractStickyAssignorTest.testLargeAssignmentAndGroupWithNonEqualSubscription."""
    g = group_consumer_rack(name, has_consumer_rack)
    _large_group(g, 50 if has_consumer_rack else 500, 2_000, 2_000,
                 lambda i, topics: topics[:1] if i == 1_999 else topics)


@BOTH
@WITH_CONSUMER_RACK
def test_assignment_and_group_with_non_equal_subscription_not_timeout(name, has_consumer_rack):
    """Kafka AbstractStickyAssignorTest.testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout."""
    g = group_consumer_rack(name, has_consumer_rack)
    topic_total = 50 if has_consumer_rack else 100
    half = topic_total // 2
    _large_group(g, topic_total, 200, 500, lambda i, topics: topics[:half] if i % 4 == 0 else topics[half:])


@BOTH
def test_subscription_not_equal_and_assign_same_partition_with_3_generation(name):
    """Kafka AbstractStickyAssignorTest.testSubscriptionNotEqualAndAssignSamePartitionWith3Generation."""
    for gens in ([1, 2, 3], [1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2], [3, 2, 1]):
        g = group(name, None)
        g.add_topic("topic", 6)
        g.add_topic("topic1", 1)
        g.subscriptions = {
            "consumer1": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 2)], gens[0], 0),
            "consumer2": g.subscription_v2(["topic"], [tp("topic", p) for p in (1, 2, 3)], gens[1], 1),
            "consumer3": g.subscription_v2(["topic"], [tp("topic", p) for p in (2, 4, 5)], gens[2], 2),
            "consumer4": g.subscription_v2(["topic1"], [tp("topic1", 0)], 2, 3),
        }
        assignment = g.assign()
        assigned = [p for parts in assignment.values() for p in parts]
        assert len(assigned) == len(set(assigned))
        if g.cooperative:
            # Withheld partitions (being revoked) leave a member short in the first round.
            assignment = g.verify_validity_and_balance(assignment)
        assert all(1 <= len(parts) <= 2 for parts in assignment.values())


@BOTH
@WITH_CONSUMER_RACK
def test_large_assignment_with_multiple_consumers_leaving_and_random_subscription(name, has_consumer_rack):
    """Kafka AbstractStickyAssignorTest.testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription.

    Kafka uses an unseeded Random; seeded here so a failure replays.
    """
    rng = random.Random(20 + has_consumer_rack)
    g = group_consumer_rack(name, has_consumer_rack)
    topic_total, consumer_total = 40, 200
    for i in range(topic_total):
        g.add_topic(name_of("t", i, topic_total), rng.randrange(10) + 1)
    for i in range(consumer_total):
        topics = [name_of("t", rng.randrange(topic_total), topic_total) for _ in range(rng.randrange(20))]
        g.subscriptions[name_of("c", i, consumer_total)] = g.subscription(list(dict.fromkeys(topics)), i)
    assignment = g.verify_validity_and_balance(g.assign())
    for i in range(1, consumer_total):
        member = name_of("c", i, consumer_total)
        g.subscriptions[member] = g.subscription_v2(g.subscriptions[member].topics, assignment[member],
                                                    GENERATION_ID, i)
    for _ in range(50):
        g.subscriptions.pop(name_of("c", rng.randrange(consumer_total), consumer_total), None)
    previous = {m: list(p) for m, p in assignment.items()}
    assignment = g.verify_validity_and_balance(g.assign())
    assert is_sticky(previous, assignment)


@BOTH
@WITH_RACKS
def test_new_subscription(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testNewSubscription."""
    g = group(name, rack_config)
    for i in range(1, 5):
        g.add_topic(name_of("t", i, 5), 1)
    for i in range(3):
        topics = [name_of("t", j, 5) for j in range(i, 3 * i - 1)]
        g.subscriptions[name_of("c", i, 3)] = g.subscription(topics, i)
    assignment = g.verify_validity_and_balance(g.assign())
    first = g.subscriptions["c0"]
    g.subscriptions["c0"] = g.subscription(list(first.topics) + [name_of("t", 1, 5)], 0)
    previous = {m: list(p) for m, p in assignment.items()}
    assignment = g.verify_validity_and_balance(g.assign())
    assert is_sticky(previous, assignment)


@BOTH
@WITH_RACKS
def test_move_existing_assignments(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testMoveExistingAssignments."""
    g = group(name, rack_config)
    for i in range(1, 7):
        g.add_topic(f"topic{i}", 1)
    g.subscriptions = {
        "consumer1": g.subscription_v2(["topic1", "topic2"], [tp("topic1", 0)], GENERATION_ID, 0),
        "consumer2": g.subscription_v2(["topic1", "topic2", "topic3", "topic4"],
                                       [tp("topic2", 0), tp("topic3", 0)], GENERATION_ID, 1),
        "consumer3": g.subscription_v2(["topic2", "topic3", "topic4", "topic5", "topic6"],
                                       [tp("topic4", 0), tp("topic5", 0), tp("topic6", 0)], GENERATION_ID, 2),
    }
    g.verify_validity_and_balance(g.assign())


@BOTH
@WITH_RACKS
def test_stickiness(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testStickiness."""
    g = group(name, rack_config)
    g.add_topic("topic1", 3)
    for i in range(4):
        g.subscriptions[f"consumer{i + 1}"] = g.subscription(["topic1"], i)
    assert g.transferring_ownership() == {}
    assignment = g.verify_validity_and_balance(g.assign())
    assigned = {}
    for member, parts in assignment.items():
        assert len(parts) <= 1, f"{member} has more partitions than expected"
        if parts:
            assigned[member] = parts[0]
    # Remove the potential group leader.
    del g.subscriptions["consumer1"]
    for i in (2, 3, 4):
        member = f"consumer{i}"
        g.subscriptions[member] = g.subscription_v2(["topic1"], assignment[member], GENERATION_ID, i - 1)
    assert g.transferring_ownership() == {}
    assignment = g.verify_validity_and_balance(g.assign())
    for member, parts in assignment.items():
        assert len(parts) == 1
        assert member not in assigned or assigned[member] in parts, f"stickiness not honoured for {member}"


@BOTH
@WITH_RACKS
def test_assignment_updated_for_deleted_topic(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testAssignmentUpdatedForDeletedTopic."""
    g = group(name, rack_config)
    g.add_topic("topic1", 1)
    g.add_topic("topic3", 100)
    g.subscriptions = {"consumer": g.subscription(["topic1", "topic2", "topic3"], 0)}
    assignment = g.assign()
    assert g.transferring_ownership() == {}
    assert sum(len(p) for p in assignment.values()) == 1 + 100
    assert set(assignment) == {"consumer"}
    g.verify_validity_and_balance(assignment)


@BOTH
@WITH_RACKS
def test_no_exception_thrown_when_only_subscribed_topic_deleted(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testNoExceptionThrownWhenOnlySubscribedTopicDeleted."""
    g = group(name, rack_config)
    g.add_topic("topic", 3)
    g.subscriptions = {"consumer": g.subscription(["topic"], 0)}
    assignment = g.assign()
    assert g.transferring_ownership() == {}
    g.subscriptions["consumer"] = g.subscription_v2(["topic"], assignment["consumer"], GENERATION_ID, 0)
    assignment = g.assign(partitions_per_topic={})
    assert assignment == {"consumer": []}


@BOTH
@WITH_RACKS
def test_reassignment_with_random_subscriptions_and_changes(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testReassignmentWithRandomSubscriptionsAndChanges (100 rounds).

    Kafka uses unseeded Randoms; seeded here so a failure replays.
    """
    rng = random.Random(RACK_CONFIGS.index(rack_config))

    def random_sublist(items):
        chosen = list(items)
        for _ in range(rng.randrange(len(items))):
            chosen.pop(rng.randrange(len(chosen)))
        return sorted(chosen)

    for _ in range(100):
        g = group(name, rack_config)
        topics = [name_of("t", i, 20) for i in range(10 + rng.randrange(10))]
        for i, t in enumerate(topics):
            g.add_topic(t, i + 1)
        consumers = 20 + rng.randrange(20)
        for i in range(consumers):
            g.subscriptions[name_of("c", i, 40)] = g.subscription(random_sublist(topics), i)
        assignment = g.assign()
        g.subscriptions = {}
        for i in range(consumers):
            member = name_of("c", i, 40)
            owned = assignment[member]
            g.subscriptions[member] = g.subscription_v2(random_sublist(topics), owned, GENERATION_ID, i)
        previous = {m: list(p) for m, p in assignment.items()}
        assignment = g.verify_validity_and_balance(g.assign())
        assert is_sticky(previous, assignment)


@BOTH
@WITH_RACKS
def test_all_consumers_reach_expected_quota_and_are_considered_filled(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testAllConsumersReachExpectedQuotaAndAreConsideredFilled."""
    g = group(name, rack_config)
    g.add_topic("topic", 4)
    g.subscriptions = {
        "consumer1": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 1)], GENERATION_ID, 0),
        "consumer2": g.subscription_v2(["topic"], [tp("topic", 2)], GENERATION_ID, 1),
        "consumer3": g.subscription_v2(["topic"], [], GENERATION_ID, 2),
    }
    assignment = g.assign()
    assert assignment["consumer1"] == [tp("topic", 0), tp("topic", 1)]
    assert assignment["consumer2"] == [tp("topic", 2)]
    assert assignment["consumer3"] == [tp("topic", 3)]
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


def _stale_claim_loses(name, rack_config, stale_generation):
    g = group(name, rack_config)
    g.add_topic("topic", 3)
    g.add_topic("topic2", 3)
    topics = ["topic", "topic2"]
    owned = [tp("topic", 0), tp("topic", 2), tp("topic2", 1)]
    g.subscriptions = {
        "consumer1": g.subscription_v2(topics, owned, 10, 0),
        "consumer2": g.subscription_v2(topics, owned, stale_generation, 1),
    }
    assignment = g.assign()
    assert set(assignment["consumer1"]) == set(owned)
    assert set(assignment["consumer2"]) == {tp("topic", 1), tp("topic2", 0), tp("topic2", 2)}
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_owned_partitions_are_invalidated_for_consumer_with_stale_generation(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration."""
    _stale_claim_loses(name, rack_config, 9)


@BOTH
@WITH_RACKS
def test_owned_partitions_are_invalidated_for_consumer_with_no_generation(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithNoGeneration."""
    _stale_claim_loses(name, rack_config, NO_GENERATION)


@BOTH
@WITH_RACKS
def test_partitions_transferring_ownership_include_partition_claimed_by_multiple_consumers_in_same_generation(
    name, rack_config
):
    """Kafka AbstractStickyAssignorTest.
    testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration."""
    g = group(name, rack_config)
    g.add_topic("topic", 3)
    g.subscriptions = {
        "consumer1": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 1)], GENERATION_ID, 0),
        "consumer2": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 2)], GENERATION_ID, 1),
        "consumer3": g.subscription_v2(["topic"], [], GENERATION_ID, 2),
    }
    assert g.transferring_ownership() == {tp("topic", 0): "consumer3"}
    assignment = g.verify_validity_and_balance(g.assign())
    assert assignment["consumer1"] == [tp("topic", 1)]
    assert assignment["consumer2"] == [tp("topic", 2)]
    assert assignment["consumer3"] == [tp("topic", 0)]


@BOTH
@WITH_RACKS
def test_ensure_partitions_assigned_to_highest_generation(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testEnsurePartitionsAssignedToHighestGeneration."""
    g = group(name, rack_config)
    topics = ["topic", "topic2", "topic3"]
    for t in topics:
        g.add_topic(t, 3)
    g.subscriptions = {
        "consumer1": g.subscription_v2(topics, [tp("topic", 0), tp("topic2", 0), tp("topic3", 0)], 10, 0),
        "consumer2": g.subscription_v2(topics, [tp("topic", 1), tp("topic2", 1), tp("topic3", 1)], 9, 1),
        "consumer3": g.subscription_v2(topics, [tp("topic2", 1), tp("topic3", 0), tp("topic3", 2)], 8, 1),
    }
    assignment = g.assign()
    assert set(assignment["consumer1"]) == {tp("topic", 0), tp("topic2", 0), tp("topic3", 0)}
    assert set(assignment["consumer2"]) == {tp("topic", 1), tp("topic2", 1), tp("topic3", 1)}
    assert set(assignment["consumer3"]) == {tp("topic", 2), tp("topic2", 2), tp("topic3", 2)}
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_no_reassignment_on_current_members(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testNoReassignmentOnCurrentMembers."""
    g = group(name, rack_config)
    topics = ["topic", "topic2", "topic3", "topic1"]
    for t in ("topic", "topic1", "topic2", "topic3"):
        g.add_topic(t, 3)
    g.subscriptions = {
        "consumer1": g.subscription_v2(topics, [], NO_GENERATION, 0),
        "consumer2": g.subscription_v2(topics, [tp("topic", 0), tp("topic2", 0), tp("topic1", 0)], 9, 1),
        "consumer3": g.subscription_v2(topics, [tp("topic3", 2), tp("topic2", 2), tp("topic1", 1)], 8, 2),
        "consumer4": g.subscription_v2(topics, [tp("topic3", 1), tp("topic", 1), tp("topic", 2)], 7, 3),
    }
    assignment = g.assign()
    assert set(assignment["consumer1"]) == {tp("topic1", 2), tp("topic2", 1), tp("topic3", 0)}
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@BOTH
@WITH_RACKS
def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(name, rack_config):
    """Kafka AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration."""
    g = group(name, rack_config)
    g.add_topic("topic", 3)
    g.add_topic("topic2", 3)
    topics = ["topic", "topic2"]
    g.subscriptions = {
        "consumer1": g.subscription_v2(topics, [tp("topic", 0), tp("topic2", 1), tp("topic", 1)], 10, 0),
        "consumer2": g.subscription_v2(topics, [tp("topic", 0), tp("topic2", 1), tp("topic2", 2)], 8, 1),
    }
    assignment = g.assign()
    assert set(assignment["consumer1"]) == {tp("topic", 0), tp("topic2", 1), tp("topic", 1)}
    assert set(assignment["consumer2"]) == {tp("topic", 2), tp("topic2", 2), tp("topic2", 0)}
    assert g.transferring_ownership() == {}
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))
