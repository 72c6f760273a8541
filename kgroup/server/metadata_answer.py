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


_PARTITION_ENTRY = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
#: The fields a partition entry has in some version (kafka-python's schema for Metadata v0-v12).
_PARTITION_FIELDS = frozenset(field.name for field in _PARTITION_ENTRY._struct._fields)
_SET_FIELDS = frozenset(("error_code", "partition_index", "leader_id", "leader_epoch", "replica_nodes",
                         "isr_nodes", "offline_replicas"))
assert _PARTITION_FIELDS == _SET_FIELDS, f"kafka-python's Metadata partition entry is now {_PARTITION_FIELDS}"


def partition_metadata(p: Partition, version: int, live: set) -> Any:
    """One partition's Metadata entry (leader, epoch, replicas, ISR, offline replicas).

    Built without kafka-python's generic constructor, which matches every keyword against the schema
    (about 5 us an entry, 50 ms for a 10,000-partition topic; this takes 0.4 us): every field of the
    entry's schema is set here (checked against the schema at import), exactly as the constructor
    would set them (tests/server/test_metadata_partitions_cache.py compares the encodings)."""
    entry = _PARTITION_ENTRY.__new__(_PARTITION_ENTRY)
    entry._version = version
    entry.tags = None
    entry.unknown_tags = None
    entry.error_code = E.NONE if p.leader is not None else E.LEADER_NOT_AVAILABLE
    entry.partition_index = p.index
    entry.leader_id = p.leader if p.leader is not None else -1
    entry.leader_epoch = p.leader_epoch
    entry.replica_nodes = list(p.assigned)
    entry.isr_nodes = list(p.isr)
    entry.offline_replicas = [b for b in p.assigned if b not in live]
    return entry


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
            brokers.append(broker_cls(version=version, node_id=b, host=host, port=port,
                                      rack=self.cluster.config.rack(b)))
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
        if cached is not None and cached[0] == version and cached[2] == live_brokers \
                and len(cached[1]) <= len(built_from):
            # One leader or ISR moved (or partitions were added): rebuild only what changed.
            old_from, old_entries = cached[1], cached[3]
            entries = [old_entries[i] if i < len(old_from) and old_from[i] == state
                       else partition_metadata(parts[i], version, live) for i, state in enumerate(built_from)]
        else:
            entries = [partition_metadata(p, version, live) for p in parts]
        self._partitions_cache[name] = (version, built_from, live_brokers, entries)
        return entries
