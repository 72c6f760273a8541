"""A transactional producer for tests on an :class:`~kgroup.testing.InMemoryKafka` (issue 26, KIP-98/447).

``kafka.transactional_producer("tx-1")`` gives an :class:`InMemoryTransactionalProducer` with the calls
and the errors of Kafka's ``KafkaProducer``: ``init_transactions``, ``begin_transaction``, ``send``,
``send_offsets_to_transaction`` (with a kgroup member's group metadata, checked by the group
coordinator as KIP-447 says), ``commit_transaction``, ``abort_transaction``.  It speaks the same
requests as a Kafka client to the cluster's transaction coordinators (FindCoordinator for key type
TRANSACTION, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit to the group
coordinator, EndTxn) and appends its records on the partitions' leaders with acks=all.  Every call
blocks until answered, as Kafka's do (up to ``max_block_ms``): on a MockClock the cluster (members,
coordinators, replication) runs while it waits, so time passes exactly as the requests need.

Errors follow Kafka's ``TransactionManager``: coordinator moves and loads are retried after
``retry_backoff_ms`` (looking the coordinator up again); PRODUCER_FENCED / INVALID_PRODUCER_EPOCH from
the coordinator are fatal (:class:`~kgroup.errors.ProducerFencedError`, only ``close`` is left); a
TxnOffsetCommit refused for the member's generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) raises
:class:`~kgroup.errors.CommitFailedError` and FENCED_INSTANCE_ID
:class:`~kgroup.errors.FencedInstanceIdError`, both abortable, as an append refused with
INVALID_PRODUCER_EPOCH is (KIP-588, :class:`~kgroup.errors.TransactionAbortableError`): the
transaction can only be aborted.

Departures from Kafka's producer: records are appended one ``send`` at a time (no batching, no
linger); a record lost in a leader change before it was acknowledged is not resent (the idempotent
producer would resend it): ``commit_transaction`` raises :class:`~kgroup.errors.TransactionAbortableError`.
A keyless record without a partition goes round robin (Kafka's sticky partitioner fills a batch first).
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, NamedTuple, Optional, Set, Tuple, Union

from kgroup.core import messages as m
from kgroup.core import transaction_messages as tx
from kgroup.core.cluster.transactional_data import TransactionalRecord
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import MemberContract
from kgroup.errors import (
    CommitFailedError, ConfigError, FencedInstanceIdError, KGroupError, ProducerFencedError,
    ProducerTimeoutError, TransactionAbortableError, TransactionError, TransactionStateError,
)
from kgroup.values import TopicPartition

if TYPE_CHECKING:
    from kgroup.testing.in_memory_transactions import InMemoryDataMixin

__all__ = [
    "FENCED_CODES", "RETRIABLE_CODES", "ConsumerGroupMetadata", "InMemoryTransactionalProducer",
    "ProducerState", "RecordMetadata", "murmur2", "transaction_answer_error",
]

E = ErrorCode
#: Answers after which the same request is sent again (after the coordinator is found again when it moved).
RETRIABLE_CODES = frozenset((E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS,
                             E.CONCURRENT_TRANSACTIONS, E.UNKNOWN_TOPIC_OR_PARTITION, E.REQUEST_TIMED_OUT,
                             E.NOT_ENOUGH_REPLICAS))
#: Answers that mean another producer epoch took over this transactional id.
FENCED_CODES = frozenset((E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH, E.INVALID_PRODUCER_ID_MAPPING))
#: FindCoordinator's key type for a consumer group (KIP-98 added 1, TRANSACTION).
GROUP_KEY_TYPE = 0
_COORDINATOR_MOVED = frozenset((E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE))
#: An append is tried again on these (the partition's leader is moving).
_APPEND_RETRIABLE = frozenset((E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS, E.LEADER_NOT_AVAILABLE))


def transaction_answer_error(result: object) -> Optional[ErrorCode]:
    """The answer's error (the first failed partition's for per-partition answers); None when the
    request was lost (a transport error, a broker that is down)."""
    if isinstance(result, (m.FindCoordinatorResponse, tx.InitProducerIdResponse, tx.AddOffsetsToTxnResponse,
                           tx.EndTxnResponse)):
        return result.error_code
    if isinstance(result, tx.AddPartitionsToTxnResponse):
        codes = [code for _tp, code in result.errors if code is not E.NONE]
        return codes[0] if codes else getattr(result, "error_code", E.NONE)
    if isinstance(result, m.TxnOffsetCommitResponse):
        codes = [p.error_code for p in result.partitions if p.error_code is not E.NONE]
        return codes[0] if codes else E.NONE
    return None


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c), as a signed 32-bit int: the default partitioner's hash."""
    mask = 0xFFFFFFFF
    multiplier = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * multiplier) & mask
        k ^= k >> 24
        k = (k * multiplier) & mask
        h = ((h * multiplier) & mask) ^ k
    tail = data[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * multiplier) & mask
    h ^= h >> 13
    h = (h * multiplier) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: object, partitions: int) -> int:
    """Kafka's default partitioner for a keyed record: ``toPositive(murmur2(key bytes)) % partitions``."""
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, (bytes, bytearray)):
        raise ConfigError(f"a record key must be str or bytes to be partitioned, got {type(key).__name__}")
    return (murmur2(bytes(key)) & 0x7FFFFFFF) % partitions


class ConsumerGroupMetadata(NamedTuple):
    """Kafka's ``ConsumerGroupMetadata``: what ``send_offsets_to_transaction`` tells the group coordinator."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: Optional[str] = None

    @classmethod
    def of(cls, member: MemberContract) -> "ConsumerGroupMetadata":
        """A kgroup member's metadata now (a KIP-848 member's generation is its member epoch)."""
        generation = member.generation
        return cls(member.config.group_id, generation.generation_id, generation.member_id,
                   member.config.group_instance_id)


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int


class ProducerState(enum.Enum):
    """Kafka's ``TransactionManager.State`` as far as a blocking producer shows it."""

    UNINITIALIZED = "Uninitialized"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


class _SentRecord(NamedTuple):
    tp: TopicPartition
    leader_epoch: int
    offset: int
    record: TransactionalRecord


class InMemoryTransactionalProducer:
    """One ``transactional.id``'s producer on an in-memory cluster (see the module doc)."""

    def __init__(self, kafka: "InMemoryDataMixin", transactional_id: str, *,
                 transaction_timeout_ms: int = 60_000, max_block_ms: int = 60_000,
                 retry_backoff_ms: int = 100, client_id: Optional[str] = None) -> None:
        if not transactional_id:
            raise ConfigError("a transactional producer needs a non-empty transactional_id")
        if kafka.transactions is None:
            raise ConfigError("this InMemoryKafka has no transaction coordinators: "
                              "build it with transactions=True")
        for name, value in (("transaction_timeout_ms", transaction_timeout_ms),
                            ("max_block_ms", max_block_ms), ("retry_backoff_ms", retry_backoff_ms)):
            if value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        self.kafka = kafka
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.max_block_ms = max_block_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.transport = kafka.transport(client_id or f"producer-{transactional_id}")
        self.state = ProducerState.UNINITIALIZED
        self.producer_id = tx.NO_PRODUCER_ID
        self.producer_epoch = tx.NO_PRODUCER_EPOCH
        self._coordinator: Optional[int] = None
        self._answers: Dict[int, object] = {}
        self._error: Optional[KGroupError] = None
        # The transaction in progress.
        self._partitions: Set[TopicPartition] = set()
        self._appended: List[_SentRecord] = []
        self._started = False
        self._closed = False

    # -- Kafka's producer calls ---------------------------------------------------------------------

    def init_transactions(self) -> None:
        """Get the producer id and epoch (fencing any older producer of this transactional id and aborting
        its open transaction, which the coordinator finishes first: CONCURRENT_TRANSACTIONS is retried)."""
        self._require(ProducerState.UNINITIALIZED, "init_transactions")
        code, answer = self._to_transaction_coordinator(
            lambda: tx.InitProducerIdRequest(self.transactional_id, self.transaction_timeout_ms),
            self._deadline())
        if code is not E.NONE or not isinstance(answer, tx.InitProducerIdResponse):
            raise self._fatal(f"InitProducerId failed: {code.name}", code)
        self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
        self.state = ProducerState.READY

    def begin_transaction(self) -> None:
        self._require(ProducerState.READY, "begin_transaction")
        self._partitions, self._appended, self._started = set(), [], False
        self.state = ProducerState.IN_TRANSACTION

    def send(self, topic: str, value: object, *, key: object = None,
             partition: Optional[int] = None) -> RecordMetadata:
        """Append one record in the transaction (the partition added to it first); its offset."""
        self._require(ProducerState.IN_TRANSACTION, "send")
        index = self.kafka.choose_partition(topic, key, partition)
        tp = TopicPartition(topic, index)
        deadline = self._deadline()
        if tp not in self._partitions:
            code, _answer = self._to_transaction_coordinator(lambda: tx.AddPartitionsToTxnRequest(
                self.transactional_id, self.producer_id, self.producer_epoch, (tp,)), deadline)
            self._check_transaction_answer(code, "AddPartitionsToTxn")
            self._partitions.add(tp)
            self._started = True
        record = TransactionalRecord(value, self.producer_id, self.producer_epoch, key)
        while True:
            appended = self.kafka.append(lambda: self._append(tp, record))
            if isinstance(appended, _SentRecord):
                self._appended.append(appended)
                return RecordMetadata(topic, index, appended.offset)
            if appended not in _APPEND_RETRIABLE:
                # KIP-588: INVALID_PRODUCER_EPOCH on a produce is abortable (the epoch was bumped).
                raise self._abortable(TransactionAbortableError(
                    f"the append to {tp.topic}-{tp.partition} was refused: {appended.name}", appended))
            self._backoff(deadline)

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Union[int, m.OffsetAndMetadata]],
                                    group_metadata: Union[ConsumerGroupMetadata, MemberContract]) -> None:
        """Commit the consumer's ``offsets`` with the transaction: AddOffsetsToTxn, then TxnOffsetCommit to
        the group coordinator with the group metadata (KIP-447: a member whose generation is gone is
        refused)."""
        self._require(ProducerState.IN_TRANSACTION, "send_offsets_to_transaction")
        if not isinstance(group_metadata, ConsumerGroupMetadata):
            group_metadata = ConsumerGroupMetadata.of(group_metadata)
        commits = tuple(m.PartitionOffsetCommit(tp, offset if isinstance(offset, m.OffsetAndMetadata)
                                                else m.OffsetAndMetadata(offset))
                        for tp, offset in sorted(offsets.items()))
        deadline = self._deadline()
        group_id = group_metadata.group_id
        code, _answer = self._to_transaction_coordinator(lambda: tx.AddOffsetsToTxnRequest(
            self.transactional_id, self.producer_id, self.producer_epoch, group_id), deadline)
        self._check_transaction_answer(code, "AddOffsetsToTxn")
        self._started = True
        request = m.TxnOffsetCommitRequest(
            self.transactional_id, group_id, self.producer_id, self.producer_epoch, commits,
            group_metadata.generation_id, group_metadata.member_id, group_metadata.group_instance_id)
        code, _answer = self._retrying(GROUP_KEY_TYPE, group_id, lambda: request, deadline)
        if code is E.NONE:
            return
        if code in FENCED_CODES:
            raise self._fatal(f"TxnOffsetCommit: {code.name}", code)
        if code in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
            raise self._abortable(CommitFailedError(
                f"TxnOffsetCommit refused with {code.name}: the member's generation "
                f"{group_metadata.generation_id} of group {group_id!r} is gone (KIP-447)", code))
        if code is E.FENCED_INSTANCE_ID:
            raise self._abortable(FencedInstanceIdError(
                f"TxnOffsetCommit refused: instance {group_metadata.group_instance_id!r} was fenced", code))
        raise self._abortable(TransactionAbortableError(f"TxnOffsetCommit refused with {code.name}", code))

    def commit_transaction(self) -> None:
        """Wait until every record is acknowledged (acks=all), then EndTxn(commit); returns once the
        coordinator has written PrepareCommit (the markers follow, as in Kafka)."""
        if self.state is ProducerState.ABORTABLE_ERROR:
            raise TransactionAbortableError("cannot commit: the transaction hit an abortable error; abort it",
                                            getattr(self._error, "error_code", None)) from self._error
        self._require(ProducerState.IN_TRANSACTION, "commit_transaction")
        deadline = self._deadline()
        self._flush(deadline)
        self._end(True, deadline)

    def flush(self) -> None:
        """Wait until every record sent is acknowledged by all in-sync replicas (Kafka's ``flush``)."""
        self._require(ProducerState.IN_TRANSACTION, "flush")
        self._flush(self._deadline())

    def _flush(self, deadline: int) -> None:
        lost: List[_SentRecord] = []
        if not self.kafka.block_until(lambda: self.kafka.hub.query(lambda now_ms: self._acknowledged(lost)),
                                      self._remaining(deadline)):
            raise ProducerTimeoutError(f"records not acknowledged within max_block_ms={self.max_block_ms}")
        if lost:
            raise self._abortable(TransactionAbortableError(
                f"{len(lost)} record(s) lost in a leader change before acks=all (first: {lost[0].tp}) "
                "- abort the transaction"))

    def abort_transaction(self) -> None:
        if self.state is ProducerState.ABORTABLE_ERROR:
            self.state = ProducerState.IN_TRANSACTION
        self._require(ProducerState.IN_TRANSACTION, "abort_transaction")
        self._end(False, self._deadline())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.transport.close()

    # -- states and errors -------------------------------------------------------------------------

    def _require(self, state: ProducerState, call: str) -> None:
        if self._closed:
            raise TransactionStateError(f"{call}: the producer is closed")
        if self.state is ProducerState.FATAL_ERROR:
            assert self._error is not None
            raise self._error
        if self.state is ProducerState.ABORTABLE_ERROR and state is ProducerState.IN_TRANSACTION:
            raise TransactionAbortableError(f"{call}: the transaction hit an abortable error; abort it",
                                            getattr(self._error, "error_code", None)) from self._error
        if self.state is not state:
            raise TransactionStateError(f"{call} needs the producer in state {state.value}, "
                                        f"it is {self.state.value}")

    def _fatal(self, message: str, code: Optional[ErrorCode]) -> KGroupError:
        error: KGroupError
        if code in FENCED_CODES:
            error = ProducerFencedError(
                f"{message}: another producer epoch owns {self.transactional_id!r}", code)
        else:
            error = TransactionError(message, code)
        self.state, self._error = ProducerState.FATAL_ERROR, error
        return error

    def _abortable(self, error: KGroupError) -> KGroupError:
        self.state, self._error = ProducerState.ABORTABLE_ERROR, error
        return error

    def _check_transaction_answer(self, code: ErrorCode, what: str) -> None:
        if code is E.NONE:
            return
        if code in FENCED_CODES:
            raise self._fatal(f"{what}: {code.name}", code)
        raise self._abortable(TransactionAbortableError(f"{what} refused with {code.name}", code))

    def _end(self, commit: bool, deadline: int) -> None:
        if self._started:
            code, _answer = self._to_transaction_coordinator(lambda: tx.EndTxnRequest(
                self.transactional_id, self.producer_id, self.producer_epoch, commit), deadline)
            if code is not E.NONE:
                raise self._fatal(f"EndTxn({'commit' if commit else 'abort'}) failed: {code.name}", code)
        # Nothing was added: there is no transaction on the coordinator to end (Kafka skips EndTxn too).
        self.state = ProducerState.READY

    # -- appends ------------------------------------------------------------------------------------

    def _append(self, tp: TopicPartition, record: TransactionalRecord) -> Union[_SentRecord, ErrorCode]:
        data = self.kafka.data
        first = data.append(tp.topic, tp.partition, [record])
        if isinstance(first, ErrorCode):
            return first
        leader_epoch = self.kafka.cluster.partition(tp.topic, tp.partition).leader_epoch
        return _SentRecord(tp, leader_epoch, first, record)

    def _acknowledged(self, lost: List[_SentRecord]) -> bool:
        """Whether every record is below its partition's high watermark; the ones a new leader lacks go
        to ``lost``."""
        lost.clear()
        done = True
        for appended in self._appended:
            partition = self.kafka.cluster.partition(appended.tp.topic, appended.tp.partition)
            leader = partition.leader
            if leader is None:
                done = False
                continue
            log = partition.logs[leader]
            if partition.leader_epoch != appended.leader_epoch and (
                    len(log.entries) <= appended.offset
                    or log.entries[appended.offset].payload is not appended.record):
                lost.append(appended)
            elif log.hw <= appended.offset:
                done = False
        return done or bool(lost)

    # -- requests -----------------------------------------------------------------------------------

    def _to_transaction_coordinator(self, build: Callable[[], object],
                                    deadline: int) -> Tuple[ErrorCode, object]:
        return self._retrying(tx.TRANSACTION_KEY_TYPE, self.transactional_id, build, deadline)

    def _retrying(self, key_type: int, key: str, build: Callable[[], object],
                  deadline: int) -> Tuple[ErrorCode, object]:
        """Send ``build()`` to the coordinator of ``key`` until the answer is not retriable (Kafka's
        TransactionManager handlers: a moved coordinator is looked up again; CONCURRENT_TRANSACTIONS,
        loading, ... wait ``retry_backoff_ms``)."""
        coordinator: Optional[int] = self._coordinator if key_type == tx.TRANSACTION_KEY_TYPE else None
        while True:
            if coordinator is None:
                found = self._call(m.FindCoordinatorRequest(key, key_type), None, deadline)
                if isinstance(found, m.FindCoordinatorResponse) and found.error_code is E.NONE:
                    coordinator = found.node_id
                else:
                    self._backoff(deadline)
                    continue
                if key_type == tx.TRANSACTION_KEY_TYPE:
                    self._coordinator = coordinator
            answer = self._call(build(), coordinator, deadline)
            code = transaction_answer_error(answer)
            if code is None or code in _COORDINATOR_MOVED:
                coordinator = None
                if key_type == tx.TRANSACTION_KEY_TYPE:
                    self._coordinator = None
            elif code not in RETRIABLE_CODES:
                return code, answer
            self._backoff(deadline)

    def _call(self, request: object, node: Optional[int], deadline: int) -> object:
        correlation_id = self.transport.send(request, node)
        while correlation_id not in self._answers:
            for completion in self.transport.poll(0):
                self._answers[completion.correlation_id] = completion.result
            if correlation_id in self._answers:
                break
            if not self.kafka.block_until(self.transport.has_completions, self._remaining(deadline)):
                raise ProducerTimeoutError(
                    f"{type(request).__name__} not answered within max_block_ms={self.max_block_ms}")
        return self._answers.pop(correlation_id)

    def _deadline(self) -> int:
        return self.kafka.now_ms() + self.max_block_ms

    def _remaining(self, deadline: int) -> int:
        return max(0, deadline - self.kafka.now_ms())

    def _backoff(self, deadline: int) -> None:
        if self._remaining(deadline) < self.retry_backoff_ms:
            raise ProducerTimeoutError(f"gave up retrying within max_block_ms={self.max_block_ms}")
        self.kafka.block_until(lambda: False, self.retry_backoff_ms)
