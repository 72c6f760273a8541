"""Kafka StickyAssignorTest (clients, trunk), ported for kgroup's eager ``sticky`` assignor.

Plus AbstractStickyAssignorTest.testMemberData, whose subject (how an
assignor reads a subscription's owned partitions and generation) is
assignor-specific.  kgroup's ``member_inputs_from_user_data`` is the
StickyAssignor's ``memberData``.
"""
from __future__ import annotations

import struct

import pytest

from assignors_kafka_kit import GENERATION_ID, RACK_CONFIGS, KafkaAssignorGroup, is_fully_balanced
from kgroup.assignors.sticky import member_inputs_from_user_data
from kgroup.values import NO_GENERATION, Subscription, TopicPartition as TP
from kgroup.wire.sticky_user_data import encode_sticky_user_data

WITH_RACKS = pytest.mark.parametrize("rack_config", RACK_CONFIGS)
#: StickyAssignorTest.rackAndSubscriptionCombinations
RACKS_AND_EQUAL = pytest.mark.parametrize(
    "rack_config,all_equal", [(r, equal) for equal in (True, False) for r in RACK_CONFIGS]
)


def tp(topic, partition):
    return TP(topic, partition)


def member_data(subscription: Subscription):
    (inputs,) = member_inputs_from_user_data({"m": subscription}).values()
    return list(inputs.owned), inputs.generation_id


def v0(topics, owned, generation_id, rack_id=None):
    """StickyAssignorTest.buildSubscriptionV0: user data only, no owned partitions."""
    user_data = encode_sticky_user_data(owned, generation_id)
    return Subscription(list(topics), user_data=user_data, rack_id=rack_id)


def v1(topics, owned, generation_id):
    """StickyAssignorTest.buildSubscriptionV1: user data and owned partitions, no generation."""
    return Subscription(list(topics), owned_partitions=tuple(owned),
                        user_data=encode_sticky_user_data(owned, generation_id))


def old_schema_user_data(owned) -> bytes:
    """StickyAssignorTest.buildSubscriptionWithOldSchema: STICKY_ASSIGNOR_USER_DATA_V0, no generation."""
    by_topic: dict = {}
    for t, p in owned:
        by_topic.setdefault(t, []).append(p)
    out = [struct.pack(">i", len(by_topic))]
    for t, ps in by_topic.items():
        out.append(struct.pack(">h", len(t)) + t.encode() + struct.pack(f">i{len(ps)}i", len(ps), *ps))
    return b"".join(out)


def test_member_data():
    """Kafka AbstractStickyAssignorTest.testMemberData (StickyAssignor: V0, V1 and V2 subscriptions)."""
    owned = [tp("topic1", 0), tp("topic2", 1)]
    subs = [
        v0(["topic"], owned, GENERATION_ID),
        v1(["topic"], owned, GENERATION_ID),
        KafkaAssignorGroup("sticky").subscription_v2(["topic"], owned, GENERATION_ID, 2),
    ]
    for sub in subs:
        assert member_data(sub) == (owned, GENERATION_ID)


@WITH_RACKS
@pytest.mark.parametrize(
    "partitions,expected_c1",
    [(3, [tp("topic", 1)]), (4, [tp("topic", 1), tp("topic", 3)])],
    ids=["EqualPartitionsPerConsumer", "UnequalPartitionsPerConsumer"],
)
def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation(
    rack_config, partitions, expected_c1
):
    """Kafka StickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersIn
    SameGenerationWithEqualPartitionsPerConsumer and ...WithUnequalPartitionsPerConsumer (the two ids)."""
    g = KafkaAssignorGroup("sticky", rack_config)
    g.add_topic("topic", partitions)
    g.subscriptions = {
        "consumer1": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 1)], GENERATION_ID, 0),
        "consumer2": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 2)], GENERATION_ID, 1),
        "consumer3": g.subscription_v2(["topic"], [], GENERATION_ID, 2),
    }
    assignment = g.assign()
    assert assignment["consumer1"] == expected_c1
    assert assignment["consumer2"] == [tp("topic", 2)]
    assert assignment["consumer3"] == [tp("topic", 0)]
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@RACKS_AND_EQUAL
def test_assignment_with_multiple_generations1(rack_config, all_equal):
    """Kafka StickyAssignorTest.testAssignmentWithMultipleGenerations1."""
    g = KafkaAssignorGroup("sticky", rack_config)
    all_topics = ["topic", "topic2"]
    c2_topics = all_topics if all_equal else ["topic"]
    g.add_topic("topic", 6)
    g.add_topic("topic2", 6)
    g.subscriptions = {
        "consumer1": g.subscription(all_topics, 0),
        "consumer2": g.subscription(c2_topics, 1),
        "consumer3": g.subscription(all_topics, 2),
    }
    r1 = g.assign()
    assert [len(r1[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]
    assert is_fully_balanced(g.verify_validity_and_balance(r1))

    g.subscriptions["consumer1"] = g.subscription_v2(all_topics, r1["consumer1"], GENERATION_ID, 0)
    g.subscriptions["consumer2"] = g.subscription_v2(c2_topics, r1["consumer2"], GENERATION_ID, 1)
    del g.subscriptions["consumer3"]
    r2 = g.assign()
    assert len(r2["consumer1"]) == 6 and len(r2["consumer2"]) == 6
    if all_equal:
        assert set(r1["consumer1"]) <= set(r2["consumer1"])
    assert set(r1["consumer2"]) <= set(r2["consumer2"])
    assert is_fully_balanced(g.verify_validity_and_balance(r2))
    assert set(r2["consumer2"]) & set(r1["consumer3"])

    del g.subscriptions["consumer1"]
    g.subscriptions["consumer2"] = g.subscription_v2(c2_topics, r2["consumer2"], 2, 1)
    g.subscriptions["consumer3"] = g.subscription_v2(all_topics, r1["consumer3"], 1, 2)
    r3 = g.assign()
    assert len(r3["consumer2"]) == 6 and len(r3["consumer3"]) == 6
    assert not set(r3["consumer2"]) & set(r3["consumer3"])
    assert is_fully_balanced(g.verify_validity_and_balance(r3))


@RACKS_AND_EQUAL
def test_assignment_with_multiple_generations2(rack_config, all_equal):
    """Kafka StickyAssignorTest.testAssignmentWithMultipleGenerations2."""
    g = KafkaAssignorGroup("sticky", rack_config)
    all_topics = ["topic", "topic2", "topic3"]
    c1_topics = all_topics if all_equal else ["topic"]
    c3_topics = all_topics if all_equal else ["topic", "topic2"]
    for t in all_topics:
        g.add_topic(t, 4)
    g.subscriptions = {
        "consumer1": g.subscription(c1_topics, 0),
        "consumer2": g.subscription(all_topics, 1),
        "consumer3": g.subscription(c3_topics, 2),
    }
    r1 = g.assign()
    assert [len(r1[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]
    assert is_fully_balanced(g.verify_validity_and_balance(r1))

    del g.subscriptions["consumer1"], g.subscriptions["consumer3"]
    g.subscriptions["consumer2"] = g.subscription_v2(all_topics, r1["consumer2"], 1, 1)
    r2 = g.assign()
    assert len(r2["consumer2"]) == 12 and set(r1["consumer2"]) <= set(r2["consumer2"])
    assert is_fully_balanced(g.verify_validity_and_balance(r2))

    g.subscriptions["consumer1"] = g.subscription_v2(c1_topics, r1["consumer1"], 1, 0)
    g.subscriptions["consumer2"] = g.subscription_v2(all_topics, r2["consumer2"], 2, 1)
    g.subscriptions["consumer3"] = g.subscription_v2(c3_topics, r1["consumer3"], 1, 2)
    r3 = g.assign()
    assert [len(r3[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]
    assert is_fully_balanced(g.verify_validity_and_balance(r3))


@RACKS_AND_EQUAL
def test_assignment_with_conflicting_previous_generations(rack_config, all_equal):
    """Kafka StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations."""
    g = KafkaAssignorGroup("sticky", rack_config)
    all_topics = ["topic", "topic2", "topic3"]
    for t in all_topics:
        g.add_topic(t, 4)
    c1_topics = all_topics if all_equal else ["topic"]
    c2_topics = all_topics if all_equal else ["topic", "topic2"]
    if all_equal:
        c1_owned = [tp("topic", 0), tp("topic", 1), tp("topic", 2)]
        c1_owned += [tp("topic2", 2), tp("topic2", 3), tp("topic3", 0)]
    else:
        c1_owned = [tp("topic", p) for p in range(4)]
    c2_owned = [tp("topic", 0), tp("topic", 1)] + [tp("topic2", p) for p in range(4)]
    c3_owned = [tp("topic", 2), tp("topic", 3)] + [tp("topic3", p) for p in range(4)]
    g.subscriptions = {
        "consumer1": g.subscription_v2(c1_topics, c1_owned, 1, 0),
        "consumer2": g.subscription_v2(c2_topics, c2_owned, 2, 1),
        "consumer3": g.subscription_v2(all_topics, c3_owned, 2, 2),
    }
    assignment = g.assign()
    assert [len(assignment[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]
    assert set(assignment["consumer2"]) <= set(c2_owned)
    assert set(assignment["consumer3"]) <= set(c3_owned)
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@WITH_RACKS
def test_schema_backward_compatibility(rack_config):
    """Kafka StickyAssignorTest.testSchemaBackwardCompatibility (user data v0, without generation)."""
    g = KafkaAssignorGroup("sticky", rack_config)
    g.add_topic("topic", 3)
    g.subscriptions = {f"consumer{i + 1}": g.subscription(["topic"], i) for i in range(3)}
    c1_owned = [tp("topic", 0), tp("topic", 2)]
    c2_owned = [tp("topic", 1)]
    g.subscriptions["consumer1"] = g.subscription_v2(["topic"], c1_owned, 1, 0)
    g.subscriptions["consumer2"] = Subscription(["topic"], user_data=old_schema_user_data(c2_owned),
                                                rack_id=g.consumer_rack(1))
    assignment = g.assign()
    assert [len(assignment[m]) for m in ("consumer1", "consumer2", "consumer3")] == [1, 1, 1]
    assert set(assignment["consumer1"]) <= set(c1_owned)
    assert set(assignment["consumer2"]) <= set(c2_owned)
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


@WITH_RACKS
def test_member_data_with_inconsistent_data(rack_config):
    """Kafka StickyAssignorTest.testMemberDataWithInconsistentData: user data wins over the owned field."""
    sub = Subscription(["topic"], owned_partitions=(tp("topic", 0),),
                       user_data=encode_sticky_user_data([tp("topic", 1)], GENERATION_ID))
    assert member_data(sub) == ([tp("topic", 1)], GENERATION_ID)


def test_member_data_will_honor_user_data():
    """Kafka StickyAssignorTest.testMemberDataWillHonorUserData: eager sticky always reads the user data."""
    owned = [tp("topic1", 0), tp("topic2", 1)]
    sub = Subscription(["topic"], owned_partitions=(), generation_id=GENERATION_ID,
                       user_data=encode_sticky_user_data(owned, GENERATION_ID - 1))
    assert member_data(sub) == (owned, GENERATION_ID - 1)


def test_assignor_with_old_version_subscriptions():
    """Kafka StickyAssignorTest.testAssignorWithOldVersionSubscriptions."""
    g = KafkaAssignorGroup("sticky")
    g.add_topic("topic1", 3)
    g.subscriptions = {
        "consumer1": v0(["topic1"], [tp("topic1", 0)], GENERATION_ID),
        "consumer2": v1(["topic1"], [tp("topic1", 1)], GENERATION_ID),
        "consumer3": g.subscription_v2(["topic1"], [], GENERATION_ID, 2),
    }
    assignment = g.assign()
    assert assignment == {
        "consumer1": [tp("topic1", 0)], "consumer2": [tp("topic1", 1)], "consumer3": [tp("topic1", 2)]
    }
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


def test_old_schema_without_generation_reads_as_no_generation():
    """StickyAssignor.deserializeTopicPartitionAssignment: v0 user data has no generation."""
    sub = Subscription(["topic"], user_data=old_schema_user_data([tp("topic", 1)]))
    assert member_data(sub) == ([tp("topic", 1)], NO_GENERATION)
