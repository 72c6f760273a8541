"""Transactional data on the wire server's data plane (issue 26, KIP-98): transactional and
control batches, producer state per partition, transaction markers, the last stable offset, the
aborted-transaction index, read_committed Fetch and ListOffsets.

Scenarios ported from Kafka's ``ProducerStateManagerTest`` (storage module) name their source;
the data plane is driven directly with hand-built batches (no sockets) and no transaction
coordinator: KIP-890 verification is off here (``transaction_partition_verification_enable``, as
those Kafka tests run the log without it); tests/server/test_txn_verification.py tests it.
"""
from __future__ import annotations

from typing import Any, List, Optional

import pytest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.server.control_batches import end_txn_marker, end_txn_marker_batch
from kgroup.server.crc32c import crc32c
from kgroup.server.data_plane import DataPlane
from kgroup.server.producer_state import AbortedTxn

PRODUCE_V = 9
FETCH_V = 11
_PRODUCE_TOPIC = ProduceRequest.TopicProduceData
_FETCH_TOPIC = FetchRequest.FetchTopic
_LIST_TOPIC = ListOffsetsRequest.ListOffsetsTopic
PID = 4_000
OTHER_PID = 4_001
MAX_INT = 2 ** 31 - 1


def batch(count: int, producer_id: int = -1, epoch: int = -1, sequence: int = -1,
          transactional: bool = False, value: bytes = b"v") -> bytes:
    """A v2 batch built by kafka-python's DefaultRecordBatchBuilder (transactional sets attribute bit 4)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=1_000 + i, key=None, value=value + b"%d" % i, headers=[])
    return bytes(builder.build())


def txn_batch(count: int, producer_id: int = PID, epoch: int = 0, sequence: int = 0) -> bytes:
    return batch(count, producer_id, epoch, sequence, transactional=True)


def produce_request(records: bytes, transactional_id: Optional[str] = "tx", topic: str = "t",
                    acks: int = -1, version: int = PRODUCE_V) -> ProduceRequest:
    partition = _PRODUCE_TOPIC.PartitionProduceData(version=version, index=0, records=records)
    topics = [_PRODUCE_TOPIC(version=version, name=topic, partition_data=[partition])]
    return ProduceRequest(version=version, transactional_id=transactional_id, acks=acks, timeout_ms=5_000,
                          topic_data=topics)


def fetch_request(offset: int, isolation_level: int, topic: str = "t", max_wait_ms: int = 0) -> FetchRequest:
    v = FETCH_V
    return FetchRequest(version=v, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                        isolation_level=isolation_level, session_id=0, session_epoch=-1,
                        forgotten_topics_data=[], rack_id="", topics=[
                            _FETCH_TOPIC(version=v, topic=topic, partitions=[
                                _FETCH_TOPIC.FetchPartition(version=v, partition=0, fetch_offset=offset,
                                                            partition_max_bytes=1 << 20,
                                                            current_leader_epoch=-1, log_start_offset=-1)])])


def list_offsets_request(timestamp: int, isolation_level: int, version: int = 7) -> ListOffsetsRequest:
    return ListOffsetsRequest(version=version, replica_id=-1, isolation_level=isolation_level, topics=[
        _LIST_TOPIC(version=version, name="t", partitions=[
            _LIST_TOPIC.ListOffsetsPartition(version=version, partition_index=0, current_leader_epoch=-1,
                                             timestamp=timestamp)])])


class Plane:
    """A DataPlane on a three-broker cluster with topic "t" (one partition, three replicas),
    appending transactional batches without asking a transaction coordinator."""

    def __init__(self, make_engine: Any) -> None:
        self.harness = make_engine(brokers=3, transaction_partition_verification_enable=False)
        self.cluster = self.harness.cluster
        self.cluster.create_topic("t", 1, 3)
        self.data: DataPlane = self.harness.engine.data

    @property
    def partition(self) -> Any:
        return self.cluster.topics["t"][0]

    @property
    def leader(self) -> int:
        return self.partition.leader

    def produce(self, records: bytes, transactional_id: Optional[str] = "tx", **options: Any) -> Any:
        request = produce_request(records, transactional_id, **options)
        response, _waits = self.data.produce(self.leader, request, request.API_VERSION)
        (topic,) = response.responses
        (answer,) = topic.partition_responses
        return answer

    def marker(self, commit: bool, producer_id: int = PID, epoch: int = 0, coordinator_epoch: int = 0,
               topic: str = "t", partition: int = 0) -> Any:
        return self.data.write_txn_marker(TxnMarker(topic, partition, producer_id, epoch, commit,
                                                    coordinator_epoch), now_ms=5_000)

    def fetch(self, offset: int, isolation_level: int) -> Any:
        response, _size, erred = self.data.fetch(self.leader, fetch_request(offset, isolation_level), FETCH_V)
        (topic,) = response.responses
        (answer,) = topic.partitions
        return answer

    def list_latest(self, isolation_level: int, timestamp: int = -1, version: int = 7) -> Any:
        request = list_offsets_request(timestamp, isolation_level, version)
        response = self.data.list_offsets(self.leader, request, version)
        return response.topics[0].partitions[0]

    def lso(self) -> int:
        return self.data.last_stable_offset(self.partition)

    def hw(self) -> int:
        return self.partition.leader_log().hw


@pytest.fixture
def plane(make_engine) -> Plane:
    return Plane(make_engine)


def fetched_records(records: bytes) -> List[Any]:
    """Every batch in ``records`` as kafka-python reads it: (base offset, control?, values or marker type)."""
    from kafka.record.memory_records import MemoryRecords
    out = []
    reader = MemoryRecords(records)
    while reader.has_next():
        b = reader.next_batch()
        if b.is_control_batch:
            out.append((b.base_offset, "commit" if next(iter(b)).commit else "abort"))
        else:
            out.append((b.base_offset, [r.value for r in b]))
    return out


# -- control batches ---------------------------------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_a_marker_batch_is_kafkas_end_transaction_marker(commit):
    """MemoryRecords.withEndTransactionMarker: magic 2, control + transactional attributes, no
    sequence, one ControlRecord (key: version 0, type COMMIT 1 / ABORT 0; value: version 0, the
    coordinator epoch) and a CRC32C over everything from the attributes on."""
    produced = end_txn_marker_batch(PID, 7, commit, coordinator_epoch=12, timestamp_ms=1_234)
    stored = produced.stored_at(base_offset=40, leader_epoch=3)
    parsed = DefaultRecordBatch(stored.data)
    assert parsed.validate_crc() and parsed.crc == crc32c(stored.data[21:])
    assert (parsed.magic, parsed.is_control_batch, parsed.is_transactional) == (2, True, True)
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (PID, 7, -1)
    assert (parsed.base_offset, parsed.records_count, parsed.compression_type) == (40, 1, 0)
    (record,) = list(parsed)
    assert (record.version, record.type, record.commit) == (0, 1 if commit else 0, commit)
    assert record.value == b"\x00\x00\x00\x00\x00\x0c" and record.timestamp == 1_234
    assert stored.is_control and stored.is_transactional
    assert end_txn_marker(stored) == (commit, 12)


def test_clients_may_not_write_control_batches(plane):
    """LogValidator.validateBatch: a control batch from a client is INVALID_RECORD; nothing appended."""
    data = end_txn_marker_batch(PID, 0, True, 0, 1_000).data
    answer = plane.produce(data)
    assert (answer.error_code, answer.base_offset) == (E.INVALID_RECORD, -1)
    assert plane.partition.leader_log().leo == 0


def test_transactional_records_without_a_transactional_id_are_refused(plane):
    """KafkaApis.handleProduceRequest: transactional records need a transactional id
    (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the same batch with one is appended."""
    refused = plane.produce(txn_batch(2), transactional_id=None)
    assert (refused.error_code, refused.base_offset) == (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
    accepted = plane.produce(txn_batch(2), transactional_id="tx")
    assert (accepted.error_code, accepted.base_offset) == (E.NONE, 0)
    plain = plane.produce(batch(1), transactional_id="tx")   # an id with plain records is fine too
    assert (plain.error_code, plain.base_offset) == (E.NONE, 2)


# -- producer state: sequences, epochs, transactions ------------------------------------------------------


def test_sequence_wraps_around_past_max_int(plane):
    """ProducerStateManagerTest.testProducerSequenceWrapAround: after sequence Integer.MAX_VALUE the
    next batch starts at 0."""
    assert plane.produce(batch(1, PID, 15, MAX_INT), None).error_code == E.NONE
    assert plane.produce(batch(1, PID, 15, 0), None).error_code == E.NONE
    assert plane.produce(batch(1, PID, 15, 2), None).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_batch_wrapping_the_sequence_is_a_duplicate_when_retried(plane):
    """ProducerStateManagerTest.testProducerSequenceWithWrapAroundBatchRecord: a batch from
    MAX_VALUE - 1 over the wrap holds sequences up to 1; its retry is found and answered."""
    first = plane.produce(batch(4, PID, 15, MAX_INT - 1), None)
    assert (first.error_code, first.base_offset) == (E.NONE, 0)
    assert plane.produce(batch(4, PID, 15, MAX_INT - 1), None).base_offset == 0   # retry
    assert plane.produce(batch(1, PID, 15, 2), None).base_offset == 4
    assert plane.partition.leader_log().leo == 5


def test_non_transactional_append_with_an_ongoing_transaction_is_invalid_txn_state(plane):
    """ProducerStateManagerTest.testNonTransactionalAppendWithOngoingTransaction."""
    assert plane.produce(txn_batch(1, sequence=0)).error_code == E.NONE
    answer = plane.produce(batch(1, PID, 0, 1), None)
    assert (answer.error_code, answer.base_offset) == (E.INVALID_TXN_STATE, -1)


def test_old_epoch_produce_is_invalid_producer_epoch_in_every_version(plane):
    """ProducerAppendInfo.checkProducerEpoch: since 2.7 (KIP-588) Produce answers INVALID_PRODUCER_EPOCH
    (47) to a batch from an older epoch, in every Produce version (47 was PRODUCER_FENCED's number
    before KIP-588 renamed it, so older clients read the same code)."""
    assert plane.produce(txn_batch(1, epoch=3)).error_code == E.NONE
    for version in (3, 7, PRODUCE_V, 11):
        answer = plane.produce(txn_batch(1, epoch=2, sequence=1), version=version)
        assert (answer.error_code, answer.base_offset) == (E.INVALID_PRODUCER_EPOCH, -1), version


def test_a_marker_from_an_older_epoch_is_invalid_producer_epoch(plane):
    """ProducerStateManagerTest.testOldEpochForControlRecord."""
    assert plane.produce(txn_batch(1, epoch=5)).error_code == E.NONE
    assert plane.marker(commit=True, epoch=4) == E.INVALID_PRODUCER_EPOCH
    assert plane.lso() == 0   # the transaction is still open
    assert isinstance(plane.marker(commit=True, epoch=5), MarkerAppend)


def test_coordinator_fencing(plane):
    """ProducerStateManagerTest.testCoordinatorFencing: a marker from an older transaction
    coordinator epoch is TRANSACTION_COORDINATOR_FENCED; the same or a newer one is written."""
    assert plane.produce(txn_batch(1, epoch=5)).error_code == E.NONE
    assert isinstance(plane.marker(True, epoch=5, coordinator_epoch=1), MarkerAppend)
    assert isinstance(plane.marker(True, epoch=5, coordinator_epoch=1), MarkerAppend)
    assert isinstance(plane.marker(True, epoch=5, coordinator_epoch=2), MarkerAppend)
    assert plane.marker(True, epoch=5, coordinator_epoch=1) == E.TRANSACTION_COORDINATOR_FENCED
    assert plane.partition.leader_log().leo == 4


def test_a_marker_bumping_the_epoch_resets_sequences(plane):
    """ProducerStateManagerTest.testControlRecordBumpsProducerEpoch and
    testOutOfSequenceAfterControlRecordEpochBump: after an ABORT marker at epoch + 1 the producer
    must start again at sequence 0; the old epoch is fenced."""
    assert plane.produce(txn_batch(1, epoch=0, sequence=0)).error_code == E.NONE
    assert plane.produce(txn_batch(1, epoch=0, sequence=1)).error_code == E.NONE
    assert isinstance(plane.marker(commit=False, epoch=1), MarkerAppend)
    assert plane.produce(txn_batch(1, epoch=1, sequence=2)).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plane.produce(txn_batch(1, epoch=2, sequence=2)).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plane.produce(txn_batch(1, epoch=0, sequence=2)).error_code == E.INVALID_PRODUCER_EPOCH
    resumed = plane.produce(txn_batch(1, epoch=1, sequence=0))
    assert (resumed.error_code, resumed.base_offset) == (E.NONE, 3)


def test_a_transactional_retry_answers_its_original_offset(plane):
    """ProducerStateEntry.findDuplicateBatch holds for transactional batches as for idempotent ones."""
    assert plane.produce(txn_batch(2, sequence=0)).base_offset == 0
    assert plane.produce(txn_batch(3, sequence=2)).base_offset == 2
    retried = plane.produce(txn_batch(2, sequence=0))
    assert (retried.error_code, retried.base_offset) == (E.NONE, 0)
    assert plane.partition.leader_log().leo == 5


# -- last stable offset and aborted transactions ---------------------------------------------------------


def test_first_unstable_offset(plane):
    """ProducerStateManagerTest.testFirstUnstableOffset on the data plane: the LSO is the first offset
    of the earliest undecided transaction; a transaction's marker the high watermark has not passed
    still holds it; never above the HW."""
    assert plane.produce(batch(2)).base_offset == 0                       # 0-1: plain records
    assert plane.lso() == plane.hw() == 2
    assert plane.produce(txn_batch(2, PID)).base_offset == 2              # 2-3: PID's transaction
    assert plane.produce(txn_batch(1, OTHER_PID)).base_offset == 4        # 4: OTHER_PID's
    assert (plane.hw(), plane.lso()) == (5, 2)
    commit = plane.marker(commit=True, producer_id=PID)                   # 5
    assert isinstance(commit, MarkerAppend) and commit.offset == 5
    state = plane.data.producer_states.of(plane.partition)
    assert state.last_stable_offset(high_watermark=5) == 2                # marker not yet under the HW
    assert state.last_stable_offset(high_watermark=6) == 4
    assert plane.lso() == 4 and plane.hw() == 6
    abort = plane.marker(commit=False, producer_id=OTHER_PID)             # 6
    assert isinstance(abort, MarkerAppend) and abort.offset == 6
    assert plane.lso() == plane.hw() == 7
    assert state.aborted == [AbortedTxn(OTHER_PID, 4, 6)]


def test_a_marker_without_data_ends_nothing(plane):
    """ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState / testSkipEmptyTransactions:
    a marker for a producer with no open transaction is appended but adds no aborted entry."""
    written = plane.marker(commit=False)
    assert isinstance(written, MarkerAppend) and written.offset == 0
    assert plane.data.producer_states.of(plane.partition).aborted == []
    assert plane.lso() == plane.hw() == 1


def test_read_committed_fetch_stops_at_the_lso_and_lists_aborted_transactions(plane):
    """UnifiedLog.read with FetchIsolation.TXN_COMMITTED: data below the LSO only, with the aborted
    transactions overlapping it (TransactionIndex.collectAbortedTxns); read_uncommitted reads to the
    HW with no aborted list; both carry the LSO."""
    plane.produce(txn_batch(2, PID))                      # 0-1 aborted
    plane.marker(commit=False, producer_id=PID)           # 2
    plane.produce(txn_batch(1, OTHER_PID))                # 3 committed
    plane.marker(commit=True, producer_id=OTHER_PID)      # 4
    plane.produce(txn_batch(2, PID, sequence=2))          # 5-6 open
    assert (plane.hw(), plane.lso()) == (7, 5)
    committed = plane.fetch(0, isolation_level=1)
    assert (committed.error_code, committed.high_watermark, committed.last_stable_offset) == (0, 7, 5)
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(PID, 0)]
    assert fetched_records(committed.records) == [(0, [b"v0", b"v1"]), (2, "abort"), (3, [b"v0"]),
                                                  (4, "commit")]
    uncommitted = plane.fetch(0, isolation_level=0)
    assert (uncommitted.last_stable_offset, uncommitted.aborted_transactions) == (5, None)
    assert [offset for offset, _ in fetched_records(uncommitted.records)] == [0, 2, 3, 4, 5]
    later = plane.fetch(3, isolation_level=1)             # past the aborted transaction's marker
    assert later.aborted_transactions == [] and fetched_records(later.records)[0][0] == 3
    at_lso = plane.fetch(5, isolation_level=1)
    assert (at_lso.records, at_lso.aborted_transactions) == (b"", [])
    plane.marker(commit=False, producer_id=PID)           # 7
    ended = plane.fetch(5, isolation_level=1)
    assert ended.last_stable_offset == 8
    assert [(t.producer_id, t.first_offset) for t in ended.aborted_transactions] == [(PID, 5)]


def test_list_offsets_read_committed_latest_is_the_lso(plane):
    """Partition.fetchOffsetForTimestamp: LATEST answers the LSO for read_committed, the HW otherwise;
    a timestamp lookup sees records below that bound only."""
    plane.produce(batch(1))                               # 0, timestamp 1000
    plane.produce(txn_batch(2, PID))                      # 1-2, timestamps 1000, 1001
    assert plane.list_latest(isolation_level=1).offset == 1
    assert plane.list_latest(isolation_level=0).offset == 3
    assert plane.list_latest(isolation_level=0, version=1).offset == 3   # v1 has no isolation level
    assert plane.list_latest(isolation_level=1, timestamp=1_001).offset == -1
    assert plane.list_latest(isolation_level=0, timestamp=1_001).offset == 2
    plane.marker(commit=True)
    assert plane.list_latest(isolation_level=1).offset == 4


# -- write_txn_marker answers -------------------------------------------------------------------------


def test_write_txn_marker_answers(plane):
    """KafkaApis.handleWriteTxnMarkersRequest per partition: UNKNOWN_TOPIC_OR_PARTITION for a
    partition the cluster lacks, NOT_LEADER_OR_FOLLOWER without a leader, NOT_ENOUGH_REPLICAS under
    min.insync.replicas (markers are appended with acks=all); a written one answers where, in which
    leader epoch, and is replicated at once."""
    assert plane.marker(True, topic="nope") == E.UNKNOWN_TOPIC_OR_PARTITION
    assert plane.marker(True, partition=1) == E.UNKNOWN_TOPIC_OR_PARTITION
    plane.produce(txn_batch(1))
    written = plane.marker(commit=True)
    assert written == MarkerAppend("t", 0, plane.partition.leader_epoch, 1)
    assert plane.hw() == 2   # what the transaction coordinator waits for
    with pytest.raises(ValueError, match="__consumer_offsets"):
        plane.marker(True, topic="__consumer_offsets")
    plane.partition.min_insync_replicas = 3
    plane.cluster.kill_broker(next(b for b in plane.partition.assigned if b != plane.leader))
    assert plane.marker(commit=True) == E.NOT_ENOUGH_REPLICAS
    for broker in list(plane.partition.assigned):
        plane.cluster.kill_broker(broker)
    assert plane.partition.leader is None
    assert plane.marker(commit=True) == E.NOT_LEADER_OR_FOLLOWER


# -- failover -------------------------------------------------------------------------------------------


def test_a_new_leader_rebuilds_producer_state_from_its_log(plane):
    """A new leader loads producer state from its log (UnifiedLog.rebuildProducerState): the open
    transaction still holds the LSO, the aborted index is the same, a retried batch is still found,
    an older epoch is still fenced, and the marker ends the transaction on the new leader."""
    plane.produce(txn_batch(2, OTHER_PID))                # 0-1
    plane.marker(commit=False, producer_id=OTHER_PID)     # 2
    plane.produce(txn_batch(1, PID, epoch=2, sequence=0))  # 3: open
    plane.produce(txn_batch(1, PID, epoch=2, sequence=1))  # 4
    plane.cluster.replicate(plane.cluster.now_ms)
    old_leader, old_epoch = plane.leader, plane.partition.leader_epoch
    plane.cluster.kill_broker(old_leader)
    assert plane.leader not in (None, old_leader) and plane.partition.leader_epoch > old_epoch
    assert (plane.hw(), plane.lso()) == (5, 3)
    fetched = plane.fetch(0, isolation_level=1)
    assert [(t.producer_id, t.first_offset) for t in fetched.aborted_transactions] == [(OTHER_PID, 0)]
    assert plane.produce(txn_batch(1, PID, epoch=2, sequence=1)).base_offset == 4   # retry found
    assert plane.produce(txn_batch(1, PID, epoch=1, sequence=2)).error_code == E.INVALID_PRODUCER_EPOCH
    assert plane.marker(commit=True, epoch=1) == E.INVALID_PRODUCER_EPOCH
    written = plane.marker(commit=True, epoch=2)
    assert written == MarkerAppend("t", 0, plane.partition.leader_epoch, 5)
    assert plane.lso() == plane.hw() == 6


# -- parked fetches -------------------------------------------------------------------------------------


def test_a_parked_read_committed_fetch_wakes_when_the_marker_moves_the_lso(plane):
    """DelayedFetch: a read_committed fetch at the LSO waits while the transaction is open (the
    records are there, below the HW, but not readable) and is answered when the marker commits it."""
    harness = plane.harness
    plane.produce(txn_batch(2))
    plane.cluster.replicate(plane.cluster.now_ms)
    reader = harness.connect(plane.leader)
    request = fetch_request(0, isolation_level=1, max_wait_ms=10_000)
    assert harness.send(reader, request) == []
    harness.advance(1_000)
    assert harness.replies[reader] == []                 # nothing stable to read yet
    plane.marker(commit=True)
    # The engine's turn after the write (the transaction coordinator writes markers inside one)
    # re-reads parked fetches whose partitions changed.
    replies = harness._collect(harness.engine.handle_timer(harness.now_ms))
    assert [r.connection_id for r in replies] == [reader]
    (topic,) = harness.answer(reader, request).responses
    (answer,) = topic.partitions
    assert answer.last_stable_offset == 3
    assert fetched_records(answer.records) == [(0, [b"v0", b"v1"]), (2, "commit")]


def test_a_marker_holds_the_lso_until_the_high_watermark_passes_it(plane):
    """ProducerStateManager.unreplicatedTxns: a transaction ended by a marker the HW has not passed
    is still undecided for readers (a new leader without the marker would still have it open), so
    the LSO stays at its first offset until the marker is replicated."""
    plane.produce(txn_batch(2))                                           # 0-1, replicated: HW 2
    assert (plane.hw(), plane.lso()) == (2, 0)
    followers = [b for b in plane.partition.assigned if b != plane.leader]
    for broker in followers:
        plane.cluster.slow_follower(broker, 60_000)                       # no follower fetches for now
    assert isinstance(plane.marker(commit=True), MarkerAppend)            # 2
    assert (plane.hw(), plane.lso()) == (2, 0)
    assert plane.fetch(0, isolation_level=1).records == b""
    for broker in followers:
        plane.cluster.slow_follower(broker, None)
    plane.cluster.replicate(plane.cluster.now_ms)
    assert (plane.hw(), plane.lso()) == (3, 3)
    assert fetched_records(plane.fetch(0, isolation_level=1).records) == [(0, [b"v0", b"v1"]), (2, "commit")]
