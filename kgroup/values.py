"""Frozen value types shared by the assignors, the member and the coordinator.

``TopicPartition`` is kafka-python's own named tuple, so values flow between
kgroup and a stock ``KafkaConsumer`` without conversion.
"""
from __future__ import annotations

from typing import Iterable, Optional

import attrs
from kafka.structs import TopicPartition

__all__ = ["TopicPartition", "Subscription", "Assignment", "NO_GENERATION"]

#: Generation id of a member that has not completed a join (Kafka's -1).
NO_GENERATION = -1


def _tuple_of_str(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _tuple_of_tp(value: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    return tuple(tp if isinstance(tp, TopicPartition) else TopicPartition(*tp) for tp in value)


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
