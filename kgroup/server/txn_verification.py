"""KIP-890 part 1 on the produce path: how a partition leader answers a transactional batch its
transaction coordinator did not verify (``transaction.partition.verification.enable``).

The leader asks the coordinator (Kafka's ``AddPartitionsToTxnManager``: AddPartitionsToTxn v4
``verify_only``; kgroup's coordinators run in the same process, so
:meth:`kgroup.core.cluster.transaction_hosting.TransactionHosting.verify_partitions` answers
directly) and turns a coordinator error into the error a producer of that Produce version
handles: :func:`produce_error`.
"""
from __future__ import annotations

from typing import List, Optional, Protocol, Sequence, Tuple

from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

__all__ = ["LAST_DEFAULT_ERROR_PRODUCE_VERSION", "TransactionVerifier", "produce_error"]

E = ErrorCode

#: The newest Produce version whose client does not know TRANSACTION_ABORTABLE: Kafka's
#: ``AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation`` gives
#: DEFAULT_ERROR up to v10, GENERIC_ERROR_SUPPORTED at v11 and ADD_PARTITION (KIP-890 part 2,
#: transaction version 2) from v12, which kgroup does not serve.
LAST_DEFAULT_ERROR_PRODUCE_VERSION = 10

#: Coordinator errors ``ReplicaManager.handleProduceAppend`` answers as NOT_ENOUGH_REPLICAS: retriable
#: errors older clients may not retry, turned into one they do (and that refreshes no metadata).
#: CONCURRENT_TRANSACTIONS is among them below Produce v12 (``supportsEpochBump`` false).  Kafka's
#: NETWORK_EXCEPTION (the inter-broker request failed) is too; asked in process, it cannot happen.
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({
    E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
    E.CONCURRENT_TRANSACTIONS})


class TransactionVerifier(Protocol):
    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> List[Tuple[TopicPartition, ErrorCode]]:
        """Each partition's answer from the transactional id's coordinator (NONE: in the transaction)."""


def produce_error(coordinator_code: ErrorCode, produce_version: int) -> Tuple[ErrorCode, Optional[str]]:
    """The Produce error code and message for a partition the coordinator did not verify.

    ``AddPartitionsToTxnManager``'s response handler first: PRODUCER_FENCED becomes
    INVALID_PRODUCER_EPOCH (what producers expect here), TRANSACTION_ABORTABLE becomes
    INVALID_TXN_STATE for Produce v10 and older.  Then ``ReplicaManager.handleProduceAppend``:
    INVALID_TXN_STATE says "Partition was not added to the transaction", the retriable coordinator
    errors become NOT_ENOUGH_REPLICAS, anything else (INVALID_PRODUCER_ID_MAPPING...) is answered
    as it is, without a message."""
    code = coordinator_code
    if code is E.PRODUCER_FENCED:
        code = E.INVALID_PRODUCER_EPOCH
    elif code is E.TRANSACTION_ABORTABLE and produce_version <= LAST_DEFAULT_ERROR_PRODUCE_VERSION:
        code = E.INVALID_TXN_STATE
    if code is E.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    if code in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return E.NOT_ENOUGH_REPLICAS, ("Unable to verify the partition has been added to the transaction. "
                                       f"Underlying error: {code.name}")
    return code, None
