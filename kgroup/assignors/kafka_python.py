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

The other direction, :func:`from_kafka_python`, wraps a kafka-python
assignor (an application's own ``AbstractPartitionAssignor`` subclass) in
kgroup's :class:`Assignor` interface, so kgroup's member (and the drop-in
``kgroup.KafkaConsumer``) runs it: its ``metadata()`` supplies the
subscription's user data, its ``assign()`` runs when the member leads, and
the drop-in calls its ``on_assignment()`` after every SyncGroup, as
kafka-python's ``ConsumerCoordinator._on_join_complete`` does.
"""
from __future__ import annotations

from typing import Optional, Union

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.abstract import RebalanceProtocol as KafkaRebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.structs import TopicPartition as KafkaTopicPartition

from kgroup.assignors import get_assignor
from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.errors import ConfigError, GroupMemberError
from kgroup.values import NO_GENERATION, Assignment, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription

__all__ = [
    "KafkaPythonAssignor",
    "WrappedKafkaPythonAssignor",
    "assigned_partitions",
    "from_kafka_python",
    "kafka_python_assignment",
    "to_kafka_python",
    "subscription_from_member",
]

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
            frozenset(b.rack for b in brokers
                      if cluster.is_replica_node(KafkaTopicPartition(topic, p), b.node_id))
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
    partitions: list[TopicPartition] = []
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
                ConsumerProtocolSubscription.TopicPartition(
                    version=PROTOCOL_VERSION, topic=topic, partitions=numbers)
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


# -- the other direction: a kafka-python assignor as a kgroup Assignor -----------


class _ClusterView:
    """What a kafka-python assignor reads of ``ClusterMetadata``, answered from
    the partition counts the member assigns from (so the assignment and the
    leader's metadata snapshot agree); anything else is read from the real
    cluster when there is one."""

    def __init__(self, partitions_per_topic, cluster=None) -> None:
        self._counts = dict(partitions_per_topic)
        self._cluster = cluster

    def partitions_for_topic(self, topic):
        count = self._counts.get(topic)
        return None if count is None else set(range(count))

    available_partitions_for_topic = partitions_for_topic

    def topics(self, exclude_internal_topics=True):
        return set(self._counts)

    def __getattr__(self, name):
        if self._cluster is None:
            raise AttributeError(f"the assignment's cluster view has no {name!r} (no ClusterMetadata given)")
        return getattr(self._cluster, name)


def _subscription_struct(subscription: Subscription) -> ConsumerProtocolSubscription:
    """``subscription`` as kafka-python's coordinator hands it to ``assign``: a decoded struct."""
    struct = ConsumerProtocolSubscription(
        version=PROTOCOL_VERSION,
        topics=sorted(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=[
            ConsumerProtocolSubscription.TopicPartition(
                    version=PROTOCOL_VERSION, topic=topic, partitions=numbers)
            for topic, numbers in _group_by_topic(subscription.owned_partitions)
        ],
        generation_id=subscription.generation_id,
        rack_id=subscription.rack_id,
    )
    return ConsumerProtocolSubscription.decode(struct.encode())


def kafka_python_assignment(partitions, user_data: Optional[bytes] = None) -> ConsumerProtocolAssignment:
    """An assignment as kafka-python's coordinator passes it to ``on_assignment``: a decoded struct."""
    struct = ConsumerProtocolAssignment(
        version=PROTOCOL_VERSION,
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(
                version=PROTOCOL_VERSION, topic=topic, partitions=numbers)
            for topic, numbers in _group_by_topic(partitions)
        ],
        user_data=user_data,
    )
    return ConsumerProtocolAssignment.decode(struct.encode())


class WrappedKafkaPythonAssignor(Assignor):
    """kgroup's :class:`Assignor` interface around one kafka-python assignor instance.

    ``delegate``: a kgroup assignor that does the assignment work instead
    (kafka-python's own assignor classes map to kgroup's assignor of the
    same name, which speaks the same protocol); ``kafka_assignor`` still
    gets ``on_assignment``.  Without one, the kafka-python assignor's own
    ``metadata`` and ``assign`` run.  ``cluster``: kafka-python's
    ``ClusterMetadata``, for assignors that read more than partition counts.
    """

    def __init__(self, kafka_assignor, delegate: Optional[Assignor] = None, cluster=None) -> None:
        name = getattr(kafka_assignor, "name", None)
        if not isinstance(name, str) or not name:
            raise ConfigError(f"partition_assignment_strategy entry {kafka_assignor!r} has no assignor name")
        self.kafka_assignor = kafka_assignor
        self.delegate = delegate
        self.cluster = cluster
        self.name = name  # type: ignore[misc]  # per instance: the wrapped assignor's name
        if delegate is not None:
            protocols = tuple(delegate.supported_protocols)
        else:
            try:
                protocols = tuple(RebalanceProtocol(int(p)) for p in kafka_assignor.supported_protocols())
            except ValueError as exc:
                raise ConfigError(f"assignor {name!r} supports an unknown rebalance protocol: {exc}") from exc
        self.supported_protocols = protocols  # type: ignore[misc]  # per instance, as name

    def subscription_user_data(self, topics, owned, generation_id: int) -> Optional[bytes]:
        if self.delegate is not None:
            return self.delegate.subscription_user_data(topics, owned, generation_id)
        metadata = self.kafka_assignor.metadata(set(topics))
        user_data = getattr(metadata, "user_data", None)
        return None if user_data is None else bytes(user_data)

    def assign(self, partitions_per_topic, subscriptions, partition_racks: Optional[PartitionRacks] = None):
        if self.delegate is not None:
            return self.delegate.assign(partitions_per_topic, subscriptions, partition_racks)
        members = []
        for member_id, subscription in subscriptions.items():
            member = JoinGroupResponse.JoinGroupResponseMember(
                member_id=member_id, group_instance_id=subscription.group_instance_id, metadata=b"")
            member.metadata = _subscription_struct(subscription)
            members.append(member)
        try:
            result = self.kafka_assignor.assign(_ClusterView(partitions_per_topic, self.cluster), members)
        except Exception as exc:
            # The leader cannot complete the rebalance; Java's onLeaderElected lets it escape poll().
            raise GroupMemberError(f"assignor {self.name!r} failed: {exc!r}") from exc
        out = {}
        for member_id, assignment in result.items():
            user_data = getattr(assignment, "user_data", None)
            out[member_id] = Assignment(assigned_partitions(assignment),
                                        None if user_data is None else bytes(user_data))
        return out

    def on_assignment(self, partitions, user_data: Optional[bytes], generation_id: int) -> None:
        """Tell the kafka-python assignor its assignment (kafka-python's ``on_assignment``)."""
        self.kafka_assignor.on_assignment(kafka_python_assignment(partitions, user_data), generation_id)


def _kafka_python_builtins() -> dict:
    """kafka-python's own assignor classes, by their Kafka name."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    classes = (RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor,
               CooperativeStickyAssignor)
    return {cls: cls.name for cls in classes}


def from_kafka_python(entry, cluster=None) -> WrappedKafkaPythonAssignor:
    """A kafka-python assignor class or instance as a kgroup :class:`Assignor`.

    kafka-python's own classes (exactly those, not subclasses) do their
    assignment with kgroup's assignor of the same name; every other
    ``AbstractPartitionAssignor`` runs its own code.  Classes are
    instantiated once, as kafka-python's coordinator does.
    """
    if isinstance(entry, type):
        if not issubclass(entry, AbstractPartitionAssignor):
            raise ConfigError(f"partition_assignment_strategy entry {entry!r} is not a partition assignor")
        instance = entry()
    elif isinstance(entry, AbstractPartitionAssignor):
        instance = entry
    else:
        raise ConfigError(f"partition_assignment_strategy entry {entry!r} is not a partition assignor")
    builtin_name = _kafka_python_builtins().get(type(instance))
    delegate = get_assignor(builtin_name) if builtin_name is not None else None
    return WrappedKafkaPythonAssignor(instance, delegate, cluster)
