"""Pending transactional offsets of one offsets partition (KIP-98, KIP-447).

After the transactional half of Kafka's OffsetMetadataManager: ``pendingTransactionalOffsets``
(by producer id), ``openTransactionsByGroup``, ``replay`` of an OffsetCommit record written in a
producer's transaction and ``replayEndTransactionMarker``.  An offset committed with
TxnOffsetCommit is pending, invisible to OffsetFetch, until the producer's marker reaches the
partition: COMMIT makes it the group's committed offset, ABORT drops it.

One fold serves the live coordinator and the replay on load: :meth:`PendingOffsets.apply` takes
every record in log order, so a coordinator that loads the log mid-transaction (a failover between
a TxnOffsetCommit and its marker) holds the same pending offsets as the one that wrote them.

The write order of each record stands in for Kafka's record offset: on COMMIT a pending offset
becomes committed only if it was written after the partition's current committed offset (Kafka:
"we always keep the most recent committed offset when we have a mix of transactional and regular
offset commits").
"""
from __future__ import annotations

from typing import Iterable, Iterator, Optional

import attrs

from kgroup.core.coordinator_common.records import (
    GroupTombstone, OffsetCommitRecord, OffsetTombstone, TxnMarkerRecord, TxnOffsetCommitRecord,
)
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition

__all__ = ["GroupOffsets", "PendingOffsets", "PendingView"]

#: Offsets by group id, then partition.
GroupOffsets = dict[str, dict[TopicPartition, OffsetAndMetadata]]
#: Pending offsets by producer id, then group id, then partition (what PersistedView compares).
PendingView = dict[int, GroupOffsets]


@attrs.define
class _OpenTransaction:
    #: group -> partition -> (write order, offset)
    offsets: dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata]]] = attrs.field(factory=dict)


class PendingOffsets:
    def __init__(self) -> None:
        self._open: dict[int, _OpenTransaction] = {}
        #: Kafka's openTransactionsByGroup: the producers with pending offsets in each group.
        self._open_by_group: dict[str, set[int]] = {}
        #: The write order of each group's committed offsets (Kafka's OffsetAndMetadata.recordOffset).
        self._committed_order: dict[str, dict[TopicPartition, int]] = {}
        #: The newest epoch each producer wrote with (Kafka's ProducerStateManager on the partition):
        #: an older epoch is a zombie's, refused with INVALID_PRODUCER_EPOCH.
        self._producer_epochs: dict[int, int] = {}
        self._order = 0

    def take_over(self, other: "PendingOffsets") -> None:
        """Hold what ``other`` holds (a loading coordinator adopts the replay's fold)."""
        self._open = other._open
        self._open_by_group = other._open_by_group
        self._committed_order = other._committed_order
        self._producer_epochs = other._producer_epochs
        self._order = other._order

    # -- queries ----------------------------------------------------------------------

    def has_pending(self, group_id: str, topic_partition: TopicPartition) -> bool:
        """Kafka's hasPendingTransactionalOffsets."""
        for producer_id in self._open_by_group.get(group_id, ()):
            if topic_partition in self._open[producer_id].offsets.get(group_id, {}):
                return True
        return False

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        """Every partition of the group with an offset pending in some open transaction."""
        partitions: set[TopicPartition] = set()
        for producer_id in self._open_by_group.get(group_id, ()):
            partitions.update(self._open[producer_id].offsets.get(group_id, {}))
        return partitions

    def groups_with_open_transactions(self) -> Iterable[str]:
        return self._open_by_group.keys()

    def has_open_transactions(self, group_id: str) -> bool:
        return group_id in self._open_by_group

    def is_stale_epoch(self, producer_id: int, producer_epoch: int) -> bool:
        """The producer already wrote to this partition with a newer epoch (Kafka's
        ProducerAppendInfo.checkProducerEpoch)."""
        newest = self._producer_epochs.get(producer_id)
        return newest is not None and producer_epoch < newest

    def view(self) -> PendingView:
        return {
            producer_id: {gid: {tp: om for tp, (_, om) in offsets.items()}
                          for gid, offsets in txn.offsets.items() if offsets}
            for producer_id, txn in self._open.items()
            if any(txn.offsets.values())
        }

    # -- the fold ---------------------------------------------------------------------

    def apply(self, record: object) -> Optional[GroupOffsets]:
        """Fold one record of the offsets partition, in log order.

        Returns, for a COMMIT marker, the offsets that become committed (by group); else None."""
        if isinstance(record, OffsetCommitRecord):
            self._order += 1
            self._committed_order.setdefault(record.group_id, {})[record.topic_partition] = self._order
        elif isinstance(record, TxnOffsetCommitRecord):
            self._order += 1
            self._note_epoch(record.producer_id, record.producer_epoch)
            txn = self._open.setdefault(record.producer_id, _OpenTransaction())
            group_offsets = txn.offsets.setdefault(record.group_id, {})
            group_offsets[record.topic_partition] = (self._order, record.committed)
            self._open_by_group.setdefault(record.group_id, set()).add(record.producer_id)
        elif isinstance(record, OffsetTombstone):
            # Kafka's replay of a tombstone removes the committed offset and every pending one.
            group_order = self._committed_order.get(record.group_id)
            if group_order is not None:
                group_order.pop(record.topic_partition, None)
            for txn in self._open_transactions_of(record.group_id):
                txn.offsets.get(record.group_id, {}).pop(record.topic_partition, None)
        elif isinstance(record, GroupTombstone):
            self._committed_order.pop(record.group_id, None)
        elif isinstance(record, TxnMarkerRecord):
            return self._end_transaction(record)
        return None

    def _open_transactions_of(self, group_id: str) -> Iterator[_OpenTransaction]:
        for producer_id in self._open_by_group.get(group_id, ()):
            yield self._open[producer_id]

    def _note_epoch(self, producer_id: int, producer_epoch: int) -> None:
        if producer_epoch > self._producer_epochs.get(producer_id, -1):
            self._producer_epochs[producer_id] = producer_epoch

    def _end_transaction(self, marker: TxnMarkerRecord) -> Optional[GroupOffsets]:
        """Kafka's replayEndTransactionMarker."""
        self._note_epoch(marker.producer_id, marker.producer_epoch)
        txn = self._open.pop(marker.producer_id, None)
        if txn is None:
            return None  # a marker of a transaction that committed no offsets here
        for group_id in txn.offsets:
            producers = self._open_by_group.get(group_id)
            if producers is not None:
                producers.discard(marker.producer_id)
                if not producers:
                    del self._open_by_group[group_id]
        if not marker.commit:
            return None
        committed: GroupOffsets = {}
        for group_id, offsets in txn.offsets.items():
            group_order = self._committed_order.setdefault(group_id, {})
            for tp, (order, om) in offsets.items():
                current = group_order.get(tp)
                # A plain commit written after this pending one wins (Kafka compares record offsets).
                if current is None or order > current:
                    group_order[tp] = order
                    committed.setdefault(group_id, {})[tp] = om
        return committed
