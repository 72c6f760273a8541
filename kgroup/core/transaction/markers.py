"""The markers of transactions being completed, written and re-written until every one is in.

After a transaction's PrepareCommit or PrepareAbort is committed, Kafka's
``TransactionMarkerChannelManager`` sends a marker to the leader of every partition of the
transaction, retries a failed send after a backoff, and writes CompleteCommit / CompleteAbort
once all are written.  :class:`MarkerQueue` is that bookkeeping without I/O: the caller passes the
writer (:class:`~kgroup.core.transaction_markers.TxnMarkerWriter`) and a way to read whether an
append is replicated (:data:`MarkerProgress`); the queue answers which transactions are done.

A marker counts as written once the partition's high watermark passed its offset in the leader
epoch it was appended in (``MarkerStatus.WRITTEN``); a leader change first (``LOST``) means
writing it again.  Answers that mean the marker is not needed end that partition's part:
UNKNOWN_TOPIC_OR_PARTITION (the partition was deleted; Kafka skips partitions without a leader
for the same reason) and INVALID_PRODUCER_EPOCH (the partition already holds a newer epoch of
the producer; Kafka stops sending this transaction's markers then).
"""
from __future__ import annotations

import enum
from typing import Callable, Dict, Iterable, List, Optional

import attrs

from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker, TxnMarkerWriter

__all__ = ["MarkerProgress", "MarkerQueue", "MarkerStatus"]


class MarkerStatus(enum.Enum):
    #: The high watermark passed the marker in the leader epoch it was appended in.
    WRITTEN = "written"
    #: Appended, not yet replicated.
    PENDING = "pending"
    #: The partition's leader changed before the marker was replicated: write it again.
    LOST = "lost"
    #: The partition no longer exists.
    GONE = "gone"


#: Where an appended marker stands.
MarkerProgress = Callable[[MarkerAppend], MarkerStatus]

#: Writer answers after which the partition needs no marker from this transaction.
_NOT_NEEDED = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_PRODUCER_EPOCH})


@attrs.define
class _PartitionMarker:
    marker: TxnMarker
    append: Optional[MarkerAppend] = None
    #: When to write (again) while not appended.
    write_at_ms: int = 0
    #: What the last failed write answered (for tests and traces).
    last_error: Optional[ErrorCode] = None


class MarkerQueue:
    def __init__(self, retry_backoff_ms: int) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self._pending: Dict[str, List[_PartitionMarker]] = {}

    def add(self, transactional_id: str, markers: Iterable[TxnMarker], now_ms: int) -> None:
        self._pending[transactional_id] = [_PartitionMarker(marker, write_at_ms=now_ms) for marker in markers]

    def __contains__(self, transactional_id: str) -> bool:
        return transactional_id in self._pending

    def __len__(self) -> int:
        return len(self._pending)

    def unwritten(self, transactional_id: str) -> List[TxnMarker]:
        """The markers of ``transactional_id`` not yet written."""
        return [p.marker for p in self._pending.get(transactional_id, ())]

    def next_deadline_ms(self) -> Optional[int]:
        """The earliest (re)write due; markers waiting on replication follow the cluster's timer."""
        deadlines = [p.write_at_ms for parts in self._pending.values() for p in parts if p.append is None]
        return min(deadlines) if deadlines else None

    def progress(self, writer: TxnMarkerWriter, status: MarkerProgress, now_ms: int) -> List[str]:
        """Write what is due, check what was appended; answer the transactions now fully written."""
        done: List[str] = []
        for transactional_id, parts in list(self._pending.items()):
            still = [p for p in parts if not self._step(p, writer, status, now_ms)]
            if still:
                self._pending[transactional_id] = still
            else:
                del self._pending[transactional_id]
                done.append(transactional_id)
        return done

    def _step(self, part: _PartitionMarker, writer: TxnMarkerWriter, status: MarkerProgress,
              now_ms: int) -> bool:
        """Move one partition's marker on; True once it needs nothing more."""
        if part.append is not None:
            seen = status(part.append)
            if seen is MarkerStatus.WRITTEN or seen is MarkerStatus.GONE:
                return True
            if seen is MarkerStatus.PENDING:
                return False
            part.append = None   # LOST: the new leader may not have it
            part.write_at_ms = now_ms
        if part.write_at_ms > now_ms:
            return False
        answer = writer.write_txn_marker(part.marker, now_ms)
        if isinstance(answer, MarkerAppend):
            part.append, part.last_error = answer, None
            return status(answer) in (MarkerStatus.WRITTEN, MarkerStatus.GONE)
        if answer in _NOT_NEEDED:
            return True
        part.last_error = answer
        part.write_at_ms = now_ms + self.retry_backoff_ms
        return False
