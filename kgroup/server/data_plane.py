"""Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and transaction markers on the
cluster state machine; Metadata and the topic admin APIs through their own modules.

Each handler takes the broker (``node_id``) a request reached and the decoded kafka-python
request, reads or changes :class:`~kgroup.core.cluster.state_machine.ClusterStateMachine`,
and returns the response struct (Produce returns what it must wait for as well, since an
acks=all append is answered only once the high watermark covers it).  No I/O, no clock:
``now_ms`` comes in.  Kafka's ``ReplicaManager``, ``KafkaApis`` and ``LogValidator`` are the
references for the error each case answers; ``ProducerStateManager`` and ``UnifiedLog`` for
transactions (:mod:`kgroup.server.producer_state`).
"""
from __future__ import annotations

import uuid
from typing import Any, List, Optional, Tuple, Union

import attrs
from kafka.protocol.consumer import ListOffsetsResponse, OffsetForLeaderEpochResponse

from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.server.config import ServerConfig
from kgroup.server.control_batches import end_txn_marker_batch
from kgroup.server.coordinator_log import CoordinatorLogs
from kgroup.server.fetch_encoding import (
    AbortedTransactionAnswer, FetchAnswer, PartitionFetchAnswer, TopicFetchAnswer,
)
from kgroup.server.log_reads import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, epoch_end_offset, offset_for_timestamp, read_batches,
)
from kgroup.server.metadata_answer import INTERNAL_TOPICS, MetadataAnswer, partition_metadata
from kgroup.server.produce_encoding import PartitionProduceAnswer, ProduceAnswer, TopicProduceAnswer
from kgroup.server.producer_state import ProducerStates
from kgroup.server.record_log import (
    BatchSlice, InvalidRecords, ProducedBatch, names_unknown_codec, parse_batches, starts_transactional,
)
from kgroup.server.topic_admin import TopicAdmin
from kgroup.server.txn_verification import TransactionVerifier, produce_error
from kgroup.values import TopicPartition

__all__ = ["DataPlane", "ProduceWait"]

E = ErrorCode
_READ_COMMITTED = 1
#: Every partition's log start offset: kgroup never removes records from a log's start (no
#: retention, no DeleteRecords), so what Kafka's UnifiedLog.logStartOffset would answer is 0.
LOG_START_OFFSET = 0


@attrs.define
class ProduceWait:
    """An acks=all append waiting for the high watermark: ``result`` is patched when it resolves."""

    partition: Partition
    leader_epoch: int
    end_offset: int
    result: Any


class DataPlane:
    def __init__(self, cluster: ClusterStateMachine, config: ServerConfig) -> None:
        self.cluster = cluster
        self.config = config
        #: The coordinators' records of the internal topics as Kafka's record batches, encoded when read.
        self.coordinator_logs = CoordinatorLogs(cluster.topics, lambda name: self.topics.topic_id(name))
        self.producer_states = ProducerStates(self.coordinator_logs.readable)
        self.topics = TopicAdmin(cluster, config, topic_gone=self._topic_gone)
        self.metadata_answer = MetadataAnswer(cluster, config, self.topics)
        #: Who verifies transactional batches (KIP-890 part 1): the transaction hosting, set by the
        #: engine.  None appends them unverified, as Kafka's ReplicaManager without an
        #: AddPartitionsToTxnManager does.
        self.transaction_verifier: Optional[TransactionVerifier] = None

    def _topic_gone(self, name: str) -> None:
        self.metadata_answer.forget(name)
        self.producer_states.forget(name)
        self.coordinator_logs.forget(name)

    # -- topics, Metadata and topic admin (kgroup.server.topic_admin, kgroup.server.metadata_answer) --

    def topic_id(self, name: str) -> uuid.UUID:
        return self.topics.topic_id(name)

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]:
        return self.topics.topic_name(topic_id)

    def has_partition(self, topic: str, partition: int) -> bool:
        """Whether the cluster has this partition (KafkaApis' metadataCache.getPartitionInfo)."""
        partitions = self.cluster.topics.get(topic)
        return partitions is not None and 0 <= partition < len(partitions)

    def create_topic(self, name: str, partitions: int, replication_factor: Optional[int] = None,
                     assignments: Optional[List[List[int]]] = None, validate_only: bool = False) -> ErrorCode:
        return self.topics.create_topic(name, partitions, replication_factor, assignments, validate_only)

    def metadata(self, node_id: int, request: Any, version: int) -> Any:
        return self.metadata_answer.metadata(node_id, request, version)

    _partition_metadata = staticmethod(partition_metadata)

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

    def last_stable_offset(self, p: Partition) -> int:
        """The partition's LSO on its leader (:meth:`PartitionProducers.last_stable_offset`)."""
        log = p.leader_log()
        assert log is not None  # callers hold a led partition
        return self.producer_states.of(p).last_stable_offset(log.hw)

    # -- Produce -------------------------------------------------------------------------------

    def produce(self, node_id: int, request: Any, version: int) -> Tuple[Any, List[ProduceWait]]:
        """Append every partition's batches; the response plus the acks=all appends to wait for.

        Each partition is refused at the first check that fails, in Kafka's order: the request's
        transactional id (KafkaApis), the partition's existence and ``ProduceRequest.validateRecords``
        (KafkaApis.handleProduceRequest), acks (ReplicaManager.appendRecords), internal topics and
        leadership (ReplicaManager.appendToLocalLog), min.insync.replicas
        (Partition.appendRecordsToLeader), then what the log checks (UnifiedLog, LogValidator,
        ProducerStateManager).  A refusal answers log_start_offset -1 (``PartitionResponse``'s
        default, ``LogAppendInfo.UNKNOWN_LOG_APPEND_INFO``) except where appendToLocalLog's
        ``processFailedRecord`` puts the partition's log start in (see :meth:`_refuse_in_log`)."""
        waits: List[ProduceWait] = []
        topics = []
        # KafkaApis.handleProduceRequest: transactional records need a transactional id (and the
        # right to use it: every id may, as no authorizer runs); the whole request is refused.
        unauthorized = request.transactional_id is None and any(
            starts_transactional(data.records) for t in request.topic_data for data in t.partition_data)
        acks_valid = request.acks in (0, 1, -1)
        # ReplicaManager.handleProduceAppend verifies transactional batches before appendRecords.
        verifying = request.transactional_id is not None and self.transaction_verifier is not None \
            and self.config.transaction_partition_verification_enable
        if version < 7 and not unauthorized and any(
                self.has_partition(t.name, data.index) and names_unknown_codec(data.records)
                for t in request.topic_data for data in t.partition_data):
            # ProduceRequest.validateRecords reads the codec below v7; codec 5-7 throws out of
            # KafkaApis.handleProduceRequest, whose error answer fails every partition, appending none.
            return ProduceAnswer([TopicProduceAnswer(t.name, [
                PartitionProduceAnswer(data.index, E.UNKNOWN_SERVER_ERROR) for data in t.partition_data])
                for t in request.topic_data]), []
        for t in request.topic_data:
            results = []
            for data in t.partition_data:
                result = PartitionProduceAnswer(data.index)
                results.append(result)
                if unauthorized:
                    result.error_code = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                    continue
                if not self.has_partition(t.name, data.index):
                    result.error_code = E.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                batches, refused = self._batches(data, version, self.topics.max_message_bytes(t.name))
                if refused is not None and refused.in_request:
                    result.error_code, result.error_message = refused.code, str(refused)
                    continue
                if verifying and batches and batches[0].is_transactional \
                        and not self._verified(node_id, request.transactional_id, t.name, data.index,
                                               batches[0], version, result):
                    continue
                if not acks_valid:
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
                wait = self._append(p, batches, refused, request.acks, result)
                if wait is not None:
                    waits.append(wait)
            topics.append(TopicProduceAnswer(t.name, results))
        touched = {w.partition.key: w.partition for w in waits}
        if touched:
            self.cluster.replicate(self.cluster.now_ms, partitions=list(touched.values()))
        # Not kafka-python's struct: built per request, it cost more than the hand encoder (issue 28).
        return ProduceAnswer(topics), waits

    def _verified(self, node_id: int, transactional_id: str, topic: str, index: int,
                  first: ProducedBatch, version: int, result: Any) -> bool:
        """Whether a transactional batch may go on to the append (Kafka's
        ReplicaManager.maybeStartTransactionVerificationForPartition(s)); if not, ``result`` says why,
        with UNKNOWN_LOG_APPEND_INFO's log start (-1).  Asked only when the partition's producer state
        has no transaction of this producer and epoch open (UnifiedLog.maybeStartTransactionVerification,
        ``hasOngoingTransaction(producerId, producerEpoch)``): the first batch of each transaction on
        each partition.

        Kafka guards the asynchronous gap between the coordinator's answer and the append with a
        VerificationGuard (a marker written meanwhile must not let the batch in, UnifiedLog
        .analyzeAndValidateProducerState).  Here the question and the append happen in one call on
        the server's one thread, so no marker can be written between them: nothing to guard."""
        p, code = self._led_partition(node_id, topic, index)
        if p is None:
            result.error_code = code   # Partition.maybeStartTransactionVerification: not the leader
            return False
        entry = self.producer_states.of(p).producers.get(first.producer_id)
        if entry is not None and entry.txn_first_offset is not None and entry.epoch == first.producer_epoch:
            return True
        assert self.transaction_verifier is not None  # the caller checked
        ((_, answer),) = self.transaction_verifier.verify_partitions(
            transactional_id, first.producer_id, first.producer_epoch, [TopicPartition(topic, index)])
        if answer is E.NONE:
            return True
        result.error_code, result.error_message = produce_error(answer, version)
        return False

    @staticmethod
    def _batches(data: Any, version: int, max_message_bytes: int
                 ) -> Tuple[List[ProducedBatch], Optional[InvalidRecords]]:
        """The partition's batch, or why it cannot be appended (every check, in Kafka's order, is in
        :func:`~kgroup.server.record_log.parse_batches`)."""
        try:
            # The hand decoder's records are a view of the request, read in place (``frame``).
            frame = getattr(data, "frame", None)
            return parse_batches(data.records, frame or None, getattr(data, "records_at", 0), version,
                                 max_message_bytes), None
        except InvalidRecords as error:
            return [], error

    @staticmethod
    def _refuse_in_log(result: Any, code: ErrorCode, message: Optional[str] = None) -> None:
        """Answer an append the partition's leader refused.  ReplicaManager.appendToLocalLog answers
        CorruptRecordException and RecordTooLargeException with UNKNOWN_LOG_APPEND_INFO (log start
        -1), anything else (LogValidator's InvalidRecordException, InvalidTimestampException, the
        producer state's OutOfOrderSequenceException, NotEnoughReplicasException...) with the
        partition's log start offset (``processFailedRecord``)."""
        result.error_code = code
        result.error_message = message
        if code not in (E.CORRUPT_MESSAGE, E.MESSAGE_TOO_LARGE):
            result.log_start_offset = LOG_START_OFFSET

    def _append(self, p: Partition, batches: List[ProducedBatch], refused: Optional[InvalidRecords],
                acks: int, result: Any) -> Optional[ProduceWait]:
        acks_all = acks == -1
        if acks_all and p.is_under_min_isr():
            self._refuse_in_log(result, E.NOT_ENOUGH_REPLICAS)
            return None
        if refused is not None:
            self._refuse_in_log(result, refused.code, str(refused))
            return None
        first_offset: Optional[int] = None
        for produced in batches:
            state = self.producer_states.of(p)
            duplicate = state.check_batch(produced)
            if isinstance(duplicate, ErrorCode):
                # (A transactional batch of an older epoch is refused by its verification first, see
                # _verified; with verification off the log refuses it, answering its log start.)
                self._refuse_in_log(result, duplicate)
                return None
            if duplicate is not None:
                # A retried batch Kafka already holds: answered as it was appended, its max timestamp
                # as the append time (ProducerStateEntry.findDuplicateBatch, UnifiedLog.append).
                if first_offset is None:
                    first_offset = duplicate.first_offset
                    result.log_append_time_ms = duplicate.max_timestamp
                continue
            offset = self._append_batch(p, produced)
            first_offset = offset if first_offset is None else first_offset
        result.base_offset = first_offset if first_offset is not None else -1
        result.log_start_offset = LOG_START_OFFSET
        if not acks_all:
            return None
        log = p.leader_log()
        assert log is not None
        return ProduceWait(p, p.leader_epoch, log.leo, result)

    def _append_batch(self, p: Partition, produced: ProducedBatch) -> int:
        """Append one checked batch on ``p``'s leader and update its producer state; its base offset."""
        log = p.leader_log()
        assert log is not None  # the callers checked the leader
        stored = produced.stored_at(log.leo, p.leader_epoch)
        # One log offset per record, all pointing at the batch.  The min ISR was checked by the
        # caller; completion is tracked by the caller (ProduceWait, MarkerAppend), not the ack list.
        self.cluster.produce_many(p.topic, p.index, [BatchSlice(stored)] * stored.record_count,
                                  acks_all=False)
        self.producer_states.of(p)
        return stored.base_offset

    @staticmethod
    def settle(wait: ProduceWait) -> bool:
        """Resolve ``wait`` if it can be: True once committed (HW covers it) or failed (leader moved)."""
        p = wait.partition
        if p.leader is None or p.leader_epoch != wait.leader_epoch:
            # Kafka's DelayedProduce.tryComplete sets only the error of the partition's
            # PartitionResponse: the base offset, append time and log start of the append stay.
            wait.result.error_code = E.NOT_LEADER_OR_FOLLOWER
            return True
        return p.logs[p.leader].hw >= wait.end_offset

    # -- transaction markers (what WriteTxnMarkers does on a partition leader) ------------------------

    def write_txn_marker(self, marker: TxnMarker, now_ms: int) -> Union[MarkerAppend, ErrorCode]:
        """Append ``marker``'s control batch on its partition's leader (``TxnMarkerWriter``), ending the
        producer's transaction there.  Answers as KafkaApis.handleWriteTxnMarkersRequest does per
        partition: UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster lacks, NOT_LEADER_OR_FOLLOWER
        without a leader, NOT_ENOUGH_REPLICAS under min.insync.replicas (the append is acks=all),
        INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED for a stale producer / coordinator
        epoch.  The marker is written once the HW passes the answered offset in that leader epoch."""
        if marker.topic in INTERNAL_TOPICS:
            raise ValueError(f"markers for {marker.topic} are written by its coordinator, not the data plane")
        parts = self.cluster.topics.get(marker.topic)
        if parts is None or not 0 <= marker.partition < len(parts):
            return E.UNKNOWN_TOPIC_OR_PARTITION
        p = parts[marker.partition]
        if p.leader is None:
            return E.NOT_LEADER_OR_FOLLOWER
        if p.is_under_min_isr():
            return E.NOT_ENOUGH_REPLICAS
        code = self.producer_states.of(p).check_marker(marker)
        if code is not E.NONE:
            return code
        offset = self._append_batch(p, end_txn_marker_batch(
            marker.producer_id, marker.producer_epoch, marker.commit, marker.coordinator_epoch, now_ms))
        self.cluster.replicate(self.cluster.now_ms, partitions=[p])
        return MarkerAppend(marker.topic, marker.partition, p.leader_epoch, offset)

    # -- Fetch ---------------------------------------------------------------------------------

    def fetch(self, node_id: int, request: Any, version: int) -> Tuple[Any, int, bool]:
        """The fetch answer as of now: (response, record bytes in it, whether any partition erred).
        read_committed (isolation level 1) reads below the LSO only and lists the aborted
        transactions overlapping what it returns (UnifiedLog.read with FetchIsolation.TXN_COMMITTED);
        control batches are returned like any other (consumers skip them)."""
        budget = request.max_bytes if version >= 3 else 2 ** 31 - 1
        read_committed = request.isolation_level == _READ_COMMITTED
        total = 0
        erred = False
        topics = []
        for t in request.topics:
            parts = []
            for fp in t.partitions:
                p, code = self._led_partition(node_id, t.topic, fp.partition,
                                              fp.current_leader_epoch if version >= 9 else -1)
                answer = PartitionFetchAnswer(fp.partition, code)
                parts.append(answer)
                if p is None:
                    erred = True
                    continue
                log = p.logs[node_id]  # _led_partition: node_id leads p
                if fp.fetch_offset < 0 or fp.fetch_offset > log.leo:
                    # ReplicaManager.readFromLocalLog answers OffsetOutOfRangeException with
                    # createLogReadResult(e): high watermark, log start and LSO all unknown (-1).
                    answer.error_code = E.OFFSET_OUT_OF_RANGE
                    erred = True
                    continue
                state = self.producer_states.of(p)
                answer.high_watermark = log.hw
                answer.last_stable_offset = lso = state.last_stable_offset(log.hw)
                answer.log_start_offset = LOG_START_OFFSET
                pieces, size, read_to = read_batches(self.coordinator_logs.readable(p, log), fp.fetch_offset,
                                                     min(fp.partition_max_bytes, max(budget - total, 0)),
                                                     first=total == 0,
                                                     end_offset=lso if read_committed else log.hw)
                answer.record_pieces = pieces
                total += size
                if read_committed:
                    answer.aborted_transactions = [
                        AbortedTransactionAnswer(txn.producer_id, txn.first_offset)
                        for txn in (state.aborted_overlapping(fp.fetch_offset, read_to) if size else ())]
            topics.append(TopicFetchAnswer(t.topic, parts))
        response = FetchAnswer(topics)
        return response, total, erred

    def fetch_state(self, node_id: int, request: Any) -> Tuple[Any, ...]:
        """Everything :meth:`fetch` reads that can change while a fetch is parked: per partition
        asked for, the partition itself (a topic deleted and re-created is a new one), its leader,
        leader epoch, and the leader's HW and LEO.  Equal states give equal fetch answers: the LSO
        and the aborted transactions are read from the leader's log up to its LEO and from its HW
        (a marker moves the LEO, its replication the HW), so a parked fetch wakes when they move."""
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

    # -- ListOffsets -----------------------------------------------------------------------------

    def list_offsets(self, node_id: int, request: Any, version: int) -> Any:
        """Offsets by timestamp; read_committed (v2+, isolation level 1) answers the LSO for LATEST and
        looks up timestamps below it (Partition.fetchOffsetForTimestamp)."""
        topic_cls = ListOffsetsResponse.ListOffsetsTopicResponse
        partition_cls = topic_cls.ListOffsetsPartitionResponse
        read_committed = version >= 2 and request.isolation_level == _READ_COMMITTED
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
                log = p.leader_log()
                assert log is not None  # _led_partition: node_id leads p
                fetchable = self.last_stable_offset(p) if read_committed else log.hw
                if lp.timestamp == LATEST_TIMESTAMP:
                    answer.offset, answer.timestamp = fetchable, -1
                elif lp.timestamp == EARLIEST_TIMESTAMP:
                    answer.offset, answer.timestamp = 0, -1
                else:
                    answer.offset, answer.timestamp = offset_for_timestamp(
                        self.coordinator_logs.readable(p, log), lp.timestamp, fetchable)
                # A timestamp lookup that found no record answers no epoch (Kafka's
                # UnifiedLog.fetchOffsetByTimestamp; Kafka 4.4's recorded broker.list-offsets.* answers).
                answer.leader_epoch = p.leader_epoch if answer.offset != -1 else -1
            topics.append(topic_cls(version=version, name=t.name, partitions=parts))
        return ListOffsetsResponse(version=version, throttle_time_ms=0, topics=topics)

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
                answer.leader_epoch, answer.end_offset = epoch_end_offset(log, asked.leader_epoch)
            topics.append(topic_cls(version=version, topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(version=version, throttle_time_ms=0, topics=topics)
