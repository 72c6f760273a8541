"""The Metadata answer (API key 3) with its per-topic cache of packed partition entries (the
bytes :mod:`kgroup.server.metadata_encoding` joins into the response).

Moved out of :mod:`kgroup.server.data_plane` (issue 25).  ``KafkaApis.handleTopicMetadataRequest``
is the reference.
"""
from __future__ import annotations

import operator
import uuid
from itertools import chain
from typing import Any, Dict, Generator, List, Optional, Tuple

import attrs
from kafka.protocol.metadata import MetadataResponse

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.error_codes import ErrorCode
from kgroup.server.acl_operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, bit_set
from kgroup.server.config import ServerConfig
from kgroup.server.metadata_encoding import (
    PARTITION_LAYOUTS, EncodedPartitions, encode_partition_entries, partition_layout)
from kgroup.server.topic_admin import NIL_UUID, TopicAdmin, is_valid_topic_name

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


_INDEX = operator.attrgetter("index")
_LEADER = operator.attrgetter("leader")
_EPOCH = operator.attrgetter("leader_epoch")
_ASSIGNED = operator.attrgetter("assigned")
_ISR = operator.attrgetter("isr")
_LEADERLESS = (int(E.LEADER_NOT_AVAILABLE),)


@attrs.frozen
class _PartitionsState:
    """What a topic's partition entries say (leaders, epochs, replicas, ISRs, live brokers), read as
    a few flat lists: comparing two is a handful of C loops, and keeping one allocates a handful of
    objects, not three per partition (issue 23: 20,000 lists kept per topic woke the collector,
    whose full pass over a 10,000-partition heap took 100 ms)."""

    leaders: List[Optional[int]]
    epochs: List[int]
    replica_counts: List[int]
    replicas: List[int]
    isr_counts: List[int]
    isrs: List[int]
    live_brokers: Tuple[int, ...]

    @classmethod
    def read(cls, parts: List[Partition], live: set) -> "_PartitionsState":
        # Fresh lists, never the partitions' own (those change in place).
        return cls(leaders=list(map(_LEADER, parts)), epochs=list(map(_EPOCH, parts)),
                   replica_counts=list(map(len, map(_ASSIGNED, parts))),
                   replicas=list(chain.from_iterable(map(_ASSIGNED, parts))),
                   isr_counts=list(map(len, map(_ISR, parts))),
                   isrs=list(chain.from_iterable(map(_ISR, parts))),
                   live_brokers=tuple(sorted(live)))

    def changed_since(self, old: "_PartitionsState") -> List[int]:
        """The partitions whose entry differs from ``old``'s (new partitions included)."""
        changed = []
        known = len(old.leaders)
        replicas_at = old_replicas_at = isrs_at = old_isrs_at = 0
        for i, (replica_count, isr_count) in enumerate(zip(self.replica_counts, self.isr_counts)):
            if i >= known:
                changed.append(i)
                continue
            old_replica_count, old_isr_count = old.replica_counts[i], old.isr_counts[i]
            if self.leaders[i] != old.leaders[i] or self.epochs[i] != old.epochs[i] \
                    or replica_count != old_replica_count or isr_count != old_isr_count \
                    or self.replicas[replicas_at:replicas_at + replica_count] \
                    != old.replicas[old_replicas_at:old_replicas_at + replica_count] \
                    or self.isrs[isrs_at:isrs_at + isr_count] \
                    != old.isrs[old_isrs_at:old_isrs_at + isr_count]:
                changed.append(i)
            replicas_at += replica_count
            isrs_at += isr_count
            old_replicas_at += old_replica_count
            old_isrs_at += old_isr_count
        return changed


@attrs.define
class _TopicEntries:
    """A topic's packed partition entries for one layout and the state they were packed from."""

    state: _PartitionsState
    entries: List[bytes]
    answer: EncodedPartitions


class MetadataAnswer:
    def __init__(self, cluster: ClusterStateMachine, config: ServerConfig, topics: TopicAdmin) -> None:
        self.cluster = cluster
        self.config = config
        self.topics = topics
        #: Per topic and entry layout (kgroup.server.metadata_encoding.partition_layout), the
        #: partition entries packed last and the state they were packed from (each partition's
        #: leader/epoch/replicas/ISR, the live brokers).  A topic's leadership rarely changes, and
        #: packing 10,000 entries costs ~10 ms where reading what they depend on costs a few
        #: (issue 23: Metadata of a 10,000-partition topic).  Reading the partitions, rather than
        #: being told of changes, keeps it right when anything moves a leader or an ISR.  Bounded
        #: by the number of topics (four layouts at most each); dropped on delete.
        self._partitions_cache: Dict[Tuple[str, int], _TopicEntries] = {}
        #: Per entry layout, the latest Metadata version a client asked for with it: the entries
        #: a new topic gets packed for at once.
        self._versions_asked: Dict[int, int] = {}

    def forget(self, topic: str) -> None:
        """Drop what the cache holds for ``topic`` (created or deleted).

        A topic that exists now was just created: its entries are packed at once, for the
        versions clients have been asking for, so that the first Metadata answer after a
        creation (a producer's or a consumer's next request) costs what a later one does; the
        creation pays it (~10 ms per 10,000 partitions and version, a creation of that size
        takes ~0.5 s)."""
        for layout in range(PARTITION_LAYOUTS):
            self._partitions_cache.pop((topic, layout), None)
        if topic in self.cluster.topics:
            live = set(self.cluster.live_brokers())
            for version in self._versions_asked.values():
                self._partitions_metadata(topic, version, live)

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
        self._versions_asked[partition_layout(version)] = version
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
                # KafkaApis.getTopicMetadata without auto-creation: Topic.validate tells an invalid
                # name (INVALID_TOPIC_EXCEPTION) from a missing one, at every version.
                code = E.UNKNOWN_TOPIC_OR_PARTITION if is_valid_topic_name(name) \
                    else E.INVALID_TOPIC_EXCEPTION
                topics.append(topic_cls(version=version, error_code=code, name=name, topic_id=NIL_UUID,
                                        is_internal=name in INTERNAL_TOPICS, partitions=[]))
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

    def _partitions_metadata(self, name: str, version: int, live: set) -> EncodedPartitions:
        parts = self.cluster.topics[name]
        layout = partition_layout(version)
        state = _PartitionsState.read(parts, live)
        cached = self._partitions_cache.get((name, layout))
        if cached is not None and cached.state == state:
            if cached.answer.version != version:  # the same layout, another version (v9 and v12)
                cached.answer = EncodedPartitions(version, cached.entries, cached.answer.error_codes)
            return cached.answer
        if cached is not None and cached.state.live_brokers == state.live_brokers \
                and len(cached.entries) <= len(parts):
            # A leader or an ISR moved (or partitions were added): pack only what changed.
            changed = state.changed_since(cached.state)
            entries = cached.entries + [b""] * (len(parts) - len(cached.entries))
            fresh = encode_partition_entries(layout, [parts[i].index for i in changed],
                                             [state.leaders[i] for i in changed],
                                             [state.epochs[i] for i in changed],
                                             [parts[i].assigned for i in changed],
                                             [parts[i].isr for i in changed],
                                             live)
            for i, entry in zip(changed, fresh):
                entries[i] = entry
        else:
            entries = encode_partition_entries(layout, list(map(_INDEX, parts)), state.leaders, state.epochs,
                                               list(map(_ASSIGNED, parts)), list(map(_ISR, parts)), live)
        answer = EncodedPartitions(version, entries, _LEADERLESS if None in state.leaders else ())
        self._partitions_cache[(name, layout)] = _TopicEntries(state, entries, answer)
        return answer
