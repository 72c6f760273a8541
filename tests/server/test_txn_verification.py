"""KIP-890 part 1 on the wire server: a partition leader verifies a transaction's first batch with the
transaction coordinator before appending it (Kafka's ``transaction.partition.verification.enable``,
on by default; ServerConfig.transaction_partition_verification_enable).

Driven through the sans-I/O engine (no sockets) with real InitProducerId / AddPartitionsToTxn / EndTxn
requests, so the coordinator that answers is the one a client's transaction went through.  Scenarios
ported from Kafka's ``ReplicaManagerTest`` (testTransactionVerification*, testVerificationErrorConversions,
testDisabledTransactionVerification, testVerificationForTransactionalPartitionsOnly) and
``AddPartitionsToTxnManagerTest`` (testAddPartitionsToTxnHandlerErrorHandling: the error mapping) name
their source; the recorded Kafka 4.4 answer is scenario txn.produce.partition-not-added.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import attrs
import pytest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.producer import (
    AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest, ProduceRequest,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.transaction import TransactionState
from kgroup.server.txn_verification import produce_error
from kgroup.values import TopicPartition

TXN = "tx"
_TOPIC = ProduceRequest.TopicProduceData
_NOT_ADDED = "Partition was not added to the transaction"


def _unverified(underlying: str) -> str:
    return f"Unable to verify the partition has been added to the transaction. Underlying error: {underlying}"


def records(producer_id: int, epoch: int, sequence: int, transactional: bool = True, count: int = 1) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=1_000 + i, key=None, value=b"v%d" % i, headers=[])
    return bytes(builder.build())


def produce_request(by_partition: Sequence[Tuple[int, bytes]], version: int = 9, topic: str = "foo",
                    transactional_id: Optional[str] = TXN) -> ProduceRequest:
    return ProduceRequest(version=version, transactional_id=transactional_id, acks=1, timeout_ms=1_000,
                          topic_data=[_TOPIC(version=version, name=topic, partition_data=[
                              _TOPIC.PartitionProduceData(version=version, index=index, records=data)
                              for index, data in by_partition])])


class RecordingVerifier:
    """The engine's verifier, counting what the data plane asks it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.asked: List[Tuple[str, int, int, Tuple[TopicPartition, ...]]] = []

    def verify_partitions(self, transactional_id, producer_id, producer_epoch, partitions):
        self.asked.append((transactional_id, producer_id, producer_epoch, tuple(partitions)))
        return self.inner.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)


class Txn:
    """One transactional producer on an engine harness, speaking the wire APIs as a client does:
    its sequences per partition, its transactions' requests, and what the leader answers."""

    def __init__(self, harness: Any, topic: str = "foo") -> None:
        self.harness = harness
        self.topic = topic
        self.verifier = RecordingVerifier(harness.engine.data.transaction_verifier)
        harness.engine.data.transaction_verifier = self.verifier
        self.sequences = {}
        self.init()

    @property
    def coordinator(self) -> int:
        node = self.harness.engine.transactions.coordinator_node(TXN)
        assert node is not None
        return node

    def init(self) -> None:
        answer = self.harness.call(InitProducerIdRequest(
            version=4, transactional_id=TXN, transaction_timeout_ms=60_000, producer_id=-1,
            producer_epoch=-1), node_id=self.coordinator)
        assert answer.error_code == 0
        self.producer_id, self.epoch = answer.producer_id, answer.producer_epoch
        self.sequences = {}

    def add(self, *partitions: int) -> None:
        topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        answer = self.harness.call(AddPartitionsToTxnRequest(
            version=3, v3_and_below_transactional_id=TXN, v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[topic(version=3, name=self.topic, partitions=list(partitions))]),
            node_id=self.coordinator)
        assert [p.partition_error_code for t in answer.results_by_topic_v3_and_below
                for p in t.results_by_partition] == [0] * len(partitions)

    def end(self, commit: bool, complete: bool = True) -> None:
        answer = self.harness.call(EndTxnRequest(
            version=3, transactional_id=TXN, producer_id=self.producer_id, producer_epoch=self.epoch,
            committed=commit), node_id=self.coordinator)
        assert answer.error_code == 0
        if complete:
            self.harness.advance(1_000)   # markers written and replicated, CompleteCommit/Abort written
            done = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
            assert self.state() is done

    def state(self) -> TransactionState:
        return self.harness.engine.transactions.coordinator_for(TXN).transaction(TXN).state

    def batch(self, partition: int, epoch: Optional[int] = None, transactional: bool = True) -> bytes:
        return records(self.producer_id, self.epoch if epoch is None else epoch,
                       self.sequences.get(partition, 0), transactional)

    def produce(self, *partitions: int, version: int = 9, epoch: Optional[int] = None,
                transactional: bool = True) -> List[Tuple[int, int, int, Optional[str]]]:
        """Send one batch per partition in one request: (error, base offset, log start, message) each;
        the sequence moves on where it was appended."""
        request = produce_request([(p, self.batch(p, epoch, transactional)) for p in partitions], version,
                                  self.topic)
        leader = self.harness.leader(self.topic, partitions[0])
        answer = self.harness.call(request, node_id=leader)
        out = []
        for p in answer.responses[0].partition_responses:
            if p.error_code == 0:
                self.sequences[p.index] = self.sequences.get(p.index, 0) + 1
            out.append((p.error_code, p.base_offset, p.log_start_offset, p.error_message))
        return out


class MarkersRefusedOn:
    """A marker writer whose leader for one partition cannot write markers yet (answers
    NOT_LEADER_OR_FOLLOWER, which the coordinator retries): the transaction stays in PrepareAbort."""

    def __init__(self, partition: int, inner: Any) -> None:
        self.partition = partition
        self.inner = inner

    def write_txn_marker(self, marker, now_ms):
        if marker.partition == self.partition:
            return E.NOT_LEADER_OR_FOLLOWER
        return self.inner.write_txn_marker(marker, now_ms)


def log_end(harness: Any, partition: int = 0, topic: str = "foo") -> int:
    return harness.cluster.topics[topic][partition].leader_log().leo


def latest_offset(harness: Any, partition: int) -> int:
    """ListOffsets v7 LATEST (read_uncommitted) on the partition's leader: where a consumer would stop."""
    topic = ListOffsetsRequest.ListOffsetsTopic
    answer = harness.call(ListOffsetsRequest(version=7, replica_id=-1, isolation_level=0, topics=[
        topic(version=7, name="foo", partitions=[topic.ListOffsetsPartition(
            version=7, partition_index=partition, current_leader_epoch=-1, timestamp=-1)])]),
        node_id=harness.leader("foo", partition))
    (part,) = answer.topics[0].partitions
    assert part.error_code == 0
    return part.offset


def fetched_bytes(harness: Any, partition: int) -> int:
    fetch_topic = FetchRequest.FetchTopic
    answer = harness.call(FetchRequest(
        version=11, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
            fetch_topic(version=11, topic="foo", partitions=[fetch_topic.FetchPartition(
                version=11, partition=partition, fetch_offset=0, partition_max_bytes=1 << 20,
                current_leader_epoch=-1, log_start_offset=-1)])]),
        node_id=harness.leader("foo", partition))
    return len(answer.responses[0].partitions[0].records or b"")


def _harness(make_engine: Any, brokers: int = 1, **options: Any) -> Any:
    harness = make_engine(brokers=brokers, **options)
    harness.cluster.create_topic("foo", 2, min(brokers, 3))
    harness.engine.data.topic_id("foo")
    harness.advance(harness.config.group_load_time_ms)
    return harness


@pytest.fixture
def engine(make_engine):
    """One broker, topic "foo" of two partitions, the coordinators loaded."""
    return _harness(make_engine)


@pytest.fixture
def txn(engine) -> Txn:
    return Txn(engine)


# -- a partition not added ----------------------------------------------------------------------------


@pytest.mark.parametrize("version, code, message", [
    (3, E.INVALID_TXN_STATE, None), (9, E.INVALID_TXN_STATE, _NOT_ADDED),
    (10, E.INVALID_TXN_STATE, _NOT_ADDED), (11, E.TRANSACTION_ABORTABLE, None)])
def test_a_batch_for_a_partition_not_added_is_refused_and_nothing_is_appended(
        engine, txn, version, code, message):
    """The coordinator answers TRANSACTION_ABORTABLE (TransactionCoordinator
    .handleVerifyPartitionsInTransaction); AddPartitionsToTxnManager turns it into INVALID_TXN_STATE for
    Produce v10 and older (DEFAULT_ERROR), which ReplicaManager.handleProduceAppend answers with
    "Partition was not added to the transaction", and leaves it for v11 (GENERIC_ERROR_SUPPORTED).
    UNKNOWN_LOG_APPEND_INFO: base offset and log start -1 (Kafka 4.4's recorded answer to v9, scenario
    txn.produce.partition-not-added; the message travels from v8 on).  Nothing appended: the log end,
    ListOffsets and a Fetch show it.
    (kgroup appended the batch.)"""
    txn.add(0)
    assert txn.produce(1, version=version) == [(code, -1, -1, message)]
    assert (log_end(engine, 1), latest_offset(engine, 1), fetched_bytes(engine, 1)) == (0, 0, 0)
    assert txn.verifier.asked == [(TXN, txn.producer_id, txn.epoch, (TopicPartition("foo", 1),))]


def test_a_partition_added_is_appended_and_verified_only_for_its_first_batch(engine, txn):
    """ReplicaManagerTest.testTransactionVerificationFlow: once verified and appended, the producer
    state has the transaction open at this epoch (UnifiedLog.hasOngoingTransaction(producerId,
    producerEpoch)) and later batches are appended without asking the coordinator again."""
    txn.add(0)
    assert txn.produce(0) == [(0, 0, 0, None)]
    assert txn.produce(0) == [(0, 1, 0, None)]
    assert txn.produce(0) == [(0, 2, 0, None)]
    assert len(txn.verifier.asked) == 1
    assert log_end(engine, 0) == 3


def test_a_refused_first_batch_is_verified_again_when_retried(engine, txn):
    """ReplicaManagerTest.testTransactionVerificationFlow's first half: a refused batch leaves no
    transaction open on the partition, so the same batch sent again (after the client added the
    partition) is verified again, and this time appended."""
    assert txn.produce(0)[0][0] == E.INVALID_TXN_STATE
    txn.add(0)
    assert txn.produce(0) == [(0, 0, 0, None)]
    assert len(txn.verifier.asked) == 2


def test_each_partition_of_a_request_is_verified_on_its_own(engine, txn):
    """ReplicaManager.handleProduceAppend: the unverified partitions are answered with their error, the
    others appended (ReplicaManagerTest.testTransactionVerificationGuardOnMultiplePartitions)."""
    txn.add(0)
    assert txn.produce(0, 1) == [(0, 0, 0, None), (E.INVALID_TXN_STATE, -1, -1, _NOT_ADDED)]
    assert (log_end(engine, 0), log_end(engine, 1)) == (1, 0)


def test_only_transactional_batches_are_verified(engine, txn):
    """ReplicaManagerTest.testVerificationForTransactionalPartitionsOnly: in a request with a
    transactional id, the partition with a transactional batch is verified (and refused: not added),
    the one with an idempotent batch of the same producer is appended without asking."""
    answer = engine.call(produce_request([(0, records(txn.producer_id, txn.epoch, 0)),
                                          (1, records(txn.producer_id, txn.epoch, 0, transactional=False))]))
    assert [(p.index, p.error_code) for p in answer.responses[0].partition_responses] == [
        (0, E.INVALID_TXN_STATE), (1, 0)]
    assert txn.verifier.asked == [(TXN, txn.producer_id, txn.epoch, (TopicPartition("foo", 0),))]


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_the_next_transactions_first_batch_is_verified_again(engine, txn, commit):
    """The marker ends the transaction on the partition (ProducerStateManager: currentTxnFirstOffset
    cleared), so the next transaction's first batch is verified: refused until the partition is added
    to that transaction, then appended."""
    txn.add(0)
    assert txn.produce(0)[0][0] == 0
    txn.end(commit)
    end = log_end(engine, 0)
    assert txn.produce(0) == [(E.INVALID_TXN_STATE, -1, -1, _NOT_ADDED)]
    assert log_end(engine, 0) == end
    txn.add(0)
    assert txn.produce(0) == [(0, end, 0, None)]
    assert len(txn.verifier.asked) == 3


def test_an_abort_completed_before_the_batch_arrives_keeps_it_out(engine, txn):
    """What Kafka's VerificationGuard is for (UnifiedLog.analyzeAndValidateProducerState,
    VerificationGuardTest): an abort must not let a late batch of the aborted transaction in.  In
    kgroup the coordinator's answer and the append happen in one call on one thread, so the abort is
    either wholly before the batch (here: the partition is no longer in any transaction: refused) or
    wholly after it (the batch is in the transaction the marker aborts).  The partition was added but
    had no batch yet, so no transaction was open on it."""
    txn.add(0)
    txn.end(commit=False)
    marker_only = log_end(engine, 0)
    assert txn.produce(0) == [(E.INVALID_TXN_STATE, -1, -1, _NOT_ADDED)]
    assert log_end(engine, 0) == marker_only == 1


def _abort_and_start_again_at_a_new_epoch(txn) -> int:
    """One batch in an aborted transaction, a new InitProducerId and a batch at the new epoch; the
    next sequence is the old epoch's.  Returns the old epoch."""
    txn.add(0)
    assert txn.produce(0)[0][0] == 0
    old_epoch = txn.epoch
    txn.end(commit=False)
    txn.init()
    txn.add(0)
    assert txn.produce(0)[0][0] == 0
    txn.sequences[0] = 1
    return old_epoch


def test_a_batch_while_the_abort_is_being_written_is_refused_as_retriable(engine, txn):
    """Between EndTxn and the markers the transaction is PrepareAbort: the coordinator answers
    CONCURRENT_TRANSACTIONS, which Produce v11 and older hear as NOT_ENOUGH_REPLICAS (retriable)."""
    writers = engine.engine.transactions.marker_writer
    writers.data_writer = MarkersRefusedOn(1, writers.data_writer)
    txn.add(0, 1)
    txn.end(commit=False, complete=False)
    engine.advance(1_000)
    assert txn.state() is TransactionState.PREPARE_ABORT   # partition 1's marker not written yet
    end = log_end(engine, 0)
    assert txn.produce(0) == [(E.NOT_ENOUGH_REPLICAS, -1, -1, _unverified("CONCURRENT_TRANSACTIONS"))]
    assert log_end(engine, 0) == end


def test_a_fenced_epoch_is_invalid_producer_epoch_with_no_log_start(engine, txn):
    """Scenario txn.produce.fenced-epoch: after a new InitProducerId, a batch of the old epoch has no
    transaction open at its epoch, so it is verified; the coordinator answers PRODUCER_FENCED, which
    AddPartitionsToTxnManager turns into INVALID_PRODUCER_EPOCH (what producers expect), with
    UNKNOWN_LOG_APPEND_INFO's log start -1."""
    old_epoch = _abort_and_start_again_at_a_new_epoch(txn)
    assert txn.produce(0, epoch=old_epoch) == [(E.INVALID_PRODUCER_EPOCH, -1, -1, None)]
    assert txn.verifier.asked[-1] == (TXN, txn.producer_id, old_epoch, (TopicPartition("foo", 0),))


def test_a_producer_id_the_coordinator_does_not_know_is_answered_as_it_is(engine):
    """ReplicaManagerTest.testTransactionVerificationBlocksOutOfOrderSequence's first step: the
    coordinator's INVALID_PRODUCER_ID_MAPPING is answered as it is."""
    answer = engine.call(produce_request([(0, records(7, 0, 0))]))
    part = answer.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset, part.log_start_offset) == (
        E.INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert log_end(engine, 0) == 0


def test_off_appends_a_partition_not_added_as_before(make_engine):
    """ReplicaManagerTest.testDisabledTransactionVerification: transaction.partition.verification.enable
    false: nothing is asked, the batch is appended."""
    harness = _harness(make_engine, transaction_partition_verification_enable=False)
    txn = Txn(harness)
    txn.add(0)
    assert txn.produce(1) == [(0, 0, 0, None)]
    assert txn.verifier.asked == []
    assert log_end(harness, 1) == 1


def test_turned_on_while_a_transaction_is_open_asks_nothing_for_it(engine, txn):
    """ReplicaManagerTest.testDisabledTransactionVerification's second half (the setting changed on a
    running broker): the transaction is already open on the partition, so its next batch is appended
    without asking."""
    data = engine.engine.data
    data.config = attrs.evolve(data.config, transaction_partition_verification_enable=False)
    assert txn.produce(1) == [(0, 0, 0, None)]
    data.config = attrs.evolve(data.config, transaction_partition_verification_enable=True)
    assert txn.produce(1) == [(0, 1, 0, None)]
    assert txn.verifier.asked == []


def test_with_verification_off_an_old_epoch_is_refused_by_the_log_with_its_log_start(make_engine):
    """Without verification the old epoch reaches the producer state, whose
    InvalidProducerEpochException ReplicaManager.appendToLocalLog answers with the partition's log
    start (processFailedRecord): 0, not -1."""
    harness = _harness(make_engine, transaction_partition_verification_enable=False)
    txn = Txn(harness)
    old_epoch = _abort_and_start_again_at_a_new_epoch(txn)
    assert txn.produce(0, epoch=old_epoch) == [(E.INVALID_PRODUCER_EPOCH, -1, 0, None)]


def test_a_batch_sent_to_a_follower_is_not_leader_and_not_verified(make_engine):
    """ReplicaManagerTest.testTransactionVerificationWhenNotLeader: the leader check comes first
    (Partition.maybeStartTransactionVerification): NOT_LEADER_OR_FOLLOWER, nothing asked.  (The
    answer is what kgroup gave before; that nothing is asked is the part this change could break.)"""
    harness = _harness(make_engine, brokers=3)
    txn = Txn(harness)
    txn.add(0)
    follower = next(b for b in harness.config.broker_ids if b != harness.leader("foo", 0))
    answer = harness.call(produce_request([(0, txn.batch(0))]), node_id=follower)
    part = answer.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset, part.log_start_offset) == (E.NOT_LEADER_OR_FOLLOWER, -1, -1)
    assert txn.verifier.asked == []


# -- the coordinator unavailable ----------------------------------------------------------------------


def test_a_coordinator_whose_replicas_all_failed_is_not_enough_replicas(make_engine):
    """AddPartitionsToTxnManager.verifyTransaction (testTransactionCoordinatorResolution): no alive
    leader for the transactional id's __transaction_state partition is COORDINATOR_NOT_AVAILABLE,
    which ReplicaManager answers as NOT_ENOUGH_REPLICAS (testVerificationErrorConversions); nothing
    appended.  Four brokers: the partition's three replicas fail, the data partition's leader lives."""
    harness = make_engine(brokers=4)
    state_partition = harness.cluster.topics["__transaction_state"][
        harness.engine.transactions.partition_for(TXN)]
    outside = next(b for b in harness.config.broker_ids if b not in state_partition.logs)
    harness.cluster.create_topic("foo", 2, 1, [[outside], [outside]])
    harness.advance(harness.config.group_load_time_ms)
    txn = Txn(harness)
    txn.add(0)
    for broker in list(state_partition.logs):
        harness.cluster.kill_broker(broker)
    assert state_partition.leader is None
    assert txn.produce(0) == [(E.NOT_ENOUGH_REPLICAS, -1, -1, _unverified("COORDINATOR_NOT_AVAILABLE"))]
    assert log_end(harness, 0) == 0


def test_a_coordinator_moving_or_loading_is_not_enough_replicas(make_engine):
    """The coordinator's broker fails: until the hosting has followed the failover, the old
    coordinator's slot answers NOT_COORDINATOR; while the new leader loads, COORDINATOR_LOAD_IN_PROGRESS
    (TransactionStateManager.getTransactionState); both reach the producer as NOT_ENOUGH_REPLICAS.
    Once loaded the same batch is verified and appended."""
    harness = _harness(make_engine, brokers=3)
    txn = Txn(harness)
    txn.add(0, 1)
    coordinator = txn.coordinator
    partition = next(p for p in (0, 1) if harness.leader("foo", p) != coordinator)
    harness.cluster.kill_broker(coordinator)
    tp = TopicPartition("foo", partition)
    assert harness.engine.transactions.verify_partitions(TXN, txn.producer_id, txn.epoch, [tp]) == [
        (tp, E.NOT_COORDINATOR)]
    # The engine follows the failover before it serves the produce: the new leader is loading.
    assert txn.produce(partition) == [
        (E.NOT_ENOUGH_REPLICAS, -1, -1, _unverified("COORDINATOR_LOAD_IN_PROGRESS"))]
    assert txn.coordinator != coordinator
    assert log_end(harness, partition) == 0
    harness.advance(harness.config.group_load_time_ms)
    assert txn.produce(partition)[0][:2] == (0, 0)


# -- the error mapping --------------------------------------------------------------------------------


@pytest.mark.parametrize("coordinator_code, version, expected", [
    (E.TRANSACTION_ABORTABLE, 10, (E.INVALID_TXN_STATE, _NOT_ADDED)),
    (E.TRANSACTION_ABORTABLE, 11, (E.TRANSACTION_ABORTABLE, None)),
    (E.PRODUCER_FENCED, 9, (E.INVALID_PRODUCER_EPOCH, None)),
    (E.PRODUCER_FENCED, 11, (E.INVALID_PRODUCER_EPOCH, None)),
    (E.INVALID_PRODUCER_ID_MAPPING, 9, (E.INVALID_PRODUCER_ID_MAPPING, None)),
    (E.INVALID_REQUEST, 9, (E.INVALID_REQUEST, None)),
    (E.NOT_COORDINATOR, 9, (E.NOT_ENOUGH_REPLICAS, _unverified("NOT_COORDINATOR"))),
    (E.COORDINATOR_NOT_AVAILABLE, 11, (E.NOT_ENOUGH_REPLICAS, _unverified("COORDINATOR_NOT_AVAILABLE"))),
    (E.COORDINATOR_LOAD_IN_PROGRESS, 3, (E.NOT_ENOUGH_REPLICAS, _unverified("COORDINATOR_LOAD_IN_PROGRESS"))),
    (E.CONCURRENT_TRANSACTIONS, 11, (E.NOT_ENOUGH_REPLICAS, _unverified("CONCURRENT_TRANSACTIONS"))),
])
def test_coordinator_errors_become_the_errors_producers_handle(coordinator_code, version, expected):
    """AddPartitionsToTxnManagerTest.testAddPartitionsToTxnHandlerErrorHandling and
    ReplicaManagerTest.testVerificationErrorConversions."""
    assert produce_error(coordinator_code, version) == expected
