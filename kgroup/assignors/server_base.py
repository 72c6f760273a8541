"""The interface of server-side assignors (KIP-848's ConsumerGroupPartitionAssignor).

With the consumer group protocol the coordinator computes the target
assignment itself: it hands the assignor every member's subscription and
current target partitions, and the partition count of every subscribed topic
that exists.  Like the client-side assignors these are pure and stateless.
"""
from __future__ import annotations

import abc
from typing import AbstractSet, ClassVar, Mapping, Optional

import attrs

from kgroup.values import TopicPartition

__all__ = ["AssignmentMember", "ServerAssignor", "partitions_of"]


def _frozen_names(value) -> frozenset[str]:
    return frozenset(value)


def _frozen_tps(value) -> frozenset[TopicPartition]:
    return frozenset(tp if type(tp) is TopicPartition else TopicPartition(*tp) for tp in value)


@attrs.frozen
class AssignmentMember:
    """What an assignor knows of one member (Kafka's MemberSubscriptionAndAssignmentImpl)."""

    member_id: str
    subscribed_topics: frozenset[str] = attrs.field(converter=_frozen_names)
    #: The member's partitions in the current target assignment (what stickiness keeps).
    current_partitions: frozenset[TopicPartition] = attrs.field(default=frozenset(), converter=_frozen_tps)
    instance_id: Optional[str] = None
    rack_id: Optional[str] = None


class ServerAssignor(abc.ABC):
    """Base class of server-side assignors, found by name in :func:`kgroup.assignors.get_server_assignor`."""

    #: The name members ask for in ConsumerGroupHeartbeat's ServerAssignor.
    name: ClassVar[str]
    #: True when ``assign`` takes ``partition_racks`` (KIP-881's replica racks, as
    #: :data:`kgroup.assignors.PartitionRacks`); the coordinator looks them up only for such assignors,
    #: so assignors written for the two-argument ``assign`` keep working.
    uses_partition_racks: ClassVar[bool] = False

    @abc.abstractmethod
    def assign(self, members: Mapping[str, AssignmentMember],
               partitions_per_topic: Mapping[str, int]) -> dict[str, frozenset[TopicPartition]]:
        """Return the target partitions of every member id in ``members``.

        ``partitions_per_topic`` holds the subscribed topics that exist; a
        subscribed topic missing from it gets no partitions.
        """


def partitions_of(topics: AbstractSet[str], partitions_per_topic: Mapping[str, int]) -> list[TopicPartition]:
    """Every partition of the existing ``topics``, sorted."""
    return [TopicPartition(topic, p) for topic in sorted(topics) if topic in partitions_per_topic
            for p in range(partitions_per_topic[topic])]
