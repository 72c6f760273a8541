"""The transaction coordinator without a cluster: requests in, answers and ``__transaction_state``
records out, time passed in (issue 26).

Scenarios are ported from Apache Kafka's ``TransactionCoordinatorTest`` and ``TransactionMetadataTest``
(core/src/test/scala/unit/kafka/coordinator/transaction); each test names the one it ports.  Kafka's
Transactions V2 variants (EndTxn v5) are not ported: kgroup serves Transactions V1.
"""
from __future__ import annotations

from typing import Dict, List, Tuple, Union

import pytest

from kgroup.core import transaction_messages as tx
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.transaction import (
    MarkerStatus, ProducerIdAllocator, TransactionCoordinator, TransactionCoordinatorConfig,
    TransactionLogRecord, TransactionState,
)
from kgroup.core.transaction.metadata import MAX_PRODUCER_EPOCH
from kgroup.core.transaction.states import LEGAL_PREVIOUS
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.errors import IllegalStateTransition
from kgroup.values import TopicPartition

S = TransactionState
TXN = "txn-1"
FIRST_PRODUCER_ID = 1000
OFFSETS_PARTITION = 7
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
TIMEOUT_MS = 60_000


class FakeWriter:
    """A TxnMarkerWriter: appends to a per-partition offset counter, or answers a queued error."""

    def __init__(self) -> None:
        self.written: List[TxnMarker] = []
        self.errors: List[E] = []
        self.offsets: Dict[Tuple[str, int], int] = {}

    def write_txn_marker(self, marker: TxnMarker, now_ms: int) -> Union[MarkerAppend, E]:
        if self.errors:
            return self.errors.pop(0)
        self.written.append(marker)
        key = (marker.topic, marker.partition)
        offset = self.offsets.get(key, 0)
        self.offsets[key] = offset + 1
        return MarkerAppend(marker.topic, marker.partition, 0, offset)


class Harness:
    """A coordinator, the log it wrote and the clock (the hosting's part, done by hand)."""

    def __init__(self, config: TransactionCoordinatorConfig = TransactionCoordinatorConfig()) -> None:
        self.now_ms = 0
        self.producer_ids = ProducerIdAllocator(FIRST_PRODUCER_ID)
        self.config = config
        self.coordinator = TransactionCoordinator(0, 5, self.producer_ids, lambda group: OFFSETS_PARTITION,
                                                  config, self.now_ms)
        self.log: List[TransactionLogRecord] = []
        self.writer = FakeWriter()
        self.status = MarkerStatus.WRITTEN

    def call(self, request: object):
        result = self.coordinator.handle("key", request, self.now_ms)
        self._commit(result)
        (delivery,) = result.deliveries
        return delivery.response

    def _commit(self, result) -> None:
        self.log.extend(result.records)
        self.coordinator.start_markers(result.prepared, self.now_ms)

    def tick(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self._commit(self.coordinator.handle_timer(now_ms))

    def markers(self) -> None:
        self._commit(self.coordinator.write_markers(self.writer, lambda append: self.status, self.now_ms))

    def init(self, txn: str = TXN, timeout_ms: int = TIMEOUT_MS, producer_id: int = -1, epoch: int = -1):
        return self.call(tx.InitProducerIdRequest(txn, timeout_ms, producer_id, epoch))

    def add(self, producer_id: int, epoch: int, *partitions: TopicPartition, verify_only: bool = False):
        return self.call(tx.AddPartitionsToTxnRequest(TXN, producer_id, epoch, partitions, verify_only))

    def end(self, producer_id: int, epoch: int, commit: bool = True):
        return self.call(tx.EndTxnRequest(TXN, producer_id, epoch, commit))

    def state(self, txn: str = TXN) -> TransactionState:
        metadata = self.coordinator.transaction(txn)
        assert metadata is not None
        return metadata.state

    def ongoing(self):
        """An initialised producer with T0 and T1 in an open transaction: (producer id, epoch)."""
        init = self.init()
        assert self.add(init.producer_id, init.producer_epoch, T0, T1).errors == ((T0, E.NONE), (T1, E.NONE))
        return init.producer_id, init.producer_epoch

    def in_state(self, state: TransactionState):
        """A transaction moved to PrepareX / CompleteX; (producer id, epoch)."""
        producer_id, epoch = self.ongoing()
        commit = state in (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
        assert self.end(producer_id, epoch, commit).error_code == E.NONE
        if state.is_complete:
            self.markers()
        assert self.state() is state
        return producer_id, epoch


@pytest.fixture
def h() -> Harness:
    return Harness()


# -- states (TransactionMetadataTest) --------------------------------------------------------------


def test_states_keep_kafkas_ids_names_and_legal_previous_states():
    """TransactionMetadataTest.testTransactionStateIdAndNameMapping / testAllTransactionStatesAreMapped,
    and TransactionState.validPreviousStates."""
    assert [(s.value, s.kafka_name) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    assert all(S.from_kafka_name(s.kafka_name) is s for s in S) and S.from_kafka_name("Nope") is None
    assert LEGAL_PREVIOUS[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE}
    assert LEGAL_PREVIOUS[S.COMPLETE_COMMIT] == {S.PREPARE_COMMIT}


def test_an_illegal_transition_raises_naming_both_states(h):
    h.init()
    metadata = h.coordinator.transaction(TXN)
    with pytest.raises(IllegalStateTransition, match="Empty|EMPTY"):
        metadata.transition_to(S.PREPARE_COMMIT, 0)


# -- InitProducerId -------------------------------------------------------------------------------


def test_init_without_transactional_id_answers_the_next_producer_id(h):
    """shouldAcceptInitPidAndReturnNextPidWhenTransactionalIdIsNull."""
    first, second = h.init(None), h.init(None)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (E.NONE, FIRST_PRODUCER_ID, 0)
    assert second.producer_id == FIRST_PRODUCER_ID + 1 and h.log == []


def test_init_with_empty_transactional_id_is_invalid_request(h):
    """shouldReturnInvalidRequestWhenTransactionalIdIsEmpty."""
    assert h.init("").error_code == E.INVALID_REQUEST


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_init_with_a_timeout_out_of_range_is_invalid_transaction_timeout(h, timeout_ms):
    """TransactionStateManager.validateTransactionTimeoutMs: 0 < timeout <= transaction.max.timeout.ms."""
    assert h.init(timeout_ms=timeout_ms).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init(timeout_ms=900_000).error_code == E.NONE


def test_init_of_a_new_transactional_id_answers_epoch_zero_and_writes_empty(h):
    """shouldInitPidWithEpochZeroForNewTransactionalId."""
    answer = h.init()
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (E.NONE, FIRST_PRODUCER_ID, 0)
    (record,) = h.log
    assert record.key.transactional_id == TXN
    assert (record.value.state, record.value.producer_id, record.value.producer_epoch,
            record.value.transaction_timeout_ms, record.value.partitions) == (S.EMPTY, FIRST_PRODUCER_ID, 0,
                                                                              TIMEOUT_MS, ())


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_init_again_bumps_the_epoch(h, state):
    """shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExisting
    {Empty,Complete,CompleteCommit}Transaction."""
    if state is S.EMPTY:
        producer_id, epoch = h.init().producer_id, 0
    else:
        producer_id, epoch = h.in_state(state)
    again = h.init(timeout_ms=30_000)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (E.NONE, producer_id, epoch + 1)
    assert h.state() is S.EMPTY and h.log[-1].value.transaction_timeout_ms == 30_000


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_init_while_markers_are_written_is_concurrent_transactions(h, state):
    """shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepare{Commit,Abort}State."""
    h.in_state(state)
    written = len(h.log)
    assert h.init().error_code == E.CONCURRENT_TRANSACTIONS
    assert len(h.log) == written and h.state() is state


def test_init_over_an_open_transaction_fences_and_aborts_it_then_the_retry_bumps_again(h):
    """shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState: the open transaction
    is aborted with epoch + 1 (never returned), CONCURRENT_TRANSACTIONS is answered; once the abort
    completed the retry gets epoch + 2."""
    producer_id, epoch = h.ongoing()
    assert h.init().error_code == E.CONCURRENT_TRANSACTIONS
    prepare = h.log[-1].value
    assert (prepare.state, prepare.producer_epoch, prepare.partitions) == (
        S.PREPARE_ABORT, epoch + 1, (T0, T1))
    assert h.init().error_code == E.CONCURRENT_TRANSACTIONS   # markers not written yet
    h.markers()
    assert [(m.topic, m.partition, m.commit, m.producer_epoch, m.coordinator_epoch)
            for m in h.writer.written] == [("t", 0, False, epoch + 1, 5), ("t", 1, False, epoch + 1, 5)]
    assert h.state() is S.COMPLETE_ABORT
    retry = h.init()
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (E.NONE, producer_id, epoch + 2)
    # The fenced producer's own calls now fail.
    assert h.end(producer_id, epoch).error_code == E.PRODUCER_FENCED


def test_exhausted_epochs_rotate_to_a_new_producer_id(h):
    """shouldGenerateNewProducerIdIfEpochsExhausted / TransactionMetadataTest.testRotateProducerId."""
    h.init()
    metadata = h.coordinator.transaction(TXN)
    metadata.producer_epoch = MAX_PRODUCER_EPOCH - 1
    answer = h.init()
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (
        E.NONE, FIRST_PRODUCER_ID + 1, 0)
    assert h.log[-1].value.previous_producer_id == FIRST_PRODUCER_ID


def test_kip360_init_with_the_current_epoch_bumps_it_and_a_retry_gets_the_same_epoch(h):
    """testInitProducerIdWithCurrentEpochProvided /
    TransactionMetadataTest.testAttemptedEpochBumpWithLastEpoch."""
    producer_id = h.init().producer_id
    bumped = h.init(producer_id=producer_id, epoch=0)
    assert (bumped.error_code, bumped.producer_epoch) == (E.NONE, 1)
    retried = h.init(producer_id=producer_id, epoch=0)   # the answer was lost: same epoch again
    assert (retried.error_code, retried.producer_id, retried.producer_epoch) == (E.NONE, producer_id, 1)


def test_kip360_init_with_a_stale_epoch_or_another_producer_id_is_fenced(h):
    """testInitProducerIdStaleCurrentEpochProvided /
    testFenceProducerWhenMappingExistsWithDifferentProducerId /
    TransactionMetadataTest.testAttemptedEpochBumpWithFencedEpoch."""
    producer_id = h.init().producer_id
    h.init()
    h.init()   # epoch 2, last epoch forgotten (no expected epoch given)
    assert h.init(producer_id=producer_id, epoch=0).error_code == E.PRODUCER_FENCED
    assert h.init(producer_id=producer_id + 50, epoch=2).error_code == E.PRODUCER_FENCED
    assert h.init(producer_id=producer_id, epoch=-1).error_code == E.INVALID_REQUEST   # KafkaApis


def test_kip360_retry_after_a_rotation_the_producer_never_heard_about(h):
    """testRetryInitProducerIdAfterProducerIdRotation."""
    old_id = h.init().producer_id
    h.coordinator.transaction(TXN).producer_epoch = MAX_PRODUCER_EPOCH - 1
    rotated = h.init(producer_id=old_id, epoch=MAX_PRODUCER_EPOCH - 1)
    assert (rotated.error_code, rotated.producer_epoch) == (E.NONE, 0) and rotated.producer_id != old_id
    retried = h.init(producer_id=old_id, epoch=MAX_PRODUCER_EPOCH - 1)
    assert (retried.error_code, retried.producer_id, retried.producer_epoch) == (
        E.NONE, rotated.producer_id, 0)


# -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------------


def test_add_partitions_errors_before_any_write(h):
    """shouldRespondWithInvalidPidMappingOnAddPartitionsToTransactionWhenTransactionalIdNotPresent,
    ...InvalidRequest...WhenTransactionalIdIsEmpty,
    shouldRespondWithProducerFencedOnAddPartitionsWhenEpochsAreDifferent."""
    assert h.add(1, 0, T0).errors == ((T0, E.INVALID_PRODUCER_ID_MAPPING),)
    assert h.call(tx.AddPartitionsToTxnRequest("", 1, 0, (T0,))).errors == ((T0, E.INVALID_REQUEST),)
    producer_id = h.init().producer_id
    assert h.add(producer_id + 1, 0, T0).errors == ((T0, E.INVALID_PRODUCER_ID_MAPPING),)
    assert h.add(producer_id, 1, T0, T1).errors == ((T0, E.PRODUCER_FENCED), (T1, E.PRODUCER_FENCED))
    assert len(h.log) == 1


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_add_partitions_while_markers_are_written_is_concurrent_transactions(h, state):
    """shouldRespondWithConcurrentTransactionsOnAddPartitionsWhenStateIsPrepareCommit / ...PrepareAbort."""
    producer_id, epoch = h.in_state(state)
    assert h.add(producer_id, epoch, T0).errors == ((T0, E.CONCURRENT_TRANSACTIONS),)


def test_add_partitions_opens_the_transaction_and_the_same_partitions_again_write_nothing(h):
    """shouldAppendNewMetadataToLogOnAddPartitionsWhenPartitionsAdded /
    shouldRespondWithErrorsNoneOnAddPartitionWhenNoErrorsAndPartitionsTheSame."""
    producer_id = h.init().producer_id
    h.now_ms = 500
    assert h.add(producer_id, 0, T0).errors == ((T0, E.NONE),)
    ongoing = h.log[-1].value
    assert (ongoing.state, ongoing.partitions, ongoing.start_timestamp_ms) == (S.ONGOING, (T0,), 500)
    h.now_ms = 900
    written = len(h.log)
    assert h.add(producer_id, 0, T0).errors == ((T0, E.NONE),)
    assert len(h.log) == written
    h.add(producer_id, 0, T1)
    assert h.log[-1].value.partitions == (T0, T1) and h.log[-1].value.start_timestamp_ms == 500


@pytest.mark.parametrize("state", [S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_add_partitions_after_a_completed_transaction_starts_a_new_one(h, state):
    """shouldRespondWithSuccessOnAddPartitionsWhenStateIsComplete{Commit,Abort}."""
    producer_id, epoch = h.in_state(state)
    h.now_ms = 7_000
    assert h.add(producer_id, epoch, T1).errors == ((T1, E.NONE),)
    assert (h.log[-1].value.partitions, h.log[-1].value.start_timestamp_ms) == ((T1,), 7_000)


def test_verify_only_answers_per_partition_and_writes_nothing(h):
    """testVerifyPartitionHandling /
    shouldRespondWithErrorsNoneOnAddPartitionWhenOngoingVerifyOnlyAndPartitionsTheSame /
    TransactionCoordinator.handleVerifyPartitionsInTransaction: a partition outside the transaction is
    TRANSACTION_ABORTABLE at every version (Kafka 3.8+, KAFKA-16314; recorded from Kafka 4.4 by the
    conformance scenario txn.add-partitions.v4-batched)."""
    producer_id = h.init().producer_id
    h.add(producer_id, 0, T0)
    written = len(h.log)
    answer = h.add(producer_id, 0, T0, T1, verify_only=True)
    assert answer.errors == ((T0, E.NONE), (T1, E.TRANSACTION_ABORTABLE))
    assert h.add(producer_id, 1, T0, verify_only=True).errors == ((T0, E.PRODUCER_FENCED),)
    assert len(h.log) == written and h.coordinator.transaction(TXN).partitions == {T0}


def test_add_offsets_adds_the_groups_offsets_partition(h):
    """KafkaApis.handleAddOffsetsToTxnRequest: __consumer_offsets-partitionFor(group) joins the
    transaction."""
    producer_id = h.init().producer_id
    answer = h.call(tx.AddOffsetsToTxnRequest(TXN, producer_id, 0, "group-a"))
    assert answer.error_code == E.NONE
    offsets = TopicPartition("__consumer_offsets", OFFSETS_PARTITION)
    assert h.coordinator.transaction(TXN).partitions == {offsets}
    assert h.call(tx.AddOffsetsToTxnRequest(TXN, producer_id, 3, "group-a")).error_code == E.PRODUCER_FENCED


# -- EndTxn ---------------------------------------------------------------------------------------


def test_end_txn_errors_before_any_write(h):
    """shouldReplyWithInvalidPidMappingOnEndTxnWhenTxnIdDoesntExist / ...WhenPidDosentMatchMapped /
    shouldReturnInvalidEpochOnEndTxnWhenEpochIsLarger / ...Smaller / ...WhenTransactionalIdIsEmpty."""
    assert h.end(1, 0).error_code == E.INVALID_PRODUCER_ID_MAPPING
    assert h.call(tx.EndTxnRequest("", 1, 0, True)).error_code == E.INVALID_REQUEST
    producer_id, epoch = h.ongoing()
    h.init()
    h.markers()
    h.init()  # epoch + 2
    assert h.end(producer_id + 1, epoch + 2).error_code == E.INVALID_PRODUCER_ID_MAPPING
    assert h.end(producer_id, epoch + 3).error_code == E.PRODUCER_FENCED
    assert h.end(producer_id, epoch).error_code == E.PRODUCER_FENCED


@pytest.mark.parametrize("state, commit, expected", [
    (S.COMPLETE_COMMIT, True, E.NONE),
    (S.COMPLETE_ABORT, False, E.NONE),
    (S.COMPLETE_ABORT, True, E.INVALID_TXN_STATE),
    (S.COMPLETE_COMMIT, False, E.INVALID_TXN_STATE),
    (S.PREPARE_COMMIT, True, E.CONCURRENT_TRANSACTIONS),
    (S.PREPARE_ABORT, True, E.INVALID_TXN_STATE),
    (S.PREPARE_ABORT, False, E.CONCURRENT_TRANSACTIONS),
    (S.PREPARE_COMMIT, False, E.INVALID_TXN_STATE),
])
def test_end_txn_retried_or_crossed_answers_as_kafka(h, state, commit, expected):
    """shouldReturnOkOnEndTxnWhenStatusIsCompleteCommitAndResultIsCommit / ...CompleteAbortAndResultIsAbort,
    shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort /
    ...CompleteCommitAndResultIsNotCommit / ...PrepareAbort,
    shouldReturnConcurrentTransactionsOnEndTxnRequestWhenStatusIsPrepareCommit."""
    producer_id, epoch = h.in_state(state)
    written = len(h.log)
    assert h.end(producer_id, epoch, commit).error_code == expected
    assert len(h.log) == written and h.state() is state


def test_end_txn_of_an_empty_transaction_is_invalid_txn_state(h):
    """TransactionCoordinator.endTransaction: Empty -> INVALID_TXN_STATE."""
    producer_id = h.init().producer_id
    assert h.end(producer_id, 0).error_code == E.INVALID_TXN_STATE


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_writes_prepare_then_markers_then_complete(h, commit):
    """shouldAppendPrepare{Commit,Abort}ToLogOnEndTxnWhenStatusIsOngoingAndResultIs{Commit,Abort}, then
    TransactionMarkerChannelManager: one marker per partition, CompleteX once all are written."""
    producer_id, epoch = h.ongoing()
    answer = h.end(producer_id, epoch, commit)
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (E.NONE, producer_id, epoch)
    prepare = h.log[-1].value
    assert prepare.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert prepare.partitions == (T0, T1)
    h.status = MarkerStatus.PENDING
    h.markers()
    assert len(h.writer.written) == 2 and h.state() is prepare.state   # appended, not replicated
    h.markers()
    assert len(h.writer.written) == 2                                  # not written twice
    h.status = MarkerStatus.WRITTEN
    h.markers()
    complete = h.log[-1].value
    assert complete.state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT) and complete.partitions == ()
    assert all(m.commit is commit and m.producer_id == producer_id for m in h.writer.written)


def test_a_failed_marker_write_is_retried_after_the_backoff(h):
    """TransactionMarkerRequestCompletionHandler: NOT_LEADER_OR_FOLLOWER and the like are retried."""
    producer_id, epoch = h.ongoing()
    h.end(producer_id, epoch)
    h.writer.errors = [E.NOT_LEADER_OR_FOLLOWER]
    h.markers()
    assert [m.partition for m in h.writer.written] == [1]
    backoff = h.config.marker_retry_backoff_ms
    assert h.coordinator.get_timer() == backoff
    h.now_ms = backoff - 1
    h.markers()
    assert len(h.writer.written) == 1 and h.state() is S.PREPARE_COMMIT
    h.now_ms = backoff
    h.markers()
    assert [m.partition for m in h.writer.written] == [1, 0] and h.state() is S.COMPLETE_COMMIT


def test_a_marker_lost_in_a_leader_change_is_written_again(h):
    """A marker counts once the HW passed it in the epoch it was appended in
    (kgroup.core.transaction_markers)."""
    producer_id, epoch = h.ongoing()
    h.end(producer_id, epoch)
    h.status = MarkerStatus.PENDING
    h.markers()
    h.status = MarkerStatus.LOST
    h.markers()
    assert len(h.writer.written) == 4 and h.state() is S.PREPARE_COMMIT
    h.status = MarkerStatus.WRITTEN
    h.markers()
    assert h.state() is S.COMPLETE_COMMIT


def test_markers_for_a_deleted_partition_are_skipped(h):
    """TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue skips a partition without a leader
    (deleted); UNKNOWN_TOPIC_OR_PARTITION from the writer ends that partition's part."""
    producer_id, epoch = h.ongoing()
    h.end(producer_id, epoch, commit=False)
    h.writer.errors = [E.UNKNOWN_TOPIC_OR_PARTITION]
    h.markers()
    assert h.state() is S.COMPLETE_ABORT and [m.partition for m in h.writer.written] == [1]


# -- timeouts -------------------------------------------------------------------------------------


def test_an_expired_transaction_is_aborted_with_a_bumped_epoch_fencing_its_producer():
    """shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch: on the cleanup interval after the
    timeout, PrepareAbort with epoch + 1; the producer's next call is fenced."""
    h = Harness(TransactionCoordinatorConfig(abort_timed_out_transaction_cleanup_interval_ms=1_000))
    assert h.coordinator.get_timer() is None   # no open transaction, no cleanup round
    init = h.init(timeout_ms=2_500)
    h.now_ms = 100
    h.add(init.producer_id, 0, T0)
    assert h.coordinator.get_timer() == 1_000
    for now_ms in (1_000, 2_000):
        h.tick(now_ms)
        assert h.state() is S.ONGOING          # 100 + 2,500 not passed yet
    h.tick(3_000)
    assert h.state() is S.PREPARE_ABORT
    assert (h.log[-1].value.producer_epoch, h.log[-1].value.state) == (1, S.PREPARE_ABORT)
    h.markers()
    assert h.state() is S.COMPLETE_ABORT
    assert all(m.producer_epoch == 1 and not m.commit for m in h.writer.written)
    assert h.add(init.producer_id, 0, T0).errors == ((T0, E.PRODUCER_FENCED),)
    assert h.end(init.producer_id, 0).error_code == E.PRODUCER_FENCED
    assert h.coordinator.get_timer() is None


# -- load, describe, list -------------------------------------------------------------------------


def test_load_replays_the_log_and_resumes_markers_of_a_prepared_transaction(h):
    """TransactionStateManager.loadTransactionsForTxnTopicPartition: metadata rebuilt from the records;
    a transaction in PrepareCommit has its markers sent again."""
    producer_id, epoch = h.ongoing()
    h.end(producer_id, epoch)                      # PrepareCommit, markers never written here
    h.call(tx.InitProducerIdRequest("other", 10_000))
    allocator = ProducerIdAllocator(0)
    loaded = TransactionCoordinator.load(h.log, 0, 6, allocator, lambda group: OFFSETS_PARTITION, now_ms=50)
    metadata = loaded.transaction(TXN)
    assert (metadata.state, metadata.producer_id, metadata.producer_epoch, metadata.partitions) == (
        S.PREPARE_COMMIT, producer_id, epoch, {T0, T1})
    assert loaded.transaction("other").state is S.EMPTY
    assert allocator.next_producer_id == FIRST_PRODUCER_ID + 2   # past every id in the log
    assert [(m.partition, m.commit, m.coordinator_epoch) for m in loaded.markers.unwritten(TXN)] == [
        (0, True, 6), (1, True, 6)]
    result = loaded.write_markers(FakeWriter(), lambda append: MarkerStatus.WRITTEN, 60)
    assert [r.value.state for r in result.records] == [S.COMPLETE_COMMIT]
    tombstone = TransactionLogRecord(h.log[0].key, None)
    reloaded = TransactionCoordinator.load(h.log + [tombstone], 0, 6, allocator, lambda g: 0)
    assert reloaded.transaction(TXN) is None
    with pytest.raises(TypeError, match="not a TransactionLogRecord"):
        TransactionCoordinator.load(["junk"], 0, 6, allocator, lambda g: 0)


def test_describe_transactions(h):
    """testDescribeTransactions / testDescribeTransactionsWithEmptyTransactionalId; unknown ids are
    TRANSACTIONAL_ID_NOT_FOUND."""
    h.now_ms = 40
    producer_id, epoch = h.ongoing()
    answer = h.call(tx.DescribeTransactionsRequest((TXN, "", "nope")))
    described, empty, unknown = answer.transactions
    assert described == tx.DescribedTransaction(E.NONE, TXN, "Ongoing", TIMEOUT_MS, 40, producer_id, epoch,
                                                (T0, T1))
    assert (empty.error_code, unknown.error_code) == (E.INVALID_REQUEST, E.TRANSACTIONAL_ID_NOT_FOUND)


def test_describe_error_answers_carry_the_schema_defaults(h):
    """An error answer of DescribeTransactions sets only the id and the error code
    (TransactionCoordinator.handleDescribeTransactions); the other fields keep the schema's
    defaults, 0, as Kafka 4.4 answers (conformance scenarios txn.describe.unknown and
    txn.init.invalid-timeout)."""
    (unknown,) = h.call(tx.DescribeTransactionsRequest(("nope",))).transactions
    assert unknown == tx.DescribedTransaction(E.TRANSACTIONAL_ID_NOT_FOUND, "nope", "", 0, 0, 0, 0, ())


def test_list_transactions_filters_by_state_producer_and_duration(h):
    """TransactionStateManager.listTransactionStates (and KIP-994's duration filter)."""
    producer_id, _ = h.ongoing()
    other = h.init("other").producer_id
    h.now_ms = 5_000
    listed = h.coordinator.list_transactions(tx.ListTransactionsRequest(), h.now_ms)
    assert sorted((t.transactional_id, t.state) for t in listed) == [("other", "Empty"), (TXN, "Ongoing")]
    only = h.coordinator.list_transactions(tx.ListTransactionsRequest(("Ongoing",)), h.now_ms)
    assert [t.transactional_id for t in only] == [TXN]
    assert [t.transactional_id for t in h.coordinator.list_transactions(
        tx.ListTransactionsRequest(producer_id_filters=(other,)), h.now_ms)] == ["other"]
    assert h.coordinator.list_transactions(tx.ListTransactionsRequest(("Nope",)), h.now_ms) == []
    older = h.coordinator.list_transactions(
        tx.ListTransactionsRequest(("Ongoing",), duration_filter_ms=4_999), h.now_ms)
    assert [t.producer_id for t in older] == [producer_id]
    assert h.coordinator.list_transactions(tx.ListTransactionsRequest(("Ongoing",), duration_filter_ms=5_000),
                                           h.now_ms) == []
