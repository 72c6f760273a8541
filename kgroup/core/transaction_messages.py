"""Transaction-coordinator requests and responses as frozen values (KIP-98, KIP-664).

InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions and
ListTransactions, with Kafka's field names in snake_case, in the one shape the core answers
whatever the wire version: the wire codecs (``kgroup/server/apis/``) settle version layouts and
turn PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for the versions before KIP-588, as Kafka's
``KafkaApis`` does.  FindCoordinator for a transactional id is ``messages.FindCoordinatorRequest``
with ``key_type=1``.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

__all__ = [
    "AddOffsetsToTxnRequest", "AddOffsetsToTxnResponse", "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse", "DescribeTransactionsRequest", "DescribeTransactionsResponse",
    "DescribedTransaction", "EndTxnRequest", "EndTxnResponse", "InitProducerIdRequest",
    "InitProducerIdResponse", "ListTransactionsRequest", "ListTransactionsResponse", "ListedTransaction",
    "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "TRANSACTION_KEY_TYPE",
]

#: Kafka's ``RecordBatch.NO_PRODUCER_ID`` / ``NO_PRODUCER_EPOCH``.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
#: FindCoordinator's key type for a transactional id (``CoordinatorType.TRANSACTION``).
TRANSACTION_KEY_TYPE = 1


def _tuple(value) -> tuple:
    return tuple(value)


def _partitions(value) -> tuple[TopicPartition, ...]:
    return tuple(tp if type(tp) is TopicPartition else TopicPartition(*tp) for tp in value)


@attrs.frozen
class InitProducerIdRequest:
    #: None: an idempotent producer (a fresh producer id, any broker answers).
    transactional_id: Optional[str]
    transaction_timeout_ms: int = 60_000
    #: KIP-360 (v3+): the producer id and epoch the producer has, to bump instead of being fenced.
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@attrs.frozen
class InitProducerIdResponse:
    error_code: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@attrs.frozen
class AddPartitionsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...] = attrs.field(converter=_partitions)
    #: KIP-890 part 1 (v4+, broker to coordinator): only check the partitions are in the transaction.
    verify_only: bool = False


@attrs.frozen
class AddPartitionsToTxnResponse:
    transactional_id: str
    #: One (partition, error) per partition of the request.
    errors: tuple[tuple[TopicPartition, ErrorCode], ...] = attrs.field(converter=_tuple)


@attrs.frozen
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@attrs.frozen
class AddOffsetsToTxnResponse:
    error_code: ErrorCode


@attrs.frozen
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    #: True: commit; False: abort.
    committed: bool


@attrs.frozen
class EndTxnResponse:
    error_code: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@attrs.frozen
class DescribeTransactionsRequest:
    transactional_ids: tuple[str, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class DescribedTransaction:
    error_code: ErrorCode
    transactional_id: str
    #: Kafka's state name ("Ongoing", "CompleteCommit", ...); "" with an error.  An error answer
    #: keeps the schema's defaults, 0, in the other fields, as Kafka's does (it sets only the id and
    #: the error code).
    state: str = ""
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    partitions: tuple[TopicPartition, ...] = attrs.field(default=(), converter=_partitions)


@attrs.frozen
class DescribeTransactionsResponse:
    transactions: tuple[DescribedTransaction, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class ListTransactionsRequest:
    #: State names to keep (empty: all).
    state_filters: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    #: Producer ids to keep (empty: all).
    producer_id_filters: tuple[int, ...] = attrs.field(default=(), converter=_tuple)
    #: v1: keep transactions running longer than this (-1: no filter).
    duration_filter_ms: int = -1


@attrs.frozen
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@attrs.frozen
class ListTransactionsResponse:
    error_code: ErrorCode
    unknown_state_filters: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    transactions: tuple[ListedTransaction, ...] = attrs.field(default=(), converter=_tuple)
