"""Frozen value types shared by the assignors, the member and the coordinator.

``TopicPartition`` is kgroup's own named tuple with kafka-python's field
names and order, so it compares equal to and hashes like
``kafka.structs.TopicPartition``: dict keys and sets mix freely.  kgroup does
not import kafka-python here (it would pull in ``socket``, ``ssl``,
``selectors`` and ``threading``, about 150 modules); only the drop-in under
``kgroup.io.kafka_python`` converts, where kafka-python code checks
``isinstance(tp, kafka.structs.TopicPartition)``.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple, Optional

import attrs

__all__ = ["TopicPartition", "Subscription", "Assignment", "NO_GENERATION", "INTERNAL_TOPICS"]

#: Generation id of a member that has not completed a join (Kafka's -1).
NO_GENERATION = -1
#: Kafka's Topic.INTERNAL_TOPICS: never matched by a subscription pattern (the consumer's
#: exclude.internal.topics) nor by kgroup's coordinator resolving a regex.
INTERNAL_TOPICS = frozenset(("__consumer_offsets", "__transaction_state"))


class TopicPartition(NamedTuple):
    """One partition of one topic; equal to (and hashing like) kafka-python's ``TopicPartition``."""

    topic: str
    partition: int


def _tuple_of_str(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _tuple_of_tp(value: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    # Any (topic, partition) pair, kafka-python's TopicPartition included, becomes kgroup's own.
    return tuple(tp if type(tp) is TopicPartition else TopicPartition(*tp) for tp in value)


@attrs.frozen
class Subscription:
    """What one member asks for in a rebalance (ConsumerProtocolSubscription v0-v3).

    ``owned_partitions`` and ``generation_id`` let sticky assignors keep a
    member's current partitions; ``generation_id`` is the generation in which
    the member was given them (``NO_GENERATION`` when unknown).
    """

    topics: tuple[str, ...] = attrs.field(converter=_tuple_of_str)
    owned_partitions: tuple[TopicPartition, ...] = attrs.field(default=(), converter=_tuple_of_tp)
    generation_id: int = NO_GENERATION
    group_instance_id: Optional[str] = None
    rack_id: Optional[str] = None
    user_data: Optional[bytes] = None


@attrs.frozen
class Assignment:
    """What the leader gives one member (ConsumerProtocolAssignment v0-v3)."""

    partitions: tuple[TopicPartition, ...] = attrs.field(default=(), converter=_tuple_of_tp)
    user_data: Optional[bytes] = None
