"""One ``__transaction_state`` partition's transaction coordinator, after Kafka's ``TransactionCoordinator``.

Each handler checks the request against the transactional id's metadata as Kafka's does
(``handleInitProducerId``, ``handleAddPartitionsToTransaction``, ``handleVerifyPartitionsInTransaction``,
``endTransaction``, ``handleDescribeTransactions``, ``listTransactionStates``), moves the state
through the table (:mod:`.states`) and answers a :class:`TransactionResult`: the response and the
record of the new state.  The state changes at once; the host appends the records and holds the
responses until they are committed (Kafka keeps a pending state while the append is in flight and
answers CONCURRENT_TRANSACTIONS to what arrives meanwhile; here the request sees the state the
earlier one moved to, and its answer waits behind the earlier record).  An append refused makes
the host reload the partition from its log, which undoes the change.

Ending a transaction is in two steps, as in Kafka: EndTxn writes PrepareCommit / PrepareAbort and
is answered once that is committed; then (:meth:`TransactionCoordinator.start_markers`) a marker
goes to every partition of the transaction, and when all are written
(:meth:`TransactionCoordinator.write_markers`) CompleteCommit / CompleteAbort is written.  A
coordinator loaded from a log holding a PrepareCommit / PrepareAbort resumes its markers.

Transaction timeouts (``TransactionStateManager.abortTimedOutTransactions``): every
``abort_timed_out_transaction_cleanup_interval_ms`` while a transaction is open, each one older
than its timeout is fenced (epoch + 1, through PrepareEpochFence) and aborted with the new epoch,
so the producer that stalled is answered PRODUCER_FENCED on its next call.

Kafka's Transactions V2 (KIP-890 part 2: an epoch bump on every EndTxn, EndTxn v5) and
transactional-id expiration (``transactional.id.expiration.ms``, the Dead state) are not built.
"""
from __future__ import annotations

from typing import Callable, Dict, Hashable, Iterable, List, Optional, Tuple

import attrs

from kgroup.core import transaction_messages as tx
from kgroup.core.broker import Delivery
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction.log import TransactionLogRecord
from kgroup.core.transaction.markers import MarkerProgress, MarkerQueue
from kgroup.core.transaction.metadata import MAX_PRODUCER_EPOCH, TransactionMetadata, is_epoch_exhausted
from kgroup.core.transaction.producer_ids import ProducerIdAllocator
from kgroup.core.transaction.states import TransactionState
from kgroup.core.transaction_markers import TxnMarker, TxnMarkerWriter
from kgroup.errors import ConfigError, IllegalStateTransition
from kgroup.values import TopicPartition

__all__ = ["OFFSETS_TOPIC", "TransactionCoordinator", "TransactionCoordinatorConfig", "TransactionResult"]

E = ErrorCode
S = TransactionState
OFFSETS_TOPIC = "__consumer_offsets"


@attrs.frozen
class TransactionCoordinatorConfig:
    #: Kafka's ``transaction.max.timeout.ms``: a longer timeout is INVALID_TRANSACTION_TIMEOUT.
    transaction_max_timeout_ms: int = 900_000
    #: Kafka's ``transaction.abort.timed.out.transaction.cleanup.interval.ms``.
    abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    #: How long a failed marker write waits before it is tried again (Kafka's marker channel
    #: retries on its next send round).
    marker_retry_backoff_ms: int = 100

    def __attrs_post_init__(self) -> None:
        for name in ("transaction_max_timeout_ms", "abort_timed_out_transaction_cleanup_interval_ms"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.marker_retry_backoff_ms < 0:
            raise ConfigError(f"marker_retry_backoff_ms must be >= 0, got {self.marker_retry_backoff_ms}")


@attrs.frozen
class TransactionResult:
    deliveries: Tuple[Delivery, ...] = ()
    #: Records to append before the deliveries are released.
    records: Tuple[TransactionLogRecord, ...] = ()
    #: Transactional ids whose PrepareCommit / PrepareAbort is among ``records``: once those are
    #: committed the host calls :meth:`TransactionCoordinator.start_markers` with them.
    prepared: Tuple[str, ...] = ()


class TransactionCoordinator:
    def __init__(self, partition: int, coordinator_epoch: int, producer_ids: ProducerIdAllocator,
                 offsets_partition_for: Callable[[str], int],
                 config: TransactionCoordinatorConfig = TransactionCoordinatorConfig(),
                 now_ms: int = 0) -> None:
        self.partition = partition
        #: The ``__transaction_state`` partition's leader epoch: what markers carry.
        self.coordinator_epoch = coordinator_epoch
        self.config = config
        self._producer_ids = producer_ids
        self._offsets_partition_for = offsets_partition_for
        self._transactions: Dict[str, TransactionMetadata] = {}
        self.markers = MarkerQueue(config.marker_retry_backoff_ms)
        self._next_cleanup_ms = now_ms + config.abort_timed_out_transaction_cleanup_interval_ms

    @classmethod
    def load(cls, records: Iterable[object], partition: int, coordinator_epoch: int,
             producer_ids: ProducerIdAllocator, offsets_partition_for: Callable[[str], int],
             config: TransactionCoordinatorConfig = TransactionCoordinatorConfig(),
             now_ms: int = 0) -> "TransactionCoordinator":
        """Replay a partition's records (``TransactionStateManager.loadTransactionsForTxnTopicPartition``);
        transactions found in PrepareCommit / PrepareAbort resume writing their markers."""
        coordinator = cls(partition, coordinator_epoch, producer_ids, offsets_partition_for, config, now_ms)
        for record in records:
            if not isinstance(record, TransactionLogRecord):
                raise TypeError(f"__transaction_state-{partition} holds a {type(record).__name__}, "
                                "not a TransactionLogRecord")
            transactional_id = record.key.transactional_id
            if record.value is None:
                coordinator._transactions.pop(transactional_id, None)
                continue
            coordinator._transactions[transactional_id] = TransactionMetadata.from_value(
                transactional_id, record.value)
            producer_ids.observe(record.value.producer_id)
        prepared = [t for t, m in coordinator._transactions.items() if m.state.is_prepare]
        coordinator.start_markers(prepared, now_ms)
        return coordinator

    # -- queries --------------------------------------------------------------------------------

    def transaction(self, transactional_id: str) -> Optional[TransactionMetadata]:
        return self._transactions.get(transactional_id)

    def transactional_ids(self) -> List[str]:
        return sorted(self._transactions)

    def describe(self, transactional_id: str) -> tx.DescribedTransaction:
        """``handleDescribeTransactions`` for one id."""
        if not transactional_id:
            return tx.DescribedTransaction(E.INVALID_REQUEST, transactional_id)
        metadata = self._transactions.get(transactional_id)
        if metadata is None or metadata.state is S.DEAD:
            return tx.DescribedTransaction(E.TRANSACTIONAL_ID_NOT_FOUND, transactional_id)
        return metadata.describe()

    def list_transactions(self, request: tx.ListTransactionsRequest,
                          now_ms: int) -> List[tx.ListedTransaction]:
        """``listTransactionStates`` over this partition (unknown state names match nothing)."""
        states = {tx_state for name in request.state_filters
                  if (tx_state := TransactionState.from_kafka_name(name)) is not None}
        listed = []
        for metadata in self._transactions.values():
            if metadata.state is S.DEAD:
                continue
            if request.producer_id_filters and metadata.producer_id not in request.producer_id_filters:
                continue
            if request.state_filters and metadata.state not in states:
                continue
            if request.duration_filter_ms >= 0 \
                    and now_ms - metadata.start_timestamp_ms <= request.duration_filter_ms:
                continue
            listed.append(tx.ListedTransaction(metadata.transactional_id, metadata.producer_id,
                                               metadata.state.kafka_name))
        return listed

    # -- requests -------------------------------------------------------------------------------

    def handle(self, request_key: Hashable, request: object, now_ms: int) -> TransactionResult:
        if isinstance(request, tx.InitProducerIdRequest):
            response, records, prepared = self._init_producer_id(request, now_ms)
        elif isinstance(request, tx.AddPartitionsToTxnRequest):
            response, records = self._add_partitions(request, now_ms)
            prepared = ()
        elif isinstance(request, tx.AddOffsetsToTxnRequest):
            offsets_partition = TopicPartition(OFFSETS_TOPIC, self._offsets_partition_for(request.group_id))
            added, records = self._add_partitions(tx.AddPartitionsToTxnRequest(
                request.transactional_id, request.producer_id, request.producer_epoch, (offsets_partition,)),
                now_ms)
            response, prepared = tx.AddOffsetsToTxnResponse(added.errors[0][1]), ()
        elif isinstance(request, tx.EndTxnRequest):
            response, records, prepared = self._end_txn(request, now_ms)
        elif isinstance(request, tx.DescribeTransactionsRequest):
            response = tx.DescribeTransactionsResponse(
                tuple(self.describe(t) for t in request.transactional_ids))
            records, prepared = (), ()
        else:
            raise TypeError(f"a transaction coordinator does not answer {type(request).__name__}")
        return TransactionResult((Delivery(request_key, response),), records, prepared)

    def _init_producer_id(self, request: tx.InitProducerIdRequest, now_ms: int):
        def refuse(code: ErrorCode):
            return tx.InitProducerIdResponse(code), (), ()

        if request.transactional_id is None:
            # An idempotent producer: a fresh id, whatever it had (KIP-360 does not apply).
            return tx.InitProducerIdResponse(E.NONE, self._producer_ids.generate(), 0), (), ()
        if not request.transactional_id:
            return refuse(E.INVALID_REQUEST)
        if (request.producer_id == tx.NO_PRODUCER_ID) != (request.producer_epoch == tx.NO_PRODUCER_EPOCH):
            return refuse(E.INVALID_REQUEST)   # KafkaApis: an id without an epoch or the reverse
        if not 0 < request.transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return refuse(E.INVALID_TRANSACTION_TIMEOUT)
        metadata = self._transactions.get(request.transactional_id)
        if metadata is None:
            metadata = TransactionMetadata.create(request.transactional_id, self._producer_ids.generate(),
                                                  request.transaction_timeout_ms, now_ms)
            self._transactions[request.transactional_id] = metadata
        expected = None if request.producer_id == tx.NO_PRODUCER_ID \
            else (request.producer_id, request.producer_epoch)
        if expected is not None and not _is_valid_producer_id(metadata, *expected):
            return refuse(E.PRODUCER_FENCED)
        state = metadata.state
        if state.is_prepare:
            return refuse(E.CONCURRENT_TRANSACTIONS)
        if state is S.ONGOING:
            # Abort the open transaction first, fencing its producer; the client retries and its
            # retry bumps the epoch again (TransactionCoordinator.prepareInitProducerIdTransit).
            return refuse(E.CONCURRENT_TRANSACTIONS)[0], (self._fence_and_abort(metadata, now_ms),), \
                (metadata.transactional_id,)
        if state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            raise IllegalStateTransition(metadata.machine.name, state, S.EMPTY)
        expected_epoch = None if expected is None else expected[1]
        if metadata.is_producer_epoch_exhausted and expected_epoch in (None, metadata.producer_epoch):
            metadata.rotate_producer_id(self._producer_ids.generate(), record_last_epoch=expected is not None)
        elif expected_epoch is None:
            metadata.bump_epoch(record_last_epoch=False)
        elif metadata.producer_epoch == tx.NO_PRODUCER_EPOCH or expected_epoch == metadata.producer_epoch:
            if metadata.is_producer_epoch_exhausted:
                return refuse(E.PRODUCER_FENCED)
            metadata.bump_epoch(record_last_epoch=True)
        elif expected_epoch != metadata.last_producer_epoch:
            return refuse(E.PRODUCER_FENCED)
        # else: a retry of the bump the producer never heard about: answer the same epoch again.
        metadata.transaction_timeout_ms = request.transaction_timeout_ms
        metadata.partitions.clear()
        metadata.start_timestamp_ms = -1
        metadata.transition_to(S.EMPTY, now_ms)
        response = tx.InitProducerIdResponse(E.NONE, metadata.producer_id, metadata.producer_epoch)
        return response, (metadata.record(),), ()

    def _checked(self, transactional_id: str, producer_id: int, producer_epoch: int):
        """The id's metadata, or the error Kafka answers a producer that does not hold it."""
        if not transactional_id:
            return E.INVALID_REQUEST
        metadata = self._transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return E.PRODUCER_FENCED
        return metadata

    def verify_partitions(self, request: tx.AddPartitionsToTxnRequest) -> tx.AddPartitionsToTxnResponse:
        """KIP-890 part 1 (``handleVerifyPartitionsInTransaction``): whether each partition is in the
        producer's ongoing transaction, changing nothing.  What a partition leader asks before it
        appends a transactional batch (AddPartitionsToTxn v4 ``verify_only``, or in process:
        :meth:`kgroup.core.cluster.transaction_hosting.TransactionHosting.verify_partitions`)."""
        def answer(code: ErrorCode) -> tx.AddPartitionsToTxnResponse:
            return tx.AddPartitionsToTxnResponse(request.transactional_id,
                                                 [(tp, code) for tp in request.partitions])

        metadata = self._checked(request.transactional_id, request.producer_id, request.producer_epoch)
        if isinstance(metadata, ErrorCode):
            return answer(metadata)
        if metadata.state.is_prepare:
            return answer(E.CONCURRENT_TRANSACTIONS)
        # A partition outside the transaction is TRANSACTION_ABORTABLE at every version (Kafka
        # 3.8+, KAFKA-16314); the leader maps it for older Produce versions.
        return tx.AddPartitionsToTxnResponse(request.transactional_id, [
            (tp, E.NONE if tp in metadata.partitions else E.TRANSACTION_ABORTABLE)
            for tp in request.partitions])

    def _add_partitions(self, request: tx.AddPartitionsToTxnRequest, now_ms: int):
        def answer(code: ErrorCode):
            return tx.AddPartitionsToTxnResponse(request.transactional_id,
                                                 [(tp, code) for tp in request.partitions])

        if request.verify_only:
            return self.verify_partitions(request), ()
        metadata = self._checked(request.transactional_id, request.producer_id, request.producer_epoch)
        if isinstance(metadata, ErrorCode):
            return answer(metadata), ()
        if metadata.state.is_prepare:
            return answer(E.CONCURRENT_TRANSACTIONS), ()
        if metadata.state is S.ONGOING and metadata.partitions.issuperset(request.partitions):
            return answer(E.NONE), ()   # Kafka's shortcut: nothing new, nothing written
        if metadata.state is not S.ONGOING:
            metadata.start_timestamp_ms = now_ms
        metadata.partitions.update(request.partitions)
        metadata.transition_to(S.ONGOING, now_ms)
        return answer(E.NONE), (metadata.record(),)

    def _end_txn(self, request: tx.EndTxnRequest, now_ms: int):
        def refuse(code: ErrorCode):
            return tx.EndTxnResponse(code), (), ()

        if not request.transactional_id:
            return refuse(E.INVALID_REQUEST)
        metadata = self._transactions.get(request.transactional_id)
        if metadata is None or metadata.producer_id != request.producer_id:
            return refuse(E.INVALID_PRODUCER_ID_MAPPING)
        if request.producer_epoch != metadata.producer_epoch:
            return refuse(E.PRODUCER_FENCED)
        state, commit = metadata.state, request.committed
        if state is S.ONGOING:
            metadata.transition_to(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, now_ms)
            response = tx.EndTxnResponse(E.NONE, metadata.producer_id, metadata.producer_epoch)
            return response, (metadata.record(),), (metadata.transactional_id,)
        if state.is_complete and commit == (state is S.COMPLETE_COMMIT):
            # A retry of an EndTxn that completed: the same answer again.
            return tx.EndTxnResponse(E.NONE, metadata.producer_id, metadata.producer_epoch), (), ()
        if state.is_prepare and commit == (state is S.PREPARE_COMMIT):
            return refuse(E.CONCURRENT_TRANSACTIONS)   # a retry while the markers are written
        if state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            raise IllegalStateTransition(metadata.machine.name, state, S.PREPARE_ABORT)
        return refuse(E.INVALID_TXN_STATE)   # Empty, or the other outcome than the one under way

    def _fence_and_abort(self, metadata: TransactionMetadata, now_ms: int) -> TransactionLogRecord:
        """``prepareFenceProducerEpoch`` then ``endTransaction(ABORT)`` with the bumped epoch: the
        producer that opened the transaction is fenced wherever it goes next."""
        if metadata.producer_epoch < MAX_PRODUCER_EPOCH:
            metadata.producer_epoch += 1
        metadata.last_producer_epoch = tx.NO_PRODUCER_EPOCH
        metadata.transition_to(S.PREPARE_EPOCH_FENCE, now_ms)
        metadata.transition_to(S.PREPARE_ABORT, now_ms)
        return metadata.record()

    # -- time -----------------------------------------------------------------------------------

    def get_timer(self) -> Optional[int]:
        deadlines = [self.markers.next_deadline_ms()]
        if any(m.state is S.ONGOING for m in self._transactions.values()):
            deadlines.append(self._next_cleanup_ms)
        present = [d for d in deadlines if d is not None]
        return min(present) if present else None

    def handle_timer(self, now_ms: int) -> TransactionResult:
        """Abort the transactions past their timeout, on Kafka's cleanup interval."""
        if now_ms < self._next_cleanup_ms:
            return TransactionResult()
        interval = self.config.abort_timed_out_transaction_cleanup_interval_ms
        while self._next_cleanup_ms <= now_ms:
            self._next_cleanup_ms += interval
        expired = [m for m in self._transactions.values() if m.has_expired(now_ms)]
        records = tuple(self._fence_and_abort(m, now_ms) for m in expired)
        return TransactionResult(records=records, prepared=tuple(m.transactional_id for m in expired))

    # -- markers --------------------------------------------------------------------------------

    def start_markers(self, transactional_ids: Iterable[str], now_ms: int) -> None:
        """The PrepareCommit / PrepareAbort of these ids is committed: send their markers."""
        for transactional_id in transactional_ids:
            metadata = self._transactions.get(transactional_id)
            if metadata is None or not metadata.state.is_prepare or transactional_id in self.markers:
                continue
            commit = metadata.state is S.PREPARE_COMMIT
            self.markers.add(transactional_id, [
                TxnMarker(tp.topic, tp.partition, metadata.producer_id, metadata.producer_epoch, commit,
                          self.coordinator_epoch)
                for tp in sorted(metadata.partitions)], now_ms)

    def write_markers(self, writer: TxnMarkerWriter, progress: MarkerProgress,
                      now_ms: int) -> TransactionResult:
        """Write the markers due; complete the transactions whose markers are all written."""
        if not len(self.markers):
            return TransactionResult()
        records = []
        for transactional_id in self.markers.progress(writer, progress, now_ms):
            metadata = self._transactions[transactional_id]
            metadata.transition_to(
                S.COMPLETE_COMMIT if metadata.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT, now_ms)
            metadata.partitions.clear()
            records.append(metadata.record())
        return TransactionResult(records=tuple(records))


def _is_valid_producer_id(metadata: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
    """KIP-360's check in ``prepareInitProducerIdTransit``: the producer may bump its own id (or a
    brand-new one's), or retry after a rotation it never heard about."""
    return (metadata.producer_epoch == tx.NO_PRODUCER_EPOCH
            or producer_id == metadata.producer_id
            or (producer_id == metadata.previous_producer_id and is_epoch_exhausted(producer_epoch)))
