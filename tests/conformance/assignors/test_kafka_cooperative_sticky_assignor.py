"""Kafka CooperativeStickyAssignorTest (clients, trunk), ported for kgroup's ``cooperative-sticky``.

Departure (docs/conformance/assignors.md): Java's CooperativeStickyAssignor
writes its generation into user data for ConsumerProtocol v0/v1 peers and
reads it back when a subscription carries no generation.  kgroup's wire
layer always speaks v2+, so the assignor emits no user data, ignores any,
and reads ownership and generation from ``Subscription.owned_partitions`` /
``generation_id`` only.  The memberData tests below assert that behaviour
through ``assign``; where Java's answer would differ it is said.
"""
from __future__ import annotations

import struct

import pytest

from assignors_kafka_kit import GENERATION_ID, RACK_CONFIGS, KafkaAssignorGroup, is_fully_balanced
from kgroup.assignors import get_assignor
from kgroup.values import NO_GENERATION, Subscription, TopicPartition as TP
from kgroup.wire.sticky_user_data import encode_sticky_user_data

WITH_RACKS = pytest.mark.parametrize("rack_config", RACK_CONFIGS)


def tp(topic, partition):
    return TP(topic, partition)


def java_generation_user_data(generation_id: int) -> bytes:
    """COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0: one int32 generation."""
    return struct.pack(">i", generation_id)


def test_encode_and_decode_generation():
    """Kafka CooperativeStickyAssignorTest.testEncodeAndDecodeGeneration.

    Departure: kgroup writes no generation user data (its members send the
    generation in the v2+ subscription field).
    """
    assignor = get_assignor("cooperative-sticky")
    assert assignor.subscription_user_data(["topic"], [], NO_GENERATION) is None
    assert assignor.subscription_user_data(["topic"], [], 10) is None


def test_decode_generation():
    """Kafka CooperativeStickyAssignorTest.testDecodeGeneration: no user data, no generation.

    A subscription without a generation claims with NO_GENERATION, so any
    claim with a generation beats it.
    """
    subs = {
        "a": Subscription(["topic"], owned_partitions=(tp("topic", 0),)),
        "b": Subscription(["topic"], owned_partitions=(tp("topic", 0),), generation_id=0),
    }
    result = get_assignor("cooperative-sticky").assign({"topic": 2}, subs)
    assert tp("topic", 0) in result["b"].partitions


@WITH_RACKS
@pytest.mark.parametrize(
    "partitions,expected_c1",
    [(3, [tp("topic", 1)]), (4, [tp("topic", 1), tp("topic", 3)])],
    ids=["EqualPartitionsPerConsumer", "UnequalPartitionsPerConsumer"],
)
def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation(
    rack_config, partitions, expected_c1
):
    """Kafka CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultiple
    ConsumersInSameGenerationWithEqualPartitionsPerConsumer and ...WithUnequalPartitionsPerConsumer.

    topic-0 counts as owned by both claimers: nobody gets it until both have revoked it.
    """
    g = KafkaAssignorGroup("cooperative-sticky", rack_config)
    g.add_topic("topic", partitions)
    g.subscriptions = {
        "consumer1": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 1)], GENERATION_ID, 0),
        "consumer2": g.subscription_v2(["topic"], [tp("topic", 0), tp("topic", 2)], GENERATION_ID, 1),
        "consumer3": g.subscription_v2(["topic"], [], GENERATION_ID, 2),
    }
    assignment = g.assign()
    assert assignment["consumer1"] == expected_c1
    assert assignment["consumer2"] == [tp("topic", 2)]
    assert assignment["consumer3"] == []
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


def test_member_data_with_inconsistent_data():
    """Kafka CooperativeStickyAssignorTest.testMemberDataWithInconsistentData.

    The owned partitions come from the subscription, not the user data (as
    in Java).  The generation: Java takes it from the user data when the
    subscription has none; kgroup does not (departure), so this member's
    claim has NO_GENERATION and loses to a claim made in any generation.
    """
    subs = {
        "a": Subscription(["topic"], owned_partitions=(tp("topic", 0),),
                          user_data=java_generation_user_data(GENERATION_ID)),
        "b": Subscription(["topic"], owned_partitions=(tp("topic", 1),), generation_id=GENERATION_ID),
    }
    result = get_assignor("cooperative-sticky").assign({"topic": 2}, subs)
    assert result["a"].partitions == (tp("topic", 0),)  # the subscription's owned partition, kept
    assert result["b"].partitions == (tp("topic", 1),)


@pytest.mark.parametrize("user_data_generation", [GENERATION_ID, GENERATION_ID - 1], ids=["Equal", "Higher"])
def test_member_data_with_empty_partitions_and_generation(user_data_generation):
    """Kafka CooperativeStickyAssignorTest.testMemberDataWithEmptyPartitionsAndEqualGeneration and
    ...AndHigherGeneration: owned partitions listed only in user data are not claims."""
    owned_in_user_data = [tp("topic", 0)]
    subs = {
        "a": Subscription(["topic"], owned_partitions=(), generation_id=GENERATION_ID,
                          user_data=encode_sticky_user_data(owned_in_user_data, user_data_generation)),
        "b": Subscription(["topic"], owned_partitions=(tp("topic", 1),), generation_id=GENERATION_ID),
        "c": Subscription(["topic"], owned_partitions=(), generation_id=GENERATION_ID),
    }
    result = get_assignor("cooperative-sticky").assign({"topic": 3}, subs)
    # Nothing is withheld for "a": it claims nothing, so topic-0 is free to go anywhere now.
    assert sum(len(a.partitions) for a in result.values()) == 3


def test_assignor_with_old_version_subscriptions():
    """Kafka CooperativeStickyAssignorTest.testAssignorWithOldVersionSubscriptions.

    V1 subscriptions: owned partitions, generation only in user data (which
    kgroup ignores, so they claim with NO_GENERATION; nothing conflicts here).
    """
    g = KafkaAssignorGroup("cooperative-sticky")
    g.add_topic("topic1", 3)

    def v1(owned):
        return Subscription(["topic1"], owned_partitions=tuple(owned),
                            user_data=java_generation_user_data(GENERATION_ID))

    g.subscriptions = {
        "consumer1": v1([tp("topic1", 0)]),
        "consumer2": v1([tp("topic1", 1)]),
        "consumer3": g.subscription_v2(["topic1"], [], GENERATION_ID, 2),
    }
    assignment = g.assign()
    assert assignment == {
        "consumer1": [tp("topic1", 0)], "consumer2": [tp("topic1", 1)], "consumer3": [tp("topic1", 2)]
    }
    assert is_fully_balanced(g.verify_validity_and_balance(assignment))


def test_uniform_subscription_transfer_ownership_list_is_right():
    """Kafka CooperativeStickyAssignorTest.testUniformSubscriptionTransferOwnershipListIsRight.

    Replication factor 1 over two broker racks: c0 (rack a) owns topic1-0
    and -1, c1 (rack b) owns -2 and -3; -1 lives on b and -2 on a, so both
    transfer (Java: partitionsTransferringOwnership has 2 entries), and the
    cooperative first round withholds both.
    """
    g = KafkaAssignorGroup("cooperative-sticky")
    g.replication_factor, g.num_broker_racks, g.has_consumer_rack = 1, 2, True
    g.add_topic("topic1", 4)
    g.subscriptions = {
        "c0": g.subscription_v2(["topic1"], [tp("topic1", 0), tp("topic1", 1)], GENERATION_ID, 0),
        "c1": g.subscription_v2(["topic1"], [tp("topic1", 2), tp("topic1", 3)], GENERATION_ID, 1),
    }
    assert g.transferring_ownership() == {tp("topic1", 1): "c1", tp("topic1", 2): "c0"}
    assignment = g.assign()
    assert assignment == {"c0": [tp("topic1", 0)], "c1": [tp("topic1", 3)]}
    final = g.verify_validity_and_balance(assignment)
    assert final == {"c0": [tp("topic1", 0), tp("topic1", 2)], "c1": [tp("topic1", 1), tp("topic1", 3)]}
