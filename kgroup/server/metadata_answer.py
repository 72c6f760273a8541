"""The Metadata answer (API key 3) with its per-topic cache of partition entries.

Moved out of :mod:`kgroup.server.data_plane` (issue 25).  ``KafkaApis.handleTopicMetadataRequest``
is the reference.
"""
from __future__ import annotations

import uuid
from typing import Any, Dict, Generator, List, Optional, Tuple

from kafka.protocol.metadata import MetadataResponse

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.error_codes import ErrorCode
from kgroup.server.acl_operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, bit_set
from kgroup.server.config import ServerConfig
from kgroup.server.topic_admin import NIL_UUID, TopicAdmin

__all__ = ["INTERNAL_TOPICS", "MetadataAnswer", "partition_metadata"]

E = ErrorCode
#: Kafka's Topic.INTERNAL_TOPICS: clients may not write to them (ReplicaManager.appendToLocalLog
#: answers InvalidTopicException unless the append comes from a coordinator).
INTERNAL_TOPICS = frozenset((GROUP_METADATA_TOPIC, "__transaction_state"))


def _set_authorized_operations(response: Any, request: Any, version: int) -> None:
    """KafkaApis.handleTopicMetadataRequest without an authorizer: every operation of a topic (v8+)
    and of the cluster (v8-v10, moved to DescribeCluster by KIP-700), when asked for."""
    if version < 8:
        return
    if request.include_topic_authorized_operations:
        for topic in response.topics:
            if topic.error_code != E.UNKNOWN_TOPIC_ID:
                topic.authorized_operations = bit_set(TOPIC_OPERATIONS)
    if version <= 10 and request.include_cluster_authorized_operations:
        response.authorized_operations = bit_set(CLUSTER_OPERATIONS)


def partition_metadata(p: Partition, version: int, live: set) -> Any:
    """One partition's Metadata entry (leader, epoch, replicas, ISR, offline replicas)."""
    partition_cls = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    return partition_cls(
        version=version, error_code=E.NONE if p.leader is not None else E.LEADER_NOT_AVAILABLE,
        partition_index=p.index, leader_id=p.leader if p.leader is not None else -1,
        leader_epoch=p.leader_epoch, replica_nodes=list(p.assigned), isr_nodes=list(p.isr),
        offline_replicas=[b for b in p.assigned if b not in live])


class MetadataAnswer:
    def __init__(self, cluster: ClusterStateMachine, config: ServerConfig, topics: TopicAdmin) -> None:
        self.cluster = cluster
        self.config = config
        self.topics = topics
        #: Per topic, the Metadata partition entries built last and what they were built from
        #: (version, each partition's leader/epoch/replicas/ISR, the live brokers).  A topic's
        #: leadership rarely changes, and building 10,000 kafka-python structs costs about 100 ms
        #: where reading what they depend on costs a few (issue 23: Metadata of a 10,000-partition
        #: topic).  Reading the partitions, rather than being told of changes, keeps it right when
        #: anything moves a leader or an ISR.  Bounded by the number of topics; dropped on delete.
        self._partitions_cache: Dict[str, Tuple[int, tuple, Tuple[int, ...], List[Any]]] = {}

    def forget(self, topic: str) -> None:
        """Drop what the cache holds for ``topic`` (created or deleted)."""
        self._partitions_cache.pop(topic, None)

    def metadata(self, node_id: int, request: Any, version: int) -> Any:
        steps = self.metadata_in_slices(node_id, request, version, None)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def metadata_in_slices(self, node_id: int, request: Any, version: int,
                           slice_topics: Optional[int]) -> Generator[None, None, Any]:
        """The Metadata answer, pausing (yielding) after every ``slice_topics`` named topics so a
        request naming hundreds of thousands of them never holds the event loop for long; the
        answer is the generator's return value."""
        broker_cls = MetadataResponse.MetadataResponseBroker
        topic_cls = MetadataResponse.MetadataResponseTopic
        brokers = []
        live = set(self.cluster.live_brokers())
        for b in sorted(live):
            host, port = self.cluster.config.listener(b)
            brokers.append(broker_cls(version=version, node_id=b, host=host, port=port, rack=None))
        every_topic = request.topics is None or (version == 0 and not request.topics)
        asked: List[Any] = list(self.cluster.topics) if every_topic else request.topics
        auto_create = self.config.auto_create_topics and (version < 4 or request.allow_auto_topic_creation)
        topics = []
        for position, item in enumerate(asked):
            if slice_topics and position and position % slice_topics == 0:
                yield None
            name: Optional[str] = item if every_topic else item.name
            topic_id: Optional[uuid.UUID] = None if every_topic or version < 10 else item.topic_id
            if name is None:
                name = self.topics.topic_name(topic_id) if topic_id not in (None, NIL_UUID) else None
                if name is None:
                    topics.append(topic_cls(version=version, error_code=E.UNKNOWN_TOPIC_ID, name=None,
                                            topic_id=topic_id or NIL_UUID, partitions=[]))
                    continue
            if name not in self.cluster.topics and auto_create and name != GROUP_METADATA_TOPIC:
                code = self.topics.create_topic(name, self.config.default_partitions)
                if code is not E.NONE:
                    topics.append(topic_cls(version=version, error_code=code, name=name, partitions=[]))
                    continue
            if name not in self.cluster.topics:
                topics.append(topic_cls(version=version, error_code=E.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                        topic_id=NIL_UUID, partitions=[]))
                continue
            topics.append(topic_cls(
                version=version, error_code=E.NONE, name=name, topic_id=self.topics.topic_id(name),
                is_internal=name in INTERNAL_TOPICS,
                partitions=self._partitions_metadata(name, version, live)))
        response = MetadataResponse(
            version=version, throttle_time_ms=0, brokers=brokers, cluster_id=self.config.cluster_id,
            controller_id=self.cluster.controller_id if self.cluster.controller_id is not None else -1,
            topics=topics, error_code=0)
        _set_authorized_operations(response, request, version)
        return response

    def _partitions_metadata(self, name: str, version: int, live: set) -> List[Any]:
        parts = self.cluster.topics[name]
        built_from = tuple([(p.leader, p.leader_epoch, tuple(p.assigned), tuple(p.isr)) for p in parts])
        live_brokers = tuple(sorted(live))
        cached = self._partitions_cache.get(name)
        if cached is not None and cached[:3] == (version, built_from, live_brokers):
            return cached[3]
        entries = [partition_metadata(p, version, live) for p in parts]
        self._partitions_cache[name] = (version, built_from, live_brokers, entries)
        return entries
