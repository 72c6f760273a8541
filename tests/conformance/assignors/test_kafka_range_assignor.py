"""Kafka RangeAssignorTest (clients, trunk), ported for kgroup's ``range`` assignor.

One test per Kafka test, over the rack configurations Kafka parametrizes
with.  Java's ``preferRackAwareLogic`` switch has no kgroup counterpart;
the cases it forces expect the non-rack-aware result, which kgroup gives.
(The co-partitioning cases moved here from tests/assignors/test_range.py.)
"""
from __future__ import annotations

import pytest

from assignors_kafka_kit import (
    ALL_RACKS,
    RACK_CONFIGS,
    null_racks,
    racks,
    replica_racks,
    verify_rack_assignment,
)
from kgroup.assignors import get_assignor
from kgroup.values import Subscription, TopicPartition as TP

WITH_RACKS = pytest.mark.parametrize("rack_config", RACK_CONFIGS)
WITH_CONSUMER_RACK = pytest.mark.parametrize("has_consumer_rack", [True, False])


def tp(topic, partition):
    return TP(topic, partition)


class RangeGroup:
    """RangeAssignorTest's fixture: initializeRacks(rackConfig, maxConsumers), partitionInfos."""

    def __init__(self, rack_config, max_consumers=3):
        self.replication_factor = max_consumers
        self.num_broker_racks = max_consumers if rack_config != "NO_BROKER_RACK" else 0
        self.has_consumer_rack = rack_config != "NO_CONSUMER_RACK"
        self.partitions_per_topic: dict = {}
        self.partition_racks: dict = {}

    def add_topic(self, topic, count):
        # AbstractPartitionAssignorTest.partitionInfos(topic, n, rf, numBrokerRacks, 0)
        rf, rack_count = self.replication_factor, self.num_broker_racks
        brokers = rf if rack_count <= 0 else rack_count * rf
        broker_racks = [None if rack_count <= 0 else ALL_RACKS[i % rack_count] for i in range(brokers)]
        self.partitions_per_topic[topic] = count
        self.partition_racks[topic] = replica_racks(count, rf, broker_racks, 0)

    def subscription(self, topics, index, instance_id=None):
        racks_in_use = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        rack = ALL_RACKS[index % racks_in_use] if self.has_consumer_rack else None
        return Subscription(list(topics), group_instance_id=instance_id, rack_id=rack)

    def assign(self, subscriptions):
        result = get_assignor("range").assign(dict(self.partitions_per_topic), dict(subscriptions),
                                              self.partition_racks)
        return {m: set(a.partitions) for m, a in result.items()}


def two_topics(g, first, second):
    """RangeAssignorTest.setupPartitionsPerTopicWithTwoTopics."""
    g.add_topic("topic1", first)
    g.add_topic("topic2", second)


def by_instance(assignment, subscriptions):
    """RangeAssignorTest.checkStaticAssignment: the assignment keyed by group instance id."""
    return {s.group_instance_id: assignment[m] for m, s in subscriptions.items() if s.group_instance_id}


def rack_config_for(has_consumer_rack):
    return "BROKER_AND_CONSUMER_RACK" if has_consumer_rack else "NO_CONSUMER_RACK"


@WITH_CONSUMER_RACK
def test_one_consumer_no_topic(has_consumer_rack):
    """Kafka RangeAssignorTest.testOneConsumerNoTopic."""
    g = RangeGroup(rack_config_for(has_consumer_rack))
    assert g.assign({"consumer1": g.subscription([], 0)}) == {"consumer1": set()}


@WITH_CONSUMER_RACK
def test_one_consumer_nonexistent_topic(has_consumer_rack):
    """Kafka RangeAssignorTest.testOneConsumerNonexistentTopic."""
    g = RangeGroup(rack_config_for(has_consumer_rack))
    assert g.assign({"consumer1": g.subscription(["topic1"], 0)}) == {"consumer1": set()}


@WITH_RACKS
def test_one_consumer_one_topic(rack_config):
    """Kafka RangeAssignorTest.testOneConsumerOneTopic."""
    g = RangeGroup(rack_config)
    g.add_topic("topic1", 3)
    assert g.assign({"consumer1": g.subscription(["topic1"], 0)}) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)}
    }


@WITH_RACKS
def test_only_assigns_partitions_from_subscribed_topics(rack_config):
    """Kafka RangeAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics."""
    g = RangeGroup(rack_config)
    g.add_topic("topic1", 3)
    g.add_topic("other", 3)
    assert g.assign({"consumer1": g.subscription(["topic1"], 0)}) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)}
    }


@WITH_RACKS
def test_one_consumer_multiple_topics(rack_config):
    """Kafka RangeAssignorTest.testOneConsumerMultipleTopics."""
    g = RangeGroup(rack_config)
    two_topics(g, 1, 2)
    assert g.assign({"consumer1": g.subscription(["topic1", "topic2"], 0)}) == {
        "consumer1": {tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)}
    }


@WITH_RACKS
def test_two_consumers_one_topic_one_partition(rack_config):
    """Kafka RangeAssignorTest.testTwoConsumersOneTopicOnePartition."""
    g = RangeGroup(rack_config)
    g.add_topic("topic1", 1)
    subs = {"consumer1": g.subscription(["topic1"], 0), "consumer2": g.subscription(["topic1"], 1)}
    assert g.assign(subs) == {"consumer1": {tp("topic1", 0)}, "consumer2": set()}


@WITH_RACKS
def test_two_consumers_one_topic_two_partitions(rack_config):
    """Kafka RangeAssignorTest.testTwoConsumersOneTopicTwoPartitions."""
    g = RangeGroup(rack_config)
    g.add_topic("topic1", 2)
    subs = {"consumer1": g.subscription(["topic1"], 0), "consumer2": g.subscription(["topic1"], 1)}
    assert g.assign(subs) == {"consumer1": {tp("topic1", 0)}, "consumer2": {tp("topic1", 1)}}


@WITH_RACKS
def test_multiple_consumers_mixed_topics(rack_config):
    """Kafka RangeAssignorTest.testMultipleConsumersMixedTopics."""
    g = RangeGroup(rack_config)
    two_topics(g, 3, 2)
    subs = {
        "consumer1": g.subscription(["topic1"], 0),
        "consumer2": g.subscription(["topic1", "topic2"], 1),
        "consumer3": g.subscription(["topic1"], 2),
    }
    assert g.assign(subs) == {
        "consumer1": {tp("topic1", 0)},
        "consumer2": {tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer3": {tp("topic1", 2)},
    }


@WITH_RACKS
def test_two_consumers_two_topics_six_partitions(rack_config):
    """Kafka RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions."""
    g = RangeGroup(rack_config)
    two_topics(g, 3, 3)
    subs = {"consumer1": g.subscription([
        "topic1",
        "topic2",
    ], 0), "consumer2": g.subscription(["topic1", "topic2"], 1)}
    assert g.assign(subs) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer2": {tp("topic1", 2), tp("topic2", 2)},
    }


@WITH_RACKS
def test_two_static_consumers_two_topics_six_partitions(rack_config):
    """Kafka RangeAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions: ordered by instance id."""
    g = RangeGroup(rack_config)
    two_topics(g, 3, 3)
    subs = {
        "consumer-b": g.subscription(["topic1", "topic2"], 0, "instance1"),
        "consumer-a": g.subscription(["topic1", "topic2"], 1, "instance2"),
    }
    assert g.assign(subs) == {
        "consumer-b": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer-a": {tp("topic1", 2), tp("topic2", 2)},
    }


@WITH_RACKS
def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions(rack_config):
    """Kafka RangeAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions."""
    g = RangeGroup(rack_config)
    two_topics(g, 3, 3)
    subs = {
        "consumer-b": g.subscription(["topic1", "topic2"], 0, "instance1"),
        "consumer-a": g.subscription(["topic1", "topic2"], 1),
    }
    assert g.assign(subs) == {
        "consumer-b": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer-a": {tp("topic1", 2), tp("topic2", 2)},
    }


@WITH_RACKS
def test_static_member_range_assignment_persistent(rack_config):
    """Kafka RangeAssignorTest.testStaticMemberRangeAssignmentPersistent."""
    g = RangeGroup(rack_config, 5)
    two_topics(g, 5, 4)
    topics = ["topic1", "topic2"]
    subs = {f"consumer{i + 1}": g.subscription(topics, i, f"instance{i + 1}") for i in range(3)}
    subs["consumer4"] = g.subscription(topics, 3)
    expected = {
        "consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0)},
        "consumer2": {tp("topic1", 2), tp("topic2", 1)},
        "consumer3": {tp("topic1", 3), tp("topic2", 2)},
        "consumer4": {tp("topic1", 4), tp("topic2", 3)},
    }
    assert g.assign(subs) == expected
    # Replace dynamic member 4 with a new dynamic member 5.
    del subs["consumer4"]
    subs["consumer5"] = g.subscription(topics, 4)
    expected["consumer5"] = expected.pop("consumer4")
    assert g.assign(subs) == expected


@WITH_RACKS
def test_static_member_range_assignment_persistent_after_member_id_changes(rack_config):
    """Kafka RangeAssignorTest.testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges."""
    g = RangeGroup(rack_config)
    two_topics(g, 5, 5)
    topics = ["topic1", "topic2"]
    subs = {f"consumer{i + 1}": g.subscription(topics, i, f"instance{i + 1}") for i in range(3)}
    static = by_instance(g.assign(subs), subs)
    assert static == {
        "instance1": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "instance2": {tp("topic1", 2), tp("topic1", 3), tp("topic2", 2), tp("topic2", 3)},
        "instance3": {tp("topic1", 4), tp("topic2", 4)},
    }
    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert by_instance(g.assign(subs), subs) == static


def test_rack_aware_static_member_range_assignment_persistent_after_member_id_changes():
    """Kafka RangeAssignorTest.testRackAwareStaticMemberRangeAssignmentPersistentAfterMemberIdChanges."""
    brokers = [ALL_RACKS[i % 3] for i in range(3 * 2)]
    partition_racks = {t: replica_racks(5, 2, brokers, 0) for t in ("topic1", "topic2")}
    ppt = {"topic1": 5, "topic2": 5}
    topics = ["topic1", "topic2"]
    subs = {
        f"consumer{i + 1}": Subscription(topics, group_instance_id=f"instance{i + 1}", rack_id=ALL_RACKS[i])
        for i in range(3)
    }

    def static_assignment():
        result = get_assignor("range").assign(ppt, subs, partition_racks)
        return by_instance({m: set(a.partitions) for m, a in result.items()}, subs)

    static = static_assignment()
    assert static == {
        "instance1": {tp("topic1", 0), tp("topic1", 2), tp("topic2", 0), tp("topic2", 2)},
        "instance2": {tp("topic1", 1), tp("topic1", 3), tp("topic2", 1), tp("topic2", 3)},
        "instance3": {tp("topic1", 4), tp("topic2", 4)},
    }
    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert static_assignment() == static


def verify_non_rack_aware(topics, consumer_topics, expected):
    """RangeAssignorTest.verifyNonRackAwareAssignment."""
    check = verify_rack_assignment
    check("range", topics, 3, null_racks(3), racks(3), consumer_topics, None, expected, -1)
    check("range", topics, 3, racks(3), null_racks(3), consumer_topics, None, expected, -1)
    check("range", topics, 3, racks(3), racks(3), consumer_topics, None, expected, 0)
    check("range", topics, 4, racks(4), racks(3), consumer_topics, None, expected, 0)
    check("range", topics, 3, racks(3), ["d", "e", "f"], consumer_topics, None, expected, -1)
    check("range", topics, 3, racks(3), [None, "e", "f"], consumer_topics, None, expected, -1)


def rack_case(topics, rf, broker_racks, consumer_racks, consumer_topics, expected, mismatches):
    verify_rack_assignment("range", topics, rf, broker_racks, consumer_racks, consumer_topics, None, expected,
                           mismatches)


UNEVEN = {"t1": 6, "t2": 7, "t3": 2}
ALL3 = ["t1", "t2", "t3"]


def test_rack_aware_assignment_with_uniform_subscription():
    """Kafka RangeAssignorTest.testRackAwareAssignmentWithUniformSubscription."""
    topics = [ALL3] * 3
    verify_non_rack_aware(UNEVEN, topics,
                          [
                              "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
                              "t1-2, t1-3, t2-3, t2-4, t3-1",
                              "t1-4, t1-5, t2-5, t2-6",
                          ])
    rack_case(UNEVEN, 1, racks(3), racks(3), topics,
              [
                  "t1-0, t1-3, t2-0, t2-3, t2-6",
                  "t1-1, t1-4, t2-1, t2-4, t3-0",
                  "t1-2, t1-5, t2-2, t2-5, t3-1",
              ], 0)
    rack_case(UNEVEN, 2, racks(3), racks(3), topics,
              [
                  "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1",
                  "t1-1, t1-3, t2-1, t2-4, t3-0",
                  "t1-4, t1-5, t2-5, t2-6",
              ], 1)
    rack_case(UNEVEN, 3, racks(2), racks(3), topics,
              [
                  "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
                  "t1-2, t1-3, t2-3, t2-4, t3-1",
                  "t1-4, t1-5, t2-5, t2-6",
              ], 4)


def test_rack_aware_assignment_with_non_equal_subscription():
    """Kafka RangeAssignorTest.testRackAwareAssignmentWithNonEqualSubscription."""
    topics = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(UNEVEN, topics,
                          [
                              "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                              "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                              "t1-4, t1-5",
                          ])
    rack_case(UNEVEN, 1, racks(3), racks(3), topics,
              [
                  "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6",
                  "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
                  "t1-2, t1-5, t3-1",
              ], 2)
    rack_case(UNEVEN, 2, racks(3), racks(3), topics,
              [
                  "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1",
                  "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
                  "t1-4, t1-5",
              ], 0)
    rack_case(UNEVEN, 3, racks(2), racks(3), topics,
              [
                  "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                  "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                  "t1-4, t1-5",
              ], 2)


UNIFORM = {"t1": 5, "t2": 5, "t3": 5}


def test_rack_aware_assignment_with_uniform_partitions():
    """Kafka RangeAssignorTest.testRackAwareAssignmentWithUniformPartitions: co-partitioning before racks."""
    topics = [ALL3] * 3
    non_rack = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
        "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
        "t1-4, t2-4, t3-4",
    ]
    verify_non_rack_aware(UNIFORM, topics, non_rack)
    rack_case(UNIFORM, 1, racks(3), racks(3), topics, non_rack, 10)
    rack_case(UNIFORM, 2, racks(3), racks(3), topics, non_rack, 5)
    rack_case(UNIFORM, 3, racks(2), racks(3), topics, non_rack, 3)


def test_rack_aware_assignment_with_uniform_partitions_non_equal_subscription():
    """Kafka RangeAssignorTest.testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription."""
    topics = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(UNIFORM, topics,
                          [
                              "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
                              "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
                              "t1-4, t3-4",
                          ])
    rack_case(UNIFORM, 1, racks(3), racks(3), topics,
              [
                  "t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1",
                  "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
                  "t1-4, t3-4",
              ], 9)
    rack_case(UNIFORM, 2, racks(3), racks(3), topics,
              [
                  "t1-2, t2-0, t2-1, t2-3, t3-2",
                  "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
                  "t1-1, t1-4, t3-1, t3-4",
              ], 0)
    rack_case(UNIFORM, 3, racks(2), racks(3), topics,
              [
                  "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
                  "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
                  "t1-4, t3-4",
              ], 2)


def test_rack_aware_assignment_with_co_partitioning():
    """Kafka RangeAssignorTest.testRackAwareAssignmentWithCoPartitioning."""
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_racks = [ALL_RACKS[0], ALL_RACKS[1], ALL_RACKS[1], ALL_RACKS[0]]
    split = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    non_rack = [
        "t1-0, t1-1, t1-2, t2-0, t2-1, t2-2",
        "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
        "t3-0, t4-0",
        "t3-1, t4-1",
    ]
    rack_case(topics, 3, racks(2), consumer_racks, split, non_rack, -1)
    rack_case(topics, 2, racks(2), consumer_racks, split, non_rack, 0)
    rack_case(topics, 1, racks(2), consumer_racks, split,
              [
                  "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4",
                  "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
                  "t3-1, t4-1",
                  "t3-0, t4-0",
              ], 0)
    same = [["t1", "t2", "t3", "t4"]] * 4
    non_rack = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1",
        "t1-4, t2-4",
        "t1-5, t2-5",
    ]
    rack_case(topics, 3, racks(2), consumer_racks, same, non_rack, -1)
    rack_case(topics, 2, racks(2), consumer_racks, same, non_rack, 0)
    rack_case(topics, 1, racks(2), consumer_racks, same,
              [
                  "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0",
                  "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
                  "t1-5, t2-5",
                  "t1-4, t2-4",
              ], 0)
    rack_case(topics, 1, racks(3), consumer_racks, same,
              [
                  "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
                  "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
                  "t1-2, t2-2",
                  "t1-5, t2-5",
              ], 6)


def test_co_partitioned_assignment_with_same_subscription():
    """Kafka RangeAssignorTest.testCoPartitionedAssignmentWithSameSubscription."""
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    consumer_topics = [["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]] * 3
    consumer_racks = [ALL_RACKS[0], ALL_RACKS[1], ALL_RACKS[2]]
    non_rack = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
    ]
    rack_case(topics, 3, null_racks(3), consumer_racks, consumer_topics, non_rack, -1)
    rack_case(topics, 3, racks(3), consumer_racks, consumer_topics, non_rack, 0)
    rack_aware = [
        "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
        "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3",
    ]
    rack_case(topics, 2, racks(3), consumer_racks, consumer_topics, rack_aware, 0)
