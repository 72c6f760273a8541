"""Transaction markers on ``__consumer_offsets`` partitions: the group hosting's
:class:`~kgroup.core.transaction_markers.TxnMarkerWriter` (issue 26).

Kafka's transaction coordinator sends WriteTxnMarkers to the leader of every partition of a
transaction; for an offsets partition the leader hands the marker to the group coordinator
(``GroupCoordinatorService.completeTransaction``), which appends it as its own write and then commits
or drops the producer's pending offsets (``replayEndTransactionMarker``).  Here
:func:`write_txn_marker` does the same on the slot's loaded coordinator
(:meth:`GroupCoordinator.complete_transaction`) and appends its records like every coordinator write
(acks=all).  The answer says where the marker went; it counts as written once the partition's high
watermark passes that offset in the same leader epoch.

Answers: NOT_LEADER_OR_FOLLOWER while the partition has no leader with a loaded coordinator (the
transaction coordinator retries, as on Kafka's retriable marker errors); UNKNOWN_TOPIC_OR_PARTITION
for a partition the topic does not have; INVALID_PRODUCER_EPOCH for an epoch older than one the
producer already wrote there with (``ProducerAppendInfo.checkProducerEpoch``); NOT_ENOUGH_REPLICAS
when the ISR is below ``min.insync.replicas`` (the coordinator then reloads what the log holds).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.coordinator_common.records import TxnMarkerRecord
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker

if TYPE_CHECKING:  # the hosting binds this function as its method: imported for the type only
    from kgroup.core.cluster.group_hosting import GroupHosting

__all__ = ["write_txn_marker"]

E = ErrorCode


def write_txn_marker(hosting: "GroupHosting", marker: TxnMarker,
                     now_ms: int) -> Union[MarkerAppend, ErrorCode]:
    """``GroupHosting.write_txn_marker``: append ``marker`` through its offsets partition's coordinator.

    Responses this step releases (replication caught up, a failover answered parked requests) are
    kept for the hosting's next ``send`` / ``handle_timer``, which return them."""
    if marker.topic != GROUP_METADATA_TOPIC:
        # Kafka's completeTransaction: IllegalStateException for any other topic.
        raise ValueError(f"the group hosting writes markers on {GROUP_METADATA_TOPIC} only, "
                         f"not {marker.topic!r}")
    hosting._pending.extend(hosting._advance(now_ms))
    if not 0 <= marker.partition < len(hosting._slots):
        return E.UNKNOWN_TOPIC_OR_PARTITION
    slot = hosting._slots[marker.partition]
    coordinator = slot.coordinator
    if slot.leader is None or coordinator is None:
        return E.NOT_LEADER_OR_FOLLOWER
    if coordinator.is_stale_producer_epoch(marker.producer_id, marker.producer_epoch):
        return E.INVALID_PRODUCER_EPOCH
    result = coordinator.complete_transaction(marker.producer_id, marker.producer_epoch, marker.commit,
                                              now_ms, coordinator_epoch=marker.coordinator_epoch)
    leader_epoch = slot.leader_epoch
    wait = hosting._write(slot, result.records)
    if wait is None:
        # The append was refused: the coordinator must not keep what the log does not hold.
        hosting._pending.extend(hosting._revert(slot))
        return E.NOT_ENOUGH_REPLICAS
    # complete_transaction answers no request (result.deliveries is empty): nothing to hold.
    hosting._pending.extend(hosting._release())
    # Records a group header written after it may follow the marker in the same append.
    after_marker = next(i for i, record in enumerate(reversed(result.records))
                        if isinstance(record, TxnMarkerRecord))
    log_end = wait[2]
    return MarkerAppend(marker.topic, marker.partition, leader_epoch, log_end - 1 - after_marker)
