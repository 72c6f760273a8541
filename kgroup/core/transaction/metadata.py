"""One transactional id's state (Kafka's ``TransactionMetadata``).

The producer id and epoch the id holds now (and the previous ones, for KIP-360 retries), its
timeout, the partitions of its open transaction, when that transaction started, and its state,
moved only through the table in :mod:`.states`.  The coordinator changes it in place and writes
:meth:`TransactionMetadata.record` after every transition.
"""
from __future__ import annotations

from typing import Set

import attrs

from kgroup.core import transaction_messages as tx
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import StateMachine
from kgroup.core.transaction.log import TransactionLogKey, TransactionLogRecord, TransactionLogValue
from kgroup.core.transaction.states import LEGAL_PREVIOUS, TransactionState
from kgroup.values import TopicPartition

__all__ = ["MAX_PRODUCER_EPOCH", "TransactionMetadata", "is_epoch_exhausted"]

#: ``Short.MaxValue``: the last epoch a producer id can have.
MAX_PRODUCER_EPOCH = 32767


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: one bump left, kept for fencing."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@attrs.define(eq=False)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    machine: StateMachine[TransactionState]
    #: KIP-360: the producer id before a rotation (-1: none), and the epoch before the last bump
    #: (-1: none; not in the log, as in Kafka, so a reloaded id forgets it).
    previous_producer_id: int = tx.NO_PRODUCER_ID
    last_producer_epoch: int = tx.NO_PRODUCER_EPOCH
    partitions: Set[TopicPartition] = attrs.field(factory=set)
    start_timestamp_ms: int = -1
    last_update_timestamp_ms: int = -1

    @classmethod
    def create(cls, transactional_id: str, producer_id: int, transaction_timeout_ms: int,
               now_ms: int) -> "TransactionMetadata":
        """A new id: a fresh producer id, no epoch yet (the first InitProducerId bumps it to 0)."""
        return cls(transactional_id, producer_id, tx.NO_PRODUCER_EPOCH, transaction_timeout_ms,
                   _machine(transactional_id, TransactionState.EMPTY), last_update_timestamp_ms=now_ms)

    @classmethod
    def from_value(cls, transactional_id: str, value: TransactionLogValue) -> "TransactionMetadata":
        return cls(transactional_id, value.producer_id, value.producer_epoch, value.transaction_timeout_ms,
                   _machine(transactional_id, value.state), previous_producer_id=value.previous_producer_id,
                   partitions=set(value.partitions), start_timestamp_ms=value.start_timestamp_ms,
                   last_update_timestamp_ms=value.last_update_timestamp_ms)

    @property
    def state(self) -> TransactionState:
        return self.machine.state

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def transition_to(self, state: TransactionState, now_ms: int) -> None:
        self.machine.transition_to(state)
        self.last_update_timestamp_ms = now_ms

    def has_expired(self, now_ms: int) -> bool:
        """An open transaction older than its timeout (``TransactionStateManager.timedOutTransactions``)."""
        return (self.state is TransactionState.ONGOING
                and self.start_timestamp_ms + self.transaction_timeout_ms < now_ms)

    def bump_epoch(self, record_last_epoch: bool) -> None:
        self.last_producer_epoch = self.producer_epoch if record_last_epoch else tx.NO_PRODUCER_EPOCH
        self.producer_epoch += 1

    def rotate_producer_id(self, new_producer_id: int, record_last_epoch: bool) -> None:
        """KIP-360: the epochs of this producer id ran out: continue as ``new_producer_id``, epoch 0."""
        self.previous_producer_id = self.producer_id
        self.last_producer_epoch = self.producer_epoch if record_last_epoch else tx.NO_PRODUCER_EPOCH
        self.producer_id = new_producer_id
        self.producer_epoch = 0

    def record(self) -> TransactionLogRecord:
        return TransactionLogRecord(TransactionLogKey(self.transactional_id), TransactionLogValue(
            self.producer_id, self.previous_producer_id, self.producer_epoch, self.transaction_timeout_ms,
            self.state, self.partitions, self.last_update_timestamp_ms, self.start_timestamp_ms))

    def describe(self) -> tx.DescribedTransaction:
        return tx.DescribedTransaction(
            ErrorCode.NONE, self.transactional_id, self.state.kafka_name, self.transaction_timeout_ms,
            self.start_timestamp_ms, self.producer_id, self.producer_epoch, sorted(self.partitions))

    def __repr__(self) -> str:
        return (f"TransactionMetadata({self.transactional_id!r}, {self.state.kafka_name}, "
                f"producer {self.producer_id}/{self.producer_epoch}, {len(self.partitions)} partitions)")


def _machine(transactional_id: str, state: TransactionState) -> StateMachine[TransactionState]:
    return StateMachine(f"transaction {transactional_id}", state, LEGAL_PREVIOUS)
