"""Exactly-once consume-transform-produce in the simulator (issue 26,
``SimConfig(processing="transactional")``).

Two pieces (the hub's backend with the transaction coordinators,
:class:`~kgroup.core.cluster.transactional_backend.TransactionalBackend`, and the transactional data of the
partitions, :class:`~kgroup.core.cluster.transactional_data.TransactionalData`, are the in-memory
cluster's, ``InMemoryKafka(transactions=True)``):

- :class:`TransactionalProducer`: the client side of one transaction per batch, as a Kafka
  application with ``transactional.id`` runs it (``KafkaProducer.beginTransaction`` ...
  ``commitTransaction``):
  FindCoordinator (TRANSACTION) and InitProducerId once, then AddPartitionsToTxn, the output
  records, AddOffsetsToTxn, TxnOffsetCommit with the consumer's group metadata captured when the
  offsets are sent (KIP-447: generation, member id, instance id; retries carry the same), the
  outputs' acks, EndTxn.  Coordinator errors and lost requests are retried (Kafka's
  ``TransactionManager`` re-finds the coordinator); a refused TxnOffsetCommit or append aborts; a
  fenced producer (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING) is dropped
  and the next transaction starts with a new InitProducerId (Kafka's application closes the fenced
  producer and makes a new one with the same ``transactional.id``).
- :class:`OutputReader`: a read_committed consumer of the output topic, recording every record it
  sees (:class:`~kgroup.sim.history.OutputObserved`), and the group's committed offsets whenever
  they change (:class:`~kgroup.sim.history.GroupOffsetObserved`).
"""
from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from kgroup.core import messages as m
from kgroup.core import transaction_messages as tx
from kgroup.core.cluster.transactional_data import TransactionalData, TransactionalRecord
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import MemberContract
from kgroup.sim.history import (
    GroupOffsetObserved, History, OutputAppended, OutputObserved, TxnAborted, TxnBegun, TxnCommitted,
    TxnEnding, TxnOffsetsAnswered, TxnOffsetsSent,
)
from kgroup.testing.transactional_producer import FENCED_CODES, RETRIABLE_CODES, transaction_answer_error
from kgroup.values import TopicPartition

__all__ = ["COMMITTED", "ABORTED", "UNKNOWN", "OutputReader", "OutputValue", "TransactionalProducer"]

E = ErrorCode
#: Outcomes of a transaction as its application learns it.
COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"
# What a transaction's answers mean is the in-memory cluster's transactional producer's
# (kgroup.testing.transactional_producer): the same retriable and fencing codes.
_RETRIABLE = RETRIABLE_CODES
_FENCED = FENCED_CODES


class OutputValue(NamedTuple):
    """The value of one output record: its text, the transaction's label in the history
    (``TxnBegun.txn``) and the input record it was made from."""

    text: str
    txn: str
    source: TopicPartition
    source_offset: int


def output_of(record: TransactionalRecord) -> OutputValue:
    value = record.value
    assert isinstance(value, OutputValue), f"not an application's output: {value!r}"
    return value


class TransactionalProducer:
    """One application's transactional producer (see the module doc); driven by the application's loop."""

    def __init__(self, member_name: str, transactional_id: str, group_id: str, output_topic: str,
                 transport, data: TransactionalData, history: History, label_prefix: str,
                 reachable: Callable[[str, int], bool], transaction_timeout_ms: int,
                 retry_backoff_ms: int = 50, offsets_outside_transaction: bool = False) -> None:
        self.member_name = member_name
        self.transactional_id = transactional_id
        self.group_id = group_id
        self.output_topic = output_topic
        self.transport = transport
        self.data = data
        self.history = history
        self.label_prefix = label_prefix
        self.reachable = reachable
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        #: A planted bug for the checker's tests: offsets go in a plain OffsetCommit before the
        #: transaction ends, not in it.
        self.offsets_outside_transaction = offsets_outside_transaction
        self.coordinator: Optional[int] = None
        self.producer_id = tx.NO_PRODUCER_ID
        self.producer_epoch = tx.NO_PRODUCER_EPOCH
        self.transactions = 0
        # The transaction in progress.
        self.txn: Optional[str] = None
        self.phase = ""
        self.member: Optional[MemberContract] = None
        self.offsets: Dict[TopicPartition, int] = {}
        self.outputs: Dict[int, List[TransactionalRecord]] = {}
        self.appended: Dict[int, Tuple[int, int]] = {}
        #: The consumer's group metadata the offsets are sent with.
        self.group_metadata: Tuple[int, str, Optional[str]] = (-1, "", None)
        self.commit_requested = False
        self.abort_recorded = False
        self.resume_phase = ""
        self.deadline_ms = 0
        self.outcome: Optional[str] = None
        self.in_flight: Optional[int] = None
        self.retry_at_ms: Optional[int] = None

    # -- the application's side ---------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.txn is not None

    def begin(self, member: MemberContract, inputs: Sequence[Tuple[TopicPartition, int, Sequence[str]]],
              partitions: int, group_metadata: Tuple[int, str, Optional[str]], now_ms: int) -> None:
        """Start the transaction of one batch: ``inputs`` holds (partition, first offset, payloads);
        ``group_metadata`` is the consumer's (generation, member id, instance id) when the poll
        returned the batch: what ``consumer.groupMetadata()`` gives the application until its next
        poll, and what the TxnOffsetCommit carries (KIP-447)."""
        self.transactions += 1
        self.txn = f"{self.label_prefix}.{self.transactions}"
        self.member = member
        self.offsets = {}
        self.outputs = {}
        self.appended = {}
        self.commit_requested = False
        self.abort_recorded = False
        self.group_metadata = group_metadata
        self.outcome = None
        self.deadline_ms = now_ms + self.transaction_timeout_ms
        for tp, first, payloads in inputs:
            self.offsets[tp] = first + len(payloads)
            out = self.outputs.setdefault(tp.partition % partitions, [])
            for i, payload in enumerate(payloads):
                out.append(TransactionalRecord(OutputValue(f"{payload}>{self.txn}", self.txn, tp, first + i),
                                               self.producer_id, self.producer_epoch))
        if self.producer_id < 0:
            self.phase = "find"
        else:
            self.phase = "add_partitions"
            self._record_begun(now_ms)
        self.retry_at_ms = None
        self._send(now_ms)

    def next_wakeup_ms(self) -> Optional[int]:
        """When the application's loop, blocked in this transaction, has something to do."""
        if self.retry_at_ms is not None:
            return self.retry_at_ms
        return self.transport.next_completion_ms()

    def poll(self, now_ms: int) -> Optional[str]:
        """Take answers and move on; the outcome once the transaction is over (None: not yet)."""
        for completion in self.transport.poll(0):
            if completion.correlation_id == self.in_flight:
                self.in_flight = None
                self._answered(completion.result, now_ms)
        if self.outcome is None and self.in_flight is None and (
                self.retry_at_ms is None or self.retry_at_ms <= now_ms):
            self.retry_at_ms = None
            self._send(now_ms)
        if self.outcome is None:
            return None
        outcome, self.txn, self.member = self.outcome, None, None
        return outcome

    def _record_begun(self, now_ms: int) -> None:
        self.history.record(TxnBegun(now_ms, self.member_name, self._label(), self.producer_id,
                                     self.producer_epoch))

    # -- the phases -------------------------------------------------------------------------------

    def _request(self, node: Optional[int], request: object) -> None:
        self.in_flight = self.transport.send(request, node)

    def _send(self, now_ms: int) -> None:
        phase, tid = self.phase, self.transactional_id
        if phase in ("find", "refind"):
            self._request(None, m.FindCoordinatorRequest(tid, tx.TRANSACTION_KEY_TYPE))
        elif phase == "init":
            self._request(self.coordinator, tx.InitProducerIdRequest(tid, self.transaction_timeout_ms))
        elif phase == "add_partitions":
            partitions = tuple(TopicPartition(self.output_topic, i) for i in sorted(self.outputs))
            self._request(self.coordinator, tx.AddPartitionsToTxnRequest(
                tid, self.producer_id, self.producer_epoch, partitions))
        elif phase == "add_offsets":
            self._request(self.coordinator, tx.AddOffsetsToTxnRequest(
                tid, self.producer_id, self.producer_epoch, self.group_id))
        elif phase == "txn_offset_commit":
            self._send_offsets(now_ms)
        elif phase == "acks":
            self._check_acks(now_ms)
        elif phase in ("commit", "abort"):
            self._request(self.coordinator, tx.EndTxnRequest(
                tid, self.producer_id, self.producer_epoch, phase == "commit"))

    def _send_offsets(self, now_ms: int) -> None:
        member = self.member
        assert member is not None
        # A retry carries the same group metadata: a rebalance since the poll fences it.
        generation, member_id, instance_id = self.group_metadata
        for tp, offset in sorted(self.offsets.items()):
            self.history.record(TxnOffsetsSent(now_ms, self.member_name, self._label(), member_id, generation,
                                               tp, offset))
        commits = tuple(m.PartitionOffsetCommit(tp, m.OffsetAndMetadata(offset))
                        for tp, offset in sorted(self.offsets.items()))
        self._request(member.coordinator_id, m.TxnOffsetCommitRequest(
            self.transactional_id, self.group_id, self.producer_id, self.producer_epoch, commits,
            generation, member_id, instance_id))

    def _label(self) -> str:
        assert self.txn is not None
        return self.txn

    def _append(self, now_ms: int) -> bool:
        """Append the outputs on their leaders; False if one was refused (the transaction aborts)."""
        cluster = self.data.cluster
        for index, records in sorted(self.outputs.items()):
            partition = cluster.partition(self.output_topic, index)
            leader = partition.leader
            if leader is None or not self.reachable(self.member_name, leader):
                return False
            records = [r._replace(producer_id=self.producer_id, producer_epoch=self.producer_epoch)
                       for r in records]
            first = self.data.append(self.output_topic, index, records)
            if isinstance(first, ErrorCode):
                return False
            self.appended[index] = (partition.leader_epoch, first + len(records) - 1)
            tp = TopicPartition(self.output_topic, index)
            for i, record in enumerate(records):
                output = output_of(record)
                self.history.record(OutputAppended(now_ms, self.member_name, self._label(), tp, first + i,
                                                   output.source, output.source_offset))
        return True

    def _check_acks(self, now_ms: int) -> None:
        """acks=all: EndTxn(commit) only once every output is replicated (the producer's flush)."""
        cluster = self.data.cluster
        for index, (leader_epoch, last) in self.appended.items():
            partition = cluster.partition(self.output_topic, index)
            if partition.leader is None or partition.leader_epoch != leader_epoch:
                self._abort("output leader changed before its ack", now_ms)
                return
            if partition.logs[partition.leader].hw <= last:
                if now_ms >= self.deadline_ms:
                    self._abort("outputs not acknowledged within the transaction timeout", now_ms)
                else:
                    self.retry_at_ms = now_ms + 5
                return
        self.phase = "commit"
        self.commit_requested = True
        self.history.record(TxnEnding(now_ms, self.member_name, self._label(), True))
        self._send(now_ms)

    def _abort(self, reason: str, now_ms: int) -> None:
        self.abort_recorded = True
        self.history.record(TxnAborted(now_ms, self.member_name, self._label(), reason))
        self.history.record(TxnEnding(now_ms, self.member_name, self._label(), False))
        self.phase = "abort"
        self._send(now_ms)

    def _fenced(self, now_ms: int, error: str) -> None:
        """Another epoch owns the id: drop this producer; the transaction's fate is the coordinator's."""
        self.producer_id, self.producer_epoch = tx.NO_PRODUCER_ID, tx.NO_PRODUCER_EPOCH
        self.coordinator = None
        if not self.commit_requested and not self.abort_recorded:
            self.abort_recorded = True
            self.history.record(TxnAborted(now_ms, self.member_name, self._label(), error))
        self.outcome = ABORTED if not self.commit_requested else UNKNOWN

    def _retry(self, now_ms: int, refind: bool) -> None:
        self.retry_at_ms = now_ms + self.retry_backoff_ms
        if refind and self.phase not in ("txn_offset_commit", "find"):
            # Kafka's TransactionManager looks the coordinator up again before the retry.
            self.resume_phase = self.phase
            self.phase = "refind"

    def _answered(self, result: object, now_ms: int) -> None:
        phase = self.phase
        code = transaction_answer_error(result)
        if phase == "txn_offset_commit":
            self.history.record(TxnOffsetsAnswered(now_ms, self.member_name, self._label(),
                                                   "TRANSPORT" if code is None else code.name))
        if phase in ("find", "refind"):
            if code is E.NONE and isinstance(result, m.FindCoordinatorResponse):
                self.coordinator = result.node_id
                self.phase = "init" if phase == "find" else self.resume_phase
                self._send(now_ms)
            else:
                self.phase = phase
                self.retry_at_ms = now_ms + self.retry_backoff_ms
            return
        if code in _FENCED and phase != "txn_offset_commit":
            self._fenced(now_ms, code.name)
            return
        if phase == "init":
            if code is E.NONE and isinstance(result, tx.InitProducerIdResponse):
                self.producer_id, self.producer_epoch = result.producer_id, result.producer_epoch
                self.phase = "add_partitions"
                self._record_begun(now_ms)
                self._send(now_ms)
            else:
                self._retry(now_ms, refind=True)
            return
        if code is not E.NONE:
            if code is None or code in _RETRIABLE:
                if now_ms >= self.deadline_ms and phase not in ("commit", "abort"):
                    self._abort(f"timed out in {phase}", now_ms)
                else:
                    # CONCURRENT_TRANSACTIONS (the last transaction's markers are still being written):
                    # the same coordinator, after the backoff.
                    self._retry(now_ms, refind=code is not E.CONCURRENT_TRANSACTIONS)
            elif phase == "txn_offset_commit":
                if code in _FENCED:
                    self._fenced(now_ms, code.name)
                else:
                    self._abort(f"TxnOffsetCommit {code.name}", now_ms)  # KIP-447 fencing
            elif phase in ("commit", "abort"):
                self._fenced(now_ms, code.name)
            else:
                self._abort(f"{phase} {code.name}", now_ms)
            return
        if phase == "add_partitions":
            if not self._append(now_ms):
                self._abort("output append refused", now_ms)
                return
            if self.offsets_outside_transaction:
                assert self.member is not None
                self.member.commit_offsets(dict(self.offsets), now_ms)
                self.phase = "acks"
            else:
                self.phase = "add_offsets"
        elif phase == "add_offsets":
            self.phase = "txn_offset_commit"
        elif phase == "txn_offset_commit":
            self.phase = "acks"
        elif phase == "commit":
            self.history.record(TxnCommitted(now_ms, self.member_name, self._label()))
            self.outcome = COMMITTED
            return
        elif phase == "abort":
            self.outcome = ABORTED
            return
        self._send(now_ms)


class OutputReader:
    """A read_committed consumer of the output topic, and a watcher of the group's committed offsets."""

    def __init__(self, data: TransactionalData, topic: str, history: History,
                 committed_offsets: Callable[[], Dict[TopicPartition, int]], interval_ms: int = 100) -> None:
        self.data = data
        self.topic = topic
        self.history = history
        self.committed_offsets = committed_offsets
        self.interval_ms = interval_ms
        self.positions: Dict[int, int] = {}
        self.group_offsets: Dict[TopicPartition, int] = {}
        self.next_ms: Optional[int] = 0

    def get_timer(self) -> Optional[int]:
        return self.next_ms

    def due(self, now_ms: int) -> bool:
        return self.next_ms is not None and self.next_ms <= now_ms

    def handle_timer(self, now_ms: int) -> None:
        if self.next_ms is None or now_ms < self.next_ms:
            return
        self.read(now_ms)
        self.next_ms = now_ms + self.interval_ms

    def read(self, now_ms: int) -> None:
        # The offsets first: an offset may become visible before its transaction's outputs are
        # readable (the markers land on each partition separately, as in Kafka), never the reverse
        # order of what a check could then misread.
        for tp, offset in sorted(self.committed_offsets().items()):
            if self.group_offsets.get(tp) != offset:
                self.group_offsets[tp] = offset
                self.history.record(GroupOffsetObserved(now_ms, tp, offset))
        for index in range(len(self.data.cluster.topics[self.topic])):
            position = self.positions.get(index, 0)
            records, self.positions[index] = self.data.read_committed(self.topic, index, position, 10_000)
            tp = TopicPartition(self.topic, index)
            for offset, payload in records:
                if isinstance(payload, TransactionalRecord):
                    output = output_of(payload)
                    self.history.record(OutputObserved(now_ms, tp, offset, output.txn, output.source,
                                                       output.source_offset))
