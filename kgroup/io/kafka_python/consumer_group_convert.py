"""ConsumerGroupHeartbeat (KIP-848) between kgroup's values and kafka-python structs, client side.

The structs are built from Kafka's JSON schemas with kafka-python's own
loader (:mod:`kgroup.wire.kafka_python`, shared with kgroup's wire server);
kafka-python encodes and decodes them, kgroup writes no codec.

The wire names topics by id, kgroup's member by name.  :class:`TopicIdMap`
translates with kafka-python's cluster metadata (Metadata v10+ carries
topic ids) plus the pairs it has already resolved: Kafka's
``AbstractMembershipManager.assignedTopicNamesCache`` keeps assigned
topics' names for the same reason, so the owned partitions can still be
named after a metadata refresh dropped a topic.  An assignment naming an
id the client cannot resolve yet is reported as unresolved: the transport
refreshes the metadata and converts again.
"""
from __future__ import annotations

import uuid
from typing import Callable, Iterable, Optional

from kgroup.core import consumer_group_messages as cg
from kgroup.io.kafka_python.convert import error_code
from kgroup.values import TopicPartition

__all__ = ["TopicIdMap", "UnknownTopicName", "heartbeat_request", "heartbeat_response"]


class UnknownTopicName(Exception):
    """The owned partitions name a topic whose id the client does not know (nothing can be sent)."""


class TopicIdMap:
    """Topic name <-> id from the cluster's metadata, plus every pair already resolved."""

    def __init__(self, cluster_id_for: Callable[[str], Optional[uuid.UUID]],
                 cluster_name_for: Callable[[uuid.UUID], Optional[str]]) -> None:
        self._cluster_id_for = cluster_id_for
        self._cluster_name_for = cluster_name_for
        self._ids: dict[str, uuid.UUID] = {}
        self._names: dict[uuid.UUID, str] = {}

    def id_for(self, name: str) -> Optional[uuid.UUID]:
        found = self._cluster_id_for(name)
        if found is not None:
            self._remember(name, found)
            return found
        return self._ids.get(name)

    def name_for(self, topic_id: uuid.UUID) -> Optional[str]:
        found = self._cluster_name_for(topic_id)
        if found is not None:
            self._remember(found, topic_id)
            return found
        return self._names.get(topic_id)

    def _remember(self, name: str, topic_id: uuid.UUID) -> None:
        self._ids[name] = topic_id
        self._names[topic_id] = name


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def heartbeat_request(req: cg.ConsumerGroupHeartbeatRequest, topics: TopicIdMap):
    """The struct for ``req`` at exactly its version (v1: the client's own member id, KIP-1082)."""
    # Imported here: a classic-protocol consumer need not build the schema-based classes.
    from kgroup.wire.kafka_python import ConsumerGroupHeartbeatRequestStruct as KHeartbeatRequest

    owned = None
    if req.topic_partitions is not None:
        owned = []
        for name, partitions in _by_topic(req.topic_partitions).items():
            topic_id = topics.id_for(name)
            if topic_id is None:
                raise UnknownTopicName(f"no topic id known for {name!r}: the owned partitions cannot be sent")
            owned.append(KHeartbeatRequest.TopicPartitions(topic_id=topic_id, partitions=partitions))
    return KHeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=(None if req.subscribed_topic_names is None
                                else list(req.subscribed_topic_names)),
        subscribed_topic_regex=req.subscribed_topic_regex, server_assignor=req.server_assignor,
        topic_partitions=owned, min_version=req.api_version, max_version=req.api_version)


def heartbeat_response(resp, topics: TopicIdMap) -> tuple[cg.ConsumerGroupHeartbeatResponse, frozenset]:
    """(the kgroup value, the topic ids of its assignment the client could not name)."""
    assignment = None
    unresolved: set = set()
    if resp.assignment is not None:
        named: list[TopicPartition] = []
        for topic in resp.assignment.topic_partitions:
            name = topics.name_for(topic.topic_id)
            if name is None:
                unresolved.add(topic.topic_id)
                continue
            named.extend(TopicPartition(name, p) for p in topic.partitions)
        assignment = tuple(named)
    value = cg.ConsumerGroupHeartbeatResponse(
        error_code=error_code(resp.error_code), error_message=resp.error_message, member_id=resp.member_id,
        member_epoch=resp.member_epoch, heartbeat_interval_ms=resp.heartbeat_interval_ms,
        assignment=assignment)
    return value, frozenset(unresolved)
