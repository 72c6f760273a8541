"""kgroup's ``TopicPartition`` ↔ kafka-python's, at the drop-in boundary.

kgroup's core uses :class:`kgroup.values.TopicPartition` so that it never
imports kafka-python; it compares equal to and hashes like
``kafka.structs.TopicPartition``, so dict and set lookups mix the two freely.
kafka-python, though, checks ``isinstance(tp, kafka.structs.TopicPartition)``
in ``KafkaConsumer.seek``/``assign``/``pause``/``position``... and in its
coordinator's commit methods, so whatever the drop-in hands to kafka-python
objects or to the application (subscription state, listener callbacks,
``committed()`` results) goes through :func:`to_kafka_partition` first.
"""
from __future__ import annotations

from typing import Iterable, Mapping, TypeVar

from kafka.structs import TopicPartition as KafkaTopicPartition

from kgroup.values import TopicPartition

__all__ = ["KafkaTopicPartition", "to_kafka_partition", "to_kafka_partitions", "with_kafka_keys"]

V = TypeVar("V")


def to_kafka_partition(tp) -> KafkaTopicPartition:
    """kgroup's TopicPartition as kafka-python's; anything else unchanged.

    Only kgroup's class is converted: a plain tuple or a wrong value is left for
    kafka-python to accept or reject as stock does.
    """
    if type(tp) is TopicPartition:
        return KafkaTopicPartition(tp.topic, tp.partition)
    return tp


def to_kafka_partitions(partitions: Iterable) -> list:
    return [to_kafka_partition(tp) for tp in partitions]


def with_kafka_keys(mapping: Mapping[object, V]) -> dict:
    return {to_kafka_partition(tp): value for tp, value in mapping.items()}
