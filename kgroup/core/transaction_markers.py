"""Transaction markers: what a transaction coordinator asks partition leaders to write (KIP-98).

When a transaction ends, Kafka's ``TransactionMarkerChannelManager`` sends WriteTxnMarkers to the
leader of every partition the transaction touched; the leader appends a control batch (COMMIT or
ABORT, ``ControlRecordType``) with acks=all, and on a ``__consumer_offsets`` partition the group
coordinator then makes the transaction's pending offsets visible or drops them
(``GroupCoordinator.onTransactionCompleted``).  The transaction coordinator writes
``CompleteCommit`` / ``CompleteAbort`` only once every marker is replicated.

kgroup's transaction coordinator writes through a :class:`TxnMarkerWriter`: the wire server's data
plane for data partitions, the group hosting for ``__consumer_offsets``.  A write answers where the
marker went (:class:`MarkerAppend`); it is written once the partition's high watermark passes that
offset in the same leader epoch (a leader change first means writing it again).
"""
from __future__ import annotations

from typing import Protocol, Union

import attrs

from kgroup.core.error_codes import ErrorCode

__all__ = ["MarkerAppend", "TxnMarker", "TxnMarkerWriter"]


@attrs.frozen
class TxnMarker:
    """One partition's end-of-transaction marker (WriteTxnMarkersRequest's WritableTxnMarker)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    #: True: COMMIT; False: ABORT.
    commit: bool
    #: The transaction coordinator's epoch (its ``__transaction_state`` partition's leader epoch);
    #: Kafka stores it in the control record's value.
    coordinator_epoch: int


@attrs.frozen
class MarkerAppend:
    """Where a marker was appended: ``offset`` of ``topic``-``partition``'s leader log in ``leader_epoch``."""

    topic: str
    partition: int
    leader_epoch: int
    offset: int


class TxnMarkerWriter(Protocol):
    """Appends markers on partition leaders (the broker side of WriteTxnMarkers)."""

    def write_txn_marker(self, marker: TxnMarker, now_ms: int) -> Union[MarkerAppend, ErrorCode]:
        """Append ``marker`` on its partition's leader, or answer why not (NOT_LEADER_OR_FOLLOWER,
        UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH, ...), as Kafka's WriteTxnMarkers
        answers per partition."""
        ...
