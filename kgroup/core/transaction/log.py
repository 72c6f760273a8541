"""The ``__transaction_state`` records: Kafka's ``TransactionLog`` key and value, as frozen values.

Kafka keys a record by transactional id (``TransactionLogKey``) and stores the metadata after each
transition (``TransactionLogValue``: producer id and epoch, timeout, status, partitions, last
update and start timestamps; v1 adds the previous producer id of KIP-360's rotation).  A null
value (a tombstone) removes the id.  Replaying a partition's records in order rebuilds every
transaction it coordinates.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kgroup.core.transaction.states import TransactionState
from kgroup.values import TopicPartition

__all__ = ["TRANSACTION_STATE_TOPIC", "TransactionLogKey", "TransactionLogRecord", "TransactionLogValue"]

#: Kafka's ``Topic.TRANSACTION_STATE_TOPIC_NAME``.
TRANSACTION_STATE_TOPIC = "__transaction_state"


def _sorted_partitions(value) -> tuple[TopicPartition, ...]:
    return tuple(sorted(tp if type(tp) is TopicPartition else TopicPartition(*tp) for tp in value))


@attrs.frozen
class TransactionLogKey:
    transactional_id: str


@attrs.frozen
class TransactionLogValue:
    producer_id: int
    #: KIP-360: the id the producer had before its epochs ran out (-1: none).
    previous_producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    partitions: tuple[TopicPartition, ...] = attrs.field(converter=_sorted_partitions)
    last_update_timestamp_ms: int
    start_timestamp_ms: int


@attrs.frozen
class TransactionLogRecord:
    key: TransactionLogKey
    #: None: a tombstone (the transactional id expired).
    value: Optional[TransactionLogValue]
