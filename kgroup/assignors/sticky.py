"""Kafka's eager ``sticky`` assignor (KIP-54), interoperable with Java and kafka-python.

Members advertise their previous assignment and generation in Java's
StickyAssignor user data (see :mod:`kgroup.wire.sticky_user_data`); the
leader reads ownership from there, as Java's StickyAssignor does, because an
eager member has revoked everything before it joins.  When a subscription
carries no decodable sticky user data we fall back to its
``owned_partitions`` / ``generation_id`` (a departure from Java, which would
treat the member as owning nothing): callers that build ``Subscription``
values directly get stickiness without encoding bytes.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from kgroup.assignors._sticky_engine import MemberInput, sticky_assign
from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.errors import InvalidProtocolMetadata
from kgroup.values import NO_GENERATION, Assignment, Subscription, TopicPartition
from kgroup.wire.sticky_user_data import decode_sticky_user_data, encode_sticky_user_data

__all__ = ["StickyAssignor"]


def member_inputs_from_user_data(subscriptions: Mapping[str, Subscription]) -> dict[str, MemberInput]:
    inputs = {}
    for member_id, sub in subscriptions.items():
        owned: Sequence[TopicPartition] = sub.owned_partitions
        generation_id = sub.generation_id
        if sub.user_data:
            try:
                decoded, decoded_generation = decode_sticky_user_data(sub.user_data)
            except InvalidProtocolMetadata:
                pass  # like Java: unreadable user data means no previous assignment from it
            else:
                owned = decoded
                generation_id = NO_GENERATION if decoded_generation is None else decoded_generation
        inputs[member_id] = MemberInput(sub.topics, owned, generation_id, sub.rack_id)
    return inputs


class StickyAssignor(Assignor):
    """Balanced, maximally sticky, generation-aware eager assignor."""

    name = "sticky"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Optional[PartitionRacks] = None,
    ) -> dict[str, Assignment]:
        inputs = member_inputs_from_user_data(subscriptions)
        result = sticky_assign(partitions_per_topic, inputs, partition_racks)
        return {m: Assignment(partitions=parts) for m, parts in result.items()}

    def subscription_user_data(
        self, topics: Sequence[str], owned: Sequence, generation_id: int
    ) -> Optional[bytes]:
        """Java's StickyAssignor v1 user data: the owned partitions and their generation."""
        return encode_sticky_user_data(owned, generation_id)
