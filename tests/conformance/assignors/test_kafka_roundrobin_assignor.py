"""Kafka RoundRobinAssignorTest (clients, trunk), ported for kgroup's ``roundrobin`` assignor (no racks)."""
from __future__ import annotations

from kgroup.assignors import get_assignor
from kgroup.values import Subscription, TopicPartition as TP


def tp(topic, partition):
    return TP(topic, partition)


def assign(partitions_per_topic, subscriptions):
    result = get_assignor("roundrobin").assign(partitions_per_topic, subscriptions)
    return {m: list(a.partitions) for m, a in result.items()}


def static(topics, instance_id):
    return Subscription(topics, group_instance_id=instance_id)


def by_instance(assignment, subscriptions):
    """RoundRobinAssignorTest.checkStaticAssignment."""
    return {s.group_instance_id: assignment[m] for m, s in subscriptions.items() if s.group_instance_id}


TWO = ["topic1", "topic2"]


def test_one_consumer_no_topic():
    """Kafka RoundRobinAssignorTest.testOneConsumerNoTopic."""
    assert assign({}, {"consumer": Subscription([])}) == {"consumer": []}


def test_one_consumer_nonexistent_topic():
    """Kafka RoundRobinAssignorTest.testOneConsumerNonexistentTopic."""
    assert assign({}, {"consumer": Subscription(["topic"])}) == {"consumer": []}


def test_one_consumer_one_topic():
    """Kafka RoundRobinAssignorTest.testOneConsumerOneTopic."""
    assert assign({"topic": 3}, {"consumer": Subscription(["topic"])}) == {
        "consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]
    }


def test_only_assigns_partitions_from_subscribed_topics():
    """Kafka RoundRobinAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics."""
    assert assign({"topic": 3, "other": 3}, {"consumer": Subscription(["topic"])}) == {
        "consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]
    }


def test_one_consumer_multiple_topics():
    """Kafka RoundRobinAssignorTest.testOneConsumerMultipleTopics."""
    assert assign({"topic1": 1, "topic2": 2}, {"consumer": Subscription(TWO)}) == {
        "consumer": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]
    }


def test_two_consumers_one_topic_one_partition():
    """Kafka RoundRobinAssignorTest.testTwoConsumersOneTopicOnePartition."""
    subs = {"consumer1": Subscription(["topic"]), "consumer2": Subscription(["topic"])}
    assert assign({"topic": 1}, subs) == {"consumer1": [tp("topic", 0)], "consumer2": []}


def test_two_consumers_one_topic_two_partitions():
    """Kafka RoundRobinAssignorTest.testTwoConsumersOneTopicTwoPartitions."""
    subs = {"consumer1": Subscription(["topic"]), "consumer2": Subscription(["topic"])}
    assert assign({"topic": 2}, subs) == {"consumer1": [tp("topic", 0)], "consumer2": [tp("topic", 1)]}


def test_multiple_consumers_mixed_topics():
    """Kafka RoundRobinAssignorTest.testMultipleConsumersMixedTopics."""
    subs = {
        "consumer1": Subscription(["topic1"]),
        "consumer2": Subscription(TWO),
        "consumer3": Subscription(["topic1"]),
    }
    assert assign({"topic1": 3, "topic2": 2}, subs) == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 2)],
    }


def test_two_dynamic_consumers_two_topics_six_partitions():
    """Kafka RoundRobinAssignorTest.testTwoDynamicConsumersTwoTopicsSixPartitions."""
    subs = {"consumer1": Subscription(TWO), "consumer2": Subscription(TWO)}
    assert assign({"topic1": 3, "topic2": 3}, subs) == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_two_static_consumers_two_topics_six_partitions():
    """Kafka RoundRobinAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions: ordered by instance id."""
    subs = {"consumer-b": static(TWO, "instance1"), "consumer-a": static(TWO, "instance2")}
    assert assign({"topic1": 3, "topic2": 3}, subs) == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions():
    """Kafka RoundRobinAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions."""
    subs = {"consumer-b": static(TWO, "instance1"), "consumer-a": Subscription(TWO)}
    assert assign({"topic1": 3, "topic2": 3}, subs) == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_static_member_round_robin_assignment_persistent():
    """Kafka RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent."""
    ppt = {"topic1": 3, "topic2": 3}
    subs = {f"consumer{i}": static(TWO, f"instance{i}") for i in (1, 2, 3)}
    subs["consumer4"] = Subscription(TWO)
    expected = {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
        "consumer3": [tp("topic1", 2)],
        "consumer4": [tp("topic2", 0)],
    }
    assert assign(ppt, subs) == expected
    # Replace dynamic member 4 with a new dynamic member 5.
    del subs["consumer4"]
    subs["consumer5"] = Subscription(TWO)
    expected["consumer5"] = expected.pop("consumer4")
    assert assign(ppt, subs) == expected


def test_static_member_round_robin_assignment_persistent_after_member_id_changes():
    """Kafka RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges."""
    ppt = {"topic1": 5, "topic2": 5}
    subs = {f"consumer{i}": static(TWO, f"instance{i}") for i in (1, 2, 3)}
    first = by_instance(assign(ppt, subs), subs)
    assert first == {
        "instance1": [tp("topic1", 0), tp("topic1", 3), tp("topic2", 1), tp("topic2", 4)],
        "instance2": [tp("topic1", 1), tp("topic1", 4), tp("topic2", 2)],
        "instance3": [tp("topic1", 2), tp("topic2", 0), tp("topic2", 3)],
    }
    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert by_instance(assign(ppt, subs), subs) == first
