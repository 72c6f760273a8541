"""The transaction coordinator (KIP-98), after Kafka's ``kafka.coordinator.transaction``.

* :mod:`.states` - Kafka's transaction states and the table of legal previous states.
* :mod:`.metadata` - ``TransactionMetadata``: one transactional id's producer, epoch, partitions, state.
* :mod:`.log` - the ``__transaction_state`` records (``TransactionLog``'s key and value).
* :mod:`.producer_ids` - the one producer-id counter (idempotent and transactional producers).
* :mod:`.markers` - the markers of transactions being completed, retried until written.
* :mod:`.coordinator` - ``TransactionCoordinator``: one ``__transaction_state`` partition's handlers.

Sans-I/O: every call takes ``now_ms`` and returns a :class:`TransactionResult` (answers and the
records to append); the hosting (``kgroup.core.cluster.transaction_hosting``) appends the records
and holds the answers until the high watermark covers them.
"""
from kgroup.core.transaction.coordinator import (
    TransactionCoordinator, TransactionCoordinatorConfig, TransactionResult,
)
from kgroup.core.transaction.log import TransactionLogKey, TransactionLogRecord, TransactionLogValue
from kgroup.core.transaction.markers import MarkerStatus
from kgroup.core.transaction.metadata import TransactionMetadata
from kgroup.core.transaction.producer_ids import ProducerIdAllocator
from kgroup.core.transaction.states import TransactionState

__all__ = [
    "MarkerStatus", "ProducerIdAllocator", "TransactionCoordinator", "TransactionCoordinatorConfig",
    "TransactionLogKey", "TransactionLogRecord", "TransactionLogValue", "TransactionMetadata",
    "TransactionResult", "TransactionState",
]
