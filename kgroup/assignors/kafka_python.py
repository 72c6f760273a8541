"""Run any kgroup assignor inside a stock kafka-python 3.0 ``KafkaConsumer``.

>>> from kafka import KafkaConsumer
>>> from kgroup.assignors.kafka_python import to_kafka_python
>>> consumer = KafkaConsumer(..., partition_assignment_strategy=[to_kafka_python("range")])

kafka-python's coordinator accepts assignor instances as well as classes,
calls ``metadata(topics)`` when it joins, ``assign(cluster, members)`` when it
leads (``members`` are JoinGroup member structs whose ``metadata`` is an
already decoded ``ConsumerProtocolSubscription``), and ``on_assignment`` after
SyncGroup.  It does not add owned partitions or the generation to the
subscription itself, so the adapter remembers its last assignment and
generation and writes them into ``metadata()``: owned partitions only when
the assignor supports COOPERATIVE (an eager member has revoked everything by
the time it joins, and Java's eager members send none), the generation
always, and both into the assignor's ``subscription_user_data``.
"""
from __future__ import annotations

from typing import Optional, Union

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.abstract import RebalanceProtocol as KafkaRebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kgroup.assignors import get_assignor
from kgroup.assignors.base import Assignor, RebalanceProtocol
from kgroup.values import NO_GENERATION, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription

__all__ = ["KafkaPythonAssignor", "to_kafka_python", "subscription_from_member"]

#: ConsumerProtocol version the adapter writes (Java 4.x writes v3 too).
PROTOCOL_VERSION = 3


def _group_by_topic(partitions) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return sorted((topic, sorted(numbers)) for topic, numbers in by_topic.items())


def _partition_racks(cluster, partitions_per_topic) -> Optional[dict]:
    """Racks of each partition's replicas, through ClusterMetadata's public API."""
    brokers = [b for b in cluster.brokers() if getattr(b, "rack", None)]
    if not brokers:
        return None
    return {
        topic: [
            frozenset(b.rack for b in brokers if cluster.is_replica_node(TopicPartition(topic, p), b.node_id))
            for p in range(count)
        ]
        for topic, count in partitions_per_topic.items()
    }


def subscription_from_member(member) -> Subscription:
    """A kgroup ``Subscription`` from a kafka-python JoinGroup member struct.

    Fields the sender's protocol version lacks fall back to their defaults.
    """
    metadata = member.metadata
    if isinstance(metadata, (bytes, bytearray, memoryview)):
        # undecoded peer bytes: our decoder raises InvalidProtocolMetadata on garbage
        return decode_subscription(bytes(metadata), getattr(member, "group_instance_id", None))
    owned = [
        TopicPartition(entry.topic, p)
        for entry in (getattr(metadata, "owned_partitions", None) or ())
        for p in entry.partitions
    ]
    generation_id = getattr(metadata, "generation_id", None)
    return Subscription(
        topics=list(metadata.topics or ()),
        owned_partitions=owned,
        generation_id=NO_GENERATION if generation_id is None else generation_id,
        group_instance_id=getattr(member, "group_instance_id", None),
        rack_id=getattr(metadata, "rack_id", None),
        user_data=None if metadata.user_data is None else bytes(metadata.user_data),
    )


def assigned_partitions(assignment) -> list[TopicPartition]:
    """The partitions of a kafka-python ``ConsumerProtocolAssignment``, however it was built.

    Entries are decoded structs, structs built without a version (which
    only answer by attribute) or stock assignors' ``(topic, partitions)``
    tuples.
    """
    partitions = []
    for entry in assignment.assigned_partitions or ():
        topic, numbers = (entry.topic, entry.partitions) if hasattr(entry, "topic") else entry
        partitions.extend(TopicPartition(topic, p) for p in numbers)
    return partitions


class KafkaPythonAssignor(AbstractPartitionAssignor):
    """kafka-python's assignor interface around one kgroup :class:`Assignor`."""

    def __init__(self, assignor: Assignor, client_rack: Optional[str] = None) -> None:
        if not isinstance(assignor, Assignor):
            raise TypeError(f"expected a kgroup Assignor, got {assignor!r}")
        self.assignor = assignor
        #: advertised as the subscription's rack id (KIP-881), like Java's client.rack
        self.client_rack = client_rack
        self._owned: list[TopicPartition] = []
        self._generation_id = NO_GENERATION

    @property
    def name(self) -> str:
        return self.assignor.name

    def supported_protocols(self) -> list:
        return [KafkaRebalanceProtocol(int(p)) for p in self.assignor.supported_protocols]

    def _cooperative(self) -> bool:
        return RebalanceProtocol.COOPERATIVE in self.assignor.supported_protocols

    def metadata(self, topics) -> ConsumerProtocolSubscription:
        topics = sorted(topics)
        owned = self._owned if self._cooperative() else []
        user_data = self.assignor.subscription_user_data(topics, list(self._owned), self._generation_id)
        return ConsumerProtocolSubscription(
            version=PROTOCOL_VERSION,
            topics=topics,
            user_data=user_data,
            owned_partitions=[
                ConsumerProtocolSubscription.TopicPartition(version=PROTOCOL_VERSION, topic=topic, partitions=numbers)
                for topic, numbers in _group_by_topic(owned)
            ],
            generation_id=self._generation_id,
            rack_id=self.client_rack,
        )

    def assign(self, cluster, members) -> dict:
        subscriptions = {member.member_id: subscription_from_member(member) for member in members}
        partitions_per_topic = {}
        for topic in {t for s in subscriptions.values() for t in s.topics}:
            partitions = cluster.partitions_for_topic(topic)
            if partitions:
                partitions_per_topic[topic] = len(partitions)
        racks = None
        if any(sub.rack_id is not None for sub in subscriptions.values()):
            racks = _partition_racks(cluster, partitions_per_topic)
        result = self.assignor.assign(partitions_per_topic, subscriptions, racks)
        return {
            member_id: ConsumerProtocolAssignment(
                version=PROTOCOL_VERSION,
                assigned_partitions=[
                    # The entries carry the version so they iterate as (topic, partitions)
                    # and ``partitions()`` works before encoding, like stock's tuples.
                    ConsumerProtocolAssignment.TopicPartition(version=PROTOCOL_VERSION, topic=topic,
                                                              partitions=numbers)
                    for topic, numbers in _group_by_topic(assignment.partitions)
                ],
                user_data=assignment.user_data,
            )
            for member_id, assignment in result.items()
        }

    def on_assignment(self, assignment, generation) -> None:
        self._owned = assigned_partitions(assignment)
        self._generation_id = generation


def to_kafka_python(
    assignor_or_name: Union[str, Assignor, type], client_rack: Optional[str] = None
) -> KafkaPythonAssignor:
    """An instance kafka-python's ``partition_assignment_strategy`` accepts.

    Takes a kgroup assignor instance, an assignor class, or a registered
    name (built-in or entry-point plugin).  ``client_rack`` is this
    consumer's rack, sent in its subscription for rack-aware assignors.
    """
    if isinstance(assignor_or_name, str):
        assignor = get_assignor(assignor_or_name)
    elif isinstance(assignor_or_name, type):
        assignor = assignor_or_name()
    else:
        assignor = assignor_or_name
    return KafkaPythonAssignor(assignor, client_rack)
