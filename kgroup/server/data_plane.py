"""Produce, Fetch, ListOffsets, Metadata, InitProducerId and topic admin on the cluster state machine.

Each handler takes the broker (``node_id``) a request reached and the decoded kafka-python
request, reads or changes :class:`~kgroup.core.cluster.state_machine.ClusterStateMachine`,
and returns the response struct (Produce returns what it must wait for as well, since an
acks=all append is answered only once the high watermark covers it).  No I/O, no clock:
``now_ms`` comes in.  Kafka's ``ReplicaManager``, ``KafkaApis`` and ``LogValidator`` are the
references for the error each case answers.
"""
from __future__ import annotations

import itertools
import re
import uuid
from typing import Any, Dict, Generator, List, Optional, Tuple

import attrs
from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse
from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse, OffsetForLeaderEpochResponse
from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.producer import InitProducerIdResponse, ProduceResponse

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.errors import ClusterError, ConfigError
from kgroup.server.acl_operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, bit_set
from kgroup.server.config import ServerConfig
from kgroup.server.topic_configs import topic_config_error
from kgroup.server.record_log import BatchSlice, InvalidRecords, StoredBatch, parse_batches
from kgroup.core.error_codes import ErrorCode

__all__ = ["DataPlane", "ProduceWait"]

E = ErrorCode
_LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
#: Kafka's ListOffsets special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
#: How many recent batches per producer Kafka remembers to answer a retried batch (ProducerStateEntry).
_RETAINED_BATCHES = 5
_NIL_UUID = uuid.UUID(int=0)
#: Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: the most partitions one CreateTopics
#: (or, here, CreatePartitions) request may add; more is refused with POLICY_VIOLATION.
MAX_PARTITIONS_PER_REQUEST = 10_000
_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
_ZSTD = 4
#: Kafka's Topic.INTERNAL_TOPICS: clients may not write to them (ReplicaManager.appendToLocalLog
#: answers InvalidTopicException unless the append comes from a coordinator).
INTERNAL_TOPICS = frozenset((GROUP_METADATA_TOPIC, "__transaction_state"))


@attrs.define
class ProduceWait:
    """An acks=all append waiting for the high watermark: ``result`` is patched when it resolves."""

    partition: Partition
    leader_epoch: int
    end_offset: int
    result: Any


@attrs.define
class _ProducerState:
    """Kafka's ProducerStateEntry, per partition: epoch and the last few batches' sequences."""

    epoch: int
    #: (base sequence, last sequence, base offset) of the latest batches, oldest first.
    batches: List[Tuple[int, int, int]] = attrs.field(factory=list)


def _epoch_end_offset(log: Any, requested: int) -> Tuple[int, int]:
    """Kafka's ``LeaderEpochFileCache.endOffsetFor``: the latest epoch ends at the LEO; an older one
    answers the largest known epoch <= it and where the next epoch starts; one older than every known
    epoch answers itself and the first epoch's start; one newer than the latest is unknown (-1, -1)."""
    starts = log.epoch_starts
    if requested < 0 or not starts:
        return -1, -1
    if starts[-1][0] == requested:
        return requested, log.leo
    higher = next(((epoch, start) for epoch, start in starts if epoch > requested), None)
    if higher is None:
        return -1, -1
    floor = [epoch for epoch, _ in starts if epoch <= requested]
    return (floor[-1] if floor else requested), higher[1]


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


class DataPlane:
    def __init__(self, cluster: ClusterStateMachine, config: ServerConfig) -> None:
        self.cluster = cluster
        self.config = config
        self._topic_ids: Dict[str, uuid.UUID] = {}
        #: The reverse of ``_topic_ids`` (stale names are checked against it on lookup).
        self._names_by_id: Dict[uuid.UUID, List[str]] = {}
        self._creations = itertools.count()
        self._producer_ids = itertools.count(config.first_producer_id)
        self._producers: Dict[Tuple[str, int, int], _ProducerState] = {}
        #: Per topic, the Metadata partition entries built last and what they were built from
        #: (version, each partition's leader/epoch/replicas/ISR, the live brokers).  A topic's
        #: leadership rarely changes, and building 10,000 kafka-python structs costs about 100 ms
        #: where reading what they depend on costs a few (issue 23: Metadata of a 10,000-partition
        #: topic).  Reading the partitions, rather than being told of changes, keeps it right when
        #: anything moves a leader or an ISR.  Bounded by the number of topics; dropped on delete.
        self._metadata_partitions: Dict[str, Tuple[int, tuple, Tuple[int, ...], List[Any]]] = {}

    # -- topics ----------------------------------------------------------------------------

    def topic_id(self, name: str) -> uuid.UUID:
        """The topic's id; deterministic (a name and its creation count), so a run replays."""
        found = self._topic_ids.get(name)
        if found is None:
            found = uuid.uuid5(uuid.NAMESPACE_URL, f"kgroup:{name}:{next(self._creations)}")
            self._topic_ids[name] = found
            self._names_by_id.setdefault(found, []).append(name)
        return found

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]:
        """The name of the topic with ``topic_id`` (None for an id no live topic has)."""
        return self._topic_by_id(topic_id)

    def has_partition(self, topic: str, partition: int) -> bool:
        """Whether the cluster has this partition (KafkaApis' metadataCache.getPartitionInfo)."""
        partitions = self.cluster.topics.get(topic)
        return partitions is not None and 0 <= partition < len(partitions)

    def _topic_by_id(self, topic_id: uuid.UUID) -> Optional[str]:
        if len(self._topic_ids) < len(self.cluster.topics):
            for name in self.cluster.topics:  # topics created behind the data plane's back get ids
                self.topic_id(name)
        for name in self._names_by_id.get(topic_id, ()):
            if name in self.cluster.topics and self._topic_ids.get(name) == topic_id:
                return name
        return None

    def create_topic(self, name: str, partitions: int, replication_factor: Optional[int] = None,
                     assignments: Optional[List[List[int]]] = None, validate_only: bool = False) -> ErrorCode:
        if not _LEGAL_TOPIC_NAME.match(name) or name in (".", ".."):
            return E.INVALID_TOPIC_EXCEPTION
        if name in self.cluster.topics:
            return E.TOPIC_ALREADY_EXISTS
        if assignments:
            brokers = set(self.cluster.brokers)
            if any(not a or len(set(a)) != len(a) or not set(a) <= brokers for a in assignments) \
                    or len({len(a) for a in assignments}) != 1:
                return E.INVALID_REPLICA_ASSIGNMENT
        else:
            if partitions < 1:
                return E.INVALID_PARTITIONS
            # None or -1 (CreateTopics v4+, KIP-464): the broker's default replication factor.
            default_rf = min(self.config.default_replication_factor, len(self.cluster.brokers))
            rf = default_rf if replication_factor in (None, -1) else replication_factor
            if rf < 1 or rf > len(self.cluster.brokers):
                return E.INVALID_REPLICATION_FACTOR
            replication_factor = rf
        if validate_only:
            return E.NONE
        try:
            count = len(assignments) if assignments else partitions
            self.cluster.create_topic(name, count, replication_factor, assignments)
        except (ClusterError, ConfigError):
            return E.INVALID_REPLICATION_FACTOR
        self._topic_ids.pop(name, None)
        self._metadata_partitions.pop(name, None)
        self.topic_id(name)
        return E.NONE

    # -- Metadata ----------------------------------------------------------------------------

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
                name = self._topic_by_id(topic_id) if topic_id not in (None, _NIL_UUID) else None
                if name is None:
                    topics.append(topic_cls(version=version, error_code=E.UNKNOWN_TOPIC_ID, name=None,
                                            topic_id=topic_id or _NIL_UUID, partitions=[]))
                    continue
            if name not in self.cluster.topics and auto_create and name != GROUP_METADATA_TOPIC:
                code = self.create_topic(name, self.config.default_partitions)
                if code is not E.NONE:
                    topics.append(topic_cls(version=version, error_code=code, name=name, partitions=[]))
                    continue
            if name not in self.cluster.topics:
                topics.append(topic_cls(version=version, error_code=E.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                        topic_id=_NIL_UUID, partitions=[]))
                continue
            topics.append(topic_cls(
                version=version, error_code=E.NONE, name=name, topic_id=self.topic_id(name),
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
        cached = self._metadata_partitions.get(name)
        if cached is not None and cached[:3] == (version, built_from, live_brokers):
            return cached[3]
        entries = [self._partition_metadata(p, version, live) for p in parts]
        self._metadata_partitions[name] = (version, built_from, live_brokers, entries)
        return entries

    @staticmethod
    def _partition_metadata(p: Partition, version: int, live: set) -> Any:
        partition_cls = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
        return partition_cls(
            version=version, error_code=E.NONE if p.leader is not None else E.LEADER_NOT_AVAILABLE,
            partition_index=p.index, leader_id=p.leader if p.leader is not None else -1,
            leader_epoch=p.leader_epoch, replica_nodes=list(p.assigned), isr_nodes=list(p.isr),
            offline_replicas=[b for b in p.assigned if b not in live])

    # -- partitions as the serving broker sees them ----------------------------------------------

    def _led_partition(self, node_id: int, topic: str, index: int,
                       current_leader_epoch: int = -1) -> Tuple[Optional[Partition], ErrorCode]:
        parts = self.cluster.topics.get(topic)
        if parts is None or not 0 <= index < len(parts):
            return None, E.UNKNOWN_TOPIC_OR_PARTITION
        p = parts[index]
        if p.leader != node_id:
            return None, E.NOT_LEADER_OR_FOLLOWER
        if current_leader_epoch >= 0:
            if current_leader_epoch < p.leader_epoch:
                return None, ErrorCode.FENCED_LEADER_EPOCH
            if current_leader_epoch > p.leader_epoch:
                return None, ErrorCode.UNKNOWN_LEADER_EPOCH
        return p, E.NONE

    # -- Produce -------------------------------------------------------------------------------

    def produce(self, node_id: int, request: Any, version: int) -> Tuple[Any, List[ProduceWait]]:
        """Append every partition's batches; the response plus the acks=all appends to wait for."""
        topic_cls = ProduceResponse.TopicProduceResponse
        partition_cls = topic_cls.PartitionProduceResponse
        waits: List[ProduceWait] = []
        topics = []
        for t in request.topic_data:
            results = []
            for data in t.partition_data:
                result = partition_cls(version=version, index=data.index, error_code=E.NONE, base_offset=-1,
                                       log_append_time_ms=-1, log_start_offset=0)
                results.append(result)
                if request.transactional_id is not None:
                    result.error_code = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                    continue
                if request.acks not in (0, 1, -1):
                    result.error_code = E.INVALID_REQUIRED_ACKS
                    continue
                if t.name in INTERNAL_TOPICS:
                    result.error_code = E.INVALID_TOPIC_EXCEPTION
                    result.error_message = f"Cannot append to internal topic {t.name}"
                    continue
                p, code = self._led_partition(node_id, t.name, data.index)
                if p is None:
                    result.error_code = code
                    continue
                wait = self._append(p, data.records, request.acks, result, version)
                if wait is not None:
                    waits.append(wait)
            topics.append(topic_cls(version=version, name=t.name, partition_responses=results))
        touched = {w.partition.key: w.partition for w in waits}
        if touched:
            self.cluster.replicate(self.cluster.now_ms, partitions=list(touched.values()))
        return ProduceResponse(version=version, throttle_time_ms=0, responses=topics), waits

    def _append(self, p: Partition, records: Optional[bytes], acks: int,
                result: Any, version: int) -> Optional[ProduceWait]:
        try:
            batches = parse_batches(records)
            # Kafka's ProduceRequest.validateRecords (v3+, every version served here).
            if len(batches) != 1:
                raise InvalidRecords(E.INVALID_RECORD, f"Produce requests with version {version} are only "
                                     "allowed to contain exactly one record batch")
            if version < 7 and batches[0].compression_type == _ZSTD:
                raise InvalidRecords(E.UNSUPPORTED_COMPRESSION_TYPE,
                                     f"Produce requests with version {version} cannot use zstd (KIP-110)")
            if any(b.is_transactional for b in batches):
                raise InvalidRecords(E.INVALID_REQUEST, "transactions are not supported")
            if sum(len(b.data) for b in batches) > self.config.max_message_bytes:
                raise InvalidRecords(E.MESSAGE_TOO_LARGE, "batch larger than max.message.bytes")
        except InvalidRecords as error:
            result.error_code = error.code
            result.error_message = str(error)
            return None
        acks_all = acks == -1
        if acks_all and p.is_under_min_isr():
            result.error_code = E.NOT_ENOUGH_REPLICAS
            return None
        first_offset: Optional[int] = None
        for produced in batches:
            duplicate = self._check_sequence(p, produced)
            if isinstance(duplicate, ErrorCode):
                result.error_code = duplicate
                return None
            if duplicate is not None:
                # A retried batch Kafka already holds: answer where it was appended (ProducerStateManager).
                first_offset = duplicate if first_offset is None else first_offset
                continue
            log = p.leader_log()
            assert log is not None  # _led_partition checked the leader
            stored = produced.stored_at(log.leo, p.leader_epoch)
            self._record_sequence(p, stored)
            # One log offset per record, all pointing at the batch.  The min ISR was checked above;
            # completion is tracked by ProduceWait, not the ack list.
            self.cluster.produce_many(p.topic, p.index, [BatchSlice(stored)] * stored.record_count,
                                      acks_all=False)
            first_offset = stored.base_offset if first_offset is None else first_offset
        result.base_offset = first_offset if first_offset is not None else -1
        if not acks_all:
            return None
        log = p.leader_log()
        assert log is not None
        return ProduceWait(p, p.leader_epoch, log.leo, result)

    def _check_sequence(self, p: Partition, produced) -> Any:
        """None to append, the base offset of a duplicate, or the error for a bad sequence."""
        if produced.producer_id < 0:
            return None
        state = self._producers.get((p.topic, p.index, produced.producer_id))
        if state is None:
            return None
        if produced.producer_epoch < state.epoch:
            return E.INVALID_PRODUCER_EPOCH
        if produced.producer_epoch > state.epoch:
            return None if produced.base_sequence == 0 else E.OUT_OF_ORDER_SEQUENCE_NUMBER
        for base_sequence, _last, base_offset in state.batches:
            if base_sequence == produced.base_sequence:
                return base_offset
        last_sequence = state.batches[-1][1] if state.batches else -1
        if produced.base_sequence != last_sequence + 1:
            return E.OUT_OF_ORDER_SEQUENCE_NUMBER
        return None

    def _record_sequence(self, p: Partition, stored: StoredBatch) -> None:
        if stored.producer_id < 0:
            return
        key = (p.topic, p.index, stored.producer_id)
        state = self._producers.get(key)
        if state is None or stored.producer_epoch > state.epoch:
            state = self._producers[key] = _ProducerState(stored.producer_epoch)
        state.batches.append((stored.base_sequence, stored.base_sequence + stored.record_count - 1,
                              stored.base_offset))
        del state.batches[:-_RETAINED_BATCHES]

    @staticmethod
    def settle(wait: ProduceWait) -> bool:
        """Resolve ``wait`` if it can be: True once committed (HW covers it) or failed (leader moved)."""
        p = wait.partition
        if p.leader is None or p.leader_epoch != wait.leader_epoch:
            wait.result.error_code = E.NOT_LEADER_OR_FOLLOWER
            wait.result.base_offset = -1
            return True
        return p.logs[p.leader].hw >= wait.end_offset

    # -- Fetch ---------------------------------------------------------------------------------

    def fetch(self, node_id: int, request: Any, version: int) -> Tuple[Any, int, bool]:
        """The fetch answer as of now: (response, record bytes in it, whether any partition erred)."""
        topic_cls = FetchResponse.FetchableTopicResponse
        partition_cls = topic_cls.PartitionData
        budget = request.max_bytes if version >= 3 else 2 ** 31 - 1
        total = 0
        erred = False
        topics = []
        for t in request.topics:
            parts = []
            for fp in t.partitions:
                p, code = self._led_partition(node_id, t.topic, fp.partition,
                                              fp.current_leader_epoch if version >= 9 else -1)
                answer = partition_cls(version=version, partition_index=fp.partition, error_code=code,
                                       high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                                       aborted_transactions=None, preferred_read_replica=-1, records=b"")
                parts.append(answer)
                if p is None:
                    erred = True
                    continue
                log = p.logs[node_id]  # _led_partition: node_id leads p
                answer.high_watermark = answer.last_stable_offset = log.hw
                answer.log_start_offset = 0
                if fp.fetch_offset < 0 or fp.fetch_offset > log.leo:
                    answer.error_code = E.OFFSET_OUT_OF_RANGE
                    erred = True
                    continue
                data = self._read(log, fp.fetch_offset, min(fp.partition_max_bytes, max(budget - total, 0)),
                                  first=total == 0)
                answer.records = data
                total += len(data)
            topics.append(topic_cls(version=version, topic=t.topic, partitions=parts))
        response = FetchResponse(version=version, throttle_time_ms=0, error_code=0, session_id=0,
                                 responses=topics)
        return response, total, erred

    def fetch_state(self, node_id: int, request: Any) -> Tuple[Any, ...]:
        """Everything :meth:`fetch` reads that can change while a fetch is parked: per partition
        asked for, the partition itself (a topic deleted and re-created is a new one), its leader,
        leader epoch, and the leader's HW and LEO.  Equal states give equal fetch answers."""
        state: List[Any] = []
        topics = self.cluster.topics
        for t in request.topics:
            parts = topics.get(t.topic)
            if parts is None:
                state.append(None)
                continue
            for fp in t.partitions:
                if not 0 <= fp.partition < len(parts):
                    state.append(len(parts))
                    continue
                p = parts[fp.partition]
                log = p.logs.get(node_id)
                state.append((p, p.leader, p.leader_epoch, None if log is None else (log.hw, log.leo)))
        return tuple(state)

    @staticmethod
    def _read(log, offset: int, max_bytes: int, first: bool) -> bytes:
        """Whole batches from the one holding ``offset`` up to the HW; the first batch of a response
        is returned even when larger than the limit (KIP-74), so a consumer always progresses."""
        chunks: List[bytes] = []
        size = 0
        hw = log.hw
        entries = log.entries
        while offset < hw:
            payload = entries[offset].payload
            if not isinstance(payload, BatchSlice):
                offset += 1  # not a record batch (the coordinators' records): nothing a client reads
                continue
            batch = payload.batch
            if batch.next_offset > hw:
                break
            if size + len(batch.data) > max_bytes and not (first and not chunks):
                break
            chunks.append(batch.data)
            size += len(batch.data)
            offset = batch.next_offset
        return b"".join(chunks)

    # -- ListOffsets -----------------------------------------------------------------------------

    def list_offsets(self, node_id: int, request: Any, version: int) -> Any:
        topic_cls = ListOffsetsResponse.ListOffsetsTopicResponse
        partition_cls = topic_cls.ListOffsetsPartitionResponse
        topics = []
        for t in request.topics:
            parts = []
            for lp in t.partitions:
                p, code = self._led_partition(node_id, t.name, lp.partition_index,
                                              lp.current_leader_epoch if version >= 4 else -1)
                answer = partition_cls(version=version, partition_index=lp.partition_index, error_code=code,
                                       timestamp=-1, offset=-1, leader_epoch=-1)
                parts.append(answer)
                if p is None:
                    continue
                offset, timestamp = self._offset_for(p, lp.timestamp)
                answer.offset, answer.timestamp = offset, timestamp
                answer.leader_epoch = p.leader_epoch
            topics.append(topic_cls(version=version, name=t.name, partitions=parts))
        return ListOffsetsResponse(version=version, throttle_time_ms=0, topics=topics)

    @staticmethod
    def _offset_for(p: Partition, timestamp: int) -> Tuple[int, int]:
        log = p.leader_log()
        assert log is not None  # only called for a partition the asking broker leads
        if timestamp == LATEST_TIMESTAMP:
            return log.hw, -1
        if timestamp == EARLIEST_TIMESTAMP:
            return 0, -1
        best: Tuple[int, int] = (-1, -1)
        offset = 0
        while offset < log.hw:
            payload = log.entries[offset].payload
            if not isinstance(payload, BatchSlice):
                offset += 1
                continue
            batch = payload.batch
            if timestamp == MAX_TIMESTAMP:
                for record_offset, record_ts in batch.record_timestamps():
                    if record_ts > best[1]:
                        best = (record_offset, record_ts)
            elif batch.max_timestamp >= timestamp:
                for record_offset, record_ts in batch.record_timestamps():
                    if record_ts >= timestamp:
                        return record_offset, record_ts
            offset = batch.next_offset
        return best

    # -- OffsetForLeaderEpoch ------------------------------------------------------------------

    def offset_for_leader_epoch(self, node_id: int, request: Any, version: int) -> Any:
        """Where each asked leader epoch ends on the leader (KIP-101/KIP-320): what a consumer asks
        after a leader change to check its position was not truncated away.  kafka-python 3
        validates that way and, without this API, stalls on the partition for good."""
        topic_cls = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
        partition_cls = topic_cls.EpochEndOffset
        topics = []
        for t in request.topics:
            parts = []
            for asked in t.partitions:
                p, code = self._led_partition(node_id, t.topic, asked.partition, asked.current_leader_epoch)
                answer = partition_cls(version=version, partition=asked.partition, error_code=code,
                                       leader_epoch=-1, end_offset=-1)
                parts.append(answer)
                if p is None or asked.leader_epoch < 0:
                    continue
                log = p.leader_log()
                assert log is not None  # _led_partition: node_id leads p
                answer.leader_epoch, answer.end_offset = _epoch_end_offset(log, asked.leader_epoch)
            topics.append(topic_cls(version=version, topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(version=version, throttle_time_ms=0, topics=topics)

    # -- admin ---------------------------------------------------------------------------------

    def create_topics(self, request: Any, version: int) -> Any:
        result_cls = CreateTopicsResponse.CreatableTopicResult
        results = []
        if self._requested_partitions(request.topics) > MAX_PARTITIONS_PER_REQUEST:
            # Kafka refuses the whole request before looking at any topic (ReplicationControlManager).
            return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=[
                result_cls(version=version, name=t.name, error_code=E.POLICY_VIOLATION,
                           error_message=_TOO_MANY_PARTITIONS, topic_id=_NIL_UUID, num_partitions=-1,
                           replication_factor=-1, configs=[])
                for t in request.topics])
        for t in request.topics:
            assignments = [list(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)]
            partitions = t.num_partitions if t.num_partitions > 0 else self.config.default_partitions
            rf = t.replication_factor if t.replication_factor > 0 else None
            message = None
            # ReplicationControlManager.createTopics: configs are checked after the name and before
            # anything else (kgroup.server.topic_configs).
            config_error = topic_config_error((c.name, c.value) for c in t.configs)
            if config_error is not None and self._creatable(t.name):
                code, message = E.INVALID_CONFIG, config_error
            elif assignments and (t.num_partitions != -1 or t.replication_factor != -1):
                code = E.INVALID_REQUEST  # Kafka: assignments exclude explicit counts
            elif sorted(a.partition_index for a in t.assignments) != list(range(len(assignments))):
                code = E.INVALID_REPLICA_ASSIGNMENT  # Kafka: "a consecutive 0-based integer sequence"
            elif t.num_partitions == 0 or t.num_partitions < -1:
                code = E.INVALID_PARTITIONS
            elif t.replication_factor == 0 or t.replication_factor < -1:
                code = E.INVALID_REPLICATION_FACTOR
            else:
                code = self.create_topic(t.name, partitions, rf, assignments or None,
                                         validate_only=bool(request.validate_only))
            created_now = code is E.NONE and t.name in self.cluster.topics
            result = result_cls(version=version, name=t.name, error_code=code, error_message=message,
                                topic_id=self.topic_id(t.name) if created_now else _NIL_UUID,
                                num_partitions=-1, replication_factor=-1, configs=[])
            if created_now:
                created = self.cluster.topics[t.name]
                result.num_partitions = len(created)
                result.replication_factor = len(created[0].assigned)
            results.append(result)
        return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=results)

    def _creatable(self, name: str) -> bool:
        """A legal name no topic has yet (the checks Kafka makes before it looks at configs)."""
        legal = bool(_LEGAL_TOPIC_NAME.match(name)) and name not in (".", "..")
        return legal and name not in self.cluster.topics

    def _requested_partitions(self, topics: Any) -> int:
        """Partitions a CreateTopics request asks for in all (Kafka's validateTotalNumberOfPartitions)."""
        total = 0
        for t in topics:
            if t.assignments:
                total += len(t.assignments)
            elif t.num_partitions == -1:
                total += self.config.default_partitions
            elif t.num_partitions > 0:
                total += t.num_partitions
        return total

    def delete_topics(self, request: Any, version: int) -> Any:
        result_cls = DeleteTopicsResponse.DeletableTopicResult
        if version >= 6:
            wanted = [(t.name, t.topic_id) for t in request.topics]
        else:
            wanted = [(name, None) for name in request.topic_names]
        results = []
        for name, topic_id in wanted:
            if name is None and topic_id not in (None, _NIL_UUID):
                name = self._topic_by_id(topic_id)
                if name is None:
                    results.append(result_cls(version=version, name=None, topic_id=topic_id,
                                              error_code=E.UNKNOWN_TOPIC_ID))
                    continue
            if name == GROUP_METADATA_TOPIC:
                code = E.INVALID_TOPIC_EXCEPTION  # Kafka refuses to delete an internal topic
            elif name not in self.cluster.topics:
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                topic_id = self.topic_id(name)
                self.cluster.delete_topic(name)
                self._topic_ids.pop(name, None)
                self._metadata_partitions.pop(name, None)
                code = E.NONE
            results.append(result_cls(version=version, name=name, topic_id=topic_id or _NIL_UUID,
                                      error_code=code))
        return DeleteTopicsResponse(version=version, throttle_time_ms=0, responses=results)

    def create_partitions(self, request: Any, version: int) -> Any:
        result_cls = CreatePartitionsResponse.CreatePartitionsTopicResult
        results = []
        added = 0
        for t in request.topics:
            current = self.cluster.topics.get(t.name)
            message = None
            if current is None:
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            elif t.count <= len(current):
                code = E.INVALID_PARTITIONS
                message = f"topic has {len(current)} partitions; the new count must be larger"
            elif added + t.count - len(current) > MAX_PARTITIONS_PER_REQUEST:
                code = E.POLICY_VIOLATION
                message = _TOO_MANY_PARTITIONS
            elif t.assignments is not None:
                code = E.INVALID_REPLICA_ASSIGNMENT
                message = "kgroup's server places new partitions itself; leave assignments null"
            else:
                code = E.NONE
                added += t.count - len(current)
                if not request.validate_only:
                    self.cluster.add_partitions(t.name, t.count - len(current))
            results.append(result_cls(version=version, name=t.name, error_code=code, error_message=message))
        return CreatePartitionsResponse(version=version, throttle_time_ms=0, results=results)

    def init_producer_id(self, request: Any, version: int) -> Any:
        if request.transactional_id is not None:
            # Transactions are not supported: a transactional producer gets a fatal error at once.
            refused = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return InitProducerIdResponse(version=version, throttle_time_ms=0, producer_id=-1,
                                          producer_epoch=-1, error_code=refused)
        if version >= 3 and request.producer_id >= 0:
            # KIP-360: an idempotent producer bumps its epoch to reset its sequences.
            return InitProducerIdResponse(version=version, throttle_time_ms=0, error_code=E.NONE,
                                          producer_id=request.producer_id,
                                          producer_epoch=request.producer_epoch + 1)
        return InitProducerIdResponse(version=version, throttle_time_ms=0, error_code=E.NONE,
                                      producer_id=next(self._producer_ids), producer_epoch=0)
