"""Producer state per partition, rebuilt from the leader's log (Kafka's ``ProducerStateManager``).

For each producer id that wrote to a partition: its epoch, the sequences, offsets and max
timestamps of its last five batches (to answer a retried batch as the original was appended), the
transaction coordinator epoch of its last marker, and the first offset of its ongoing transaction.
From those: the partition's last stable offset (LSO) and its aborted-transaction index.

Everything here is derived from the stored batches, which carry producer id, epoch, base sequence
and attributes: a new leader rebuilds the state by reading its own log, as Kafka's
``ProducerStateManager`` does when it loads a log (``UnifiedLog.rebuildProducerState``), so the
LSO and the duplicate detection survive a leader failover.  While a leader keeps its epoch its log
only grows, and the state is brought up to date by reading the batches appended since it last looked.
"""
from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Tuple, Union

import attrs

from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.replica_log import ReplicaLog
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction_markers import TxnMarker
from kgroup.server.control_batches import end_txn_marker
from kgroup.server.record_log import BatchSlice, ProducedBatch, StoredBatch

__all__ = ["AbortedTxn", "BatchMetadata", "PartitionProducers", "ProducerEntry", "ProducerStates"]

#: How many recent batches per producer Kafka remembers to answer a retried batch
#: (ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
RETAINED_BATCHES = 5
_MAX_SEQUENCE = 2 ** 31 - 1


class BatchMetadata(NamedTuple):
    """Kafka's BatchMetadata: one of a producer's recent batches as appended.  ``max_timestamp`` is
    the stored batch's (``ProducerAppendInfo`` records ``batch.maxTimestamp()``), which a retried
    batch's answer carries as its log_append_time_ms (``UnifiedLog.append``:
    ``setLogAppendTime(duplicate.timestamp)``)."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    max_timestamp: int


@attrs.define
class ProducerEntry:
    """Kafka's ProducerStateEntry: one producer id on one partition."""

    epoch: int
    #: Its latest batches in ``epoch``, oldest first.
    batches: List[BatchMetadata] = attrs.field(factory=list)
    #: The coordinator epoch of the last marker written for it (-1: none yet).
    coordinator_epoch: int = -1
    #: The first offset of its ongoing transaction on this partition (None: no transaction open).
    txn_first_offset: Optional[int] = None

    def set_epoch(self, epoch: int) -> None:
        """ProducerStateEntry.maybeUpdateProducerEpoch: a new epoch starts its sequences afresh."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches = []


@attrs.frozen
class AbortedTxn:
    """One entry of the aborted-transaction index (Kafka's ``AbortedTxn``): the transaction's first
    offset on the partition and the offset of its ABORT marker."""

    producer_id: int
    first_offset: int
    last_offset: int


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    """ProducerAppendInfo.inSequence: the next one, wrapping from Integer.MAX_VALUE to 0."""
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == _MAX_SEQUENCE)


class PartitionProducers:
    """Kafka's ProducerStateManager for one partition, as of the leader's log up to ``loaded_to``."""

    def __init__(self, partition: Partition) -> None:
        self.partition = partition
        self.leader = partition.leader
        self.leader_epoch = partition.leader_epoch
        self.producers: Dict[int, ProducerEntry] = {}
        #: Producer id -> first offset of its ongoing transaction (ProducerStateManager.ongoingTxns).
        self.ongoing: Dict[int, int] = {}
        #: Ended transactions whose marker the high watermark has not yet passed, as (first offset,
        #: marker offset): they still hold the LSO back (ProducerStateManager.unreplicatedTxns).
        self._unreplicated: List[Tuple[int, int]] = []
        #: Aborted transactions in marker order (the partition's TransactionIndex).
        self.aborted: List[AbortedTxn] = []
        self.loaded_to = 0
        self._last_entry: object = None

    def is_current(self, partition: Partition, log: ReplicaLog) -> bool:
        """Whether this state still describes ``partition``'s leader log: same partition, leader
        and leader epoch, and the entries read so far still there (not truncated away)."""
        if partition is not self.partition or partition.leader != self.leader \
                or partition.leader_epoch != self.leader_epoch or self.loaded_to > log.leo:
            return False
        return self.loaded_to == 0 or log.entries[self.loaded_to - 1] is self._last_entry

    def catch_up(self, log: ReplicaLog) -> None:
        """Read the batches appended since the last call (all of them on a new leader)."""
        entries = log.entries
        offset = self.loaded_to
        end = len(entries)
        while offset < end:
            payload = entries[offset].payload
            if not isinstance(payload, BatchSlice):
                offset += 1
                continue
            batch = payload.batch
            if batch.next_offset > end:
                break  # never happens on a leader (batches are appended whole); read it once complete
            if batch.base_offset >= offset:
                self._replay(batch)
            offset = batch.next_offset
        if offset != self.loaded_to:
            self.loaded_to = offset
            self._last_entry = entries[offset - 1]

    def _replay(self, batch: StoredBatch) -> None:
        """Apply one stored batch without checks (what the log holds happened: Kafka's
        AppendOrigin.REPLICATION and log recovery)."""
        producer_id = batch.producer_id
        if producer_id < 0:
            return
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(batch.producer_epoch)
        if batch.is_control:
            # ProducerAppendInfo.appendEndTxnMarker: a marker without data ends nothing.
            commit, coordinator_epoch = end_txn_marker(batch)
            first = entry.txn_first_offset
            if first is not None:
                self._unreplicated.append((first, batch.base_offset))
                if not commit:
                    self.aborted.append(AbortedTxn(producer_id, first, batch.base_offset))
                del self.ongoing[producer_id]
            entry.txn_first_offset = None
            entry.set_epoch(batch.producer_epoch)
            entry.coordinator_epoch = coordinator_epoch
            return
        entry.set_epoch(batch.producer_epoch)
        entry.batches.append(BatchMetadata(batch.base_sequence, batch.last_sequence, batch.base_offset,
                                           batch.max_timestamp))
        del entry.batches[:-RETAINED_BATCHES]
        if batch.is_transactional and entry.txn_first_offset is None:
            entry.txn_first_offset = self.ongoing[producer_id] = batch.base_offset

    # -- checks on a client's append -----------------------------------------------------------

    def check_batch(self, produced: ProducedBatch) -> Union[None, BatchMetadata, ErrorCode]:
        """None to append ``produced``; the batch it repeats (a retry of one of the producer's last
        five batches); or the error to answer.  Kafka's order:
        ``ProducerStateEntry.findDuplicateBatch`` (same epoch, same first and last sequence), then
        ``ProducerAppendInfo``'s epoch check (INVALID_PRODUCER_EPOCH: Produce answers it in every
        version since 2.7, KIP-588), sequence check (OUT_OF_ORDER_SEQUENCE_NUMBER) and transaction
        check (a non-transactional batch while the producer's transaction is open: INVALID_TXN_STATE)."""
        entry = self.producers.get(produced.producer_id) if produced.producer_id >= 0 else None
        if entry is None:
            return None  # an unknown producer may start at any sequence (no current epoch)
        base_sequence = produced.base_sequence
        if produced.producer_epoch == entry.epoch:
            last_sequence = produced.last_sequence
            for appended in entry.batches:
                if (appended.first_sequence, appended.last_sequence) == (base_sequence, last_sequence):
                    return appended
        if produced.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if produced.producer_epoch > entry.epoch:
            if base_sequence != 0:
                return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        elif not _in_sequence(entry.batches[-1].last_sequence if entry.batches else -1, base_sequence):
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        if entry.txn_first_offset is not None and not produced.is_transactional:
            return ErrorCode.INVALID_TXN_STATE
        return None

    def check_marker(self, marker: TxnMarker) -> ErrorCode:
        """ProducerAppendInfo.appendEndTxnMarker's checks: a marker from an older producer epoch is
        INVALID_PRODUCER_EPOCH, one from an older transaction coordinator (a zombie coordinator)
        TRANSACTION_COORDINATOR_FENCED."""
        entry = self.producers.get(marker.producer_id)
        if entry is None:
            return ErrorCode.NONE
        if marker.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if marker.coordinator_epoch < entry.coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return ErrorCode.NONE

    # -- what readers see --------------------------------------------------------------------------

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset of the earliest transaction not yet decided below the high watermark
        (open, or ended by a marker the HW has not passed), never above the HW
        (``UnifiedLog.lastStableOffset``, ``ProducerStateManager.firstUndecidedOffset``)."""
        if self._unreplicated:
            self._unreplicated = [(first, end) for first, end in self._unreplicated if end >= high_watermark]
        lso = high_watermark
        for first in self.ongoing.values():
            lso = min(lso, first)
        for first, _end in self._unreplicated:
            lso = min(lso, first)
        return lso

    def aborted_overlapping(self, fetch_offset: int, upper_bound_offset: int) -> List[AbortedTxn]:
        """``TransactionIndex.collectAbortedTxns``: aborted transactions ending at or after
        ``fetch_offset`` and starting before ``upper_bound_offset`` (the first offset not returned)."""
        return [txn for txn in self.aborted
                if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset]


class ProducerStates:
    """:class:`PartitionProducers` of every partition the data plane served, each rebuilt from the
    leader's log whenever the leader, its epoch or the partition itself changed.  ``readable``: the
    batches a partition's leader log serves (an internal partition's coordinator records encoded as
    Kafka's batches, :meth:`kgroup.server.coordinator_log.CoordinatorLogs.readable`)."""

    def __init__(self, readable: Optional[Callable[[Partition, ReplicaLog], ReplicaLog]] = None) -> None:
        self._partitions: Dict[Tuple[str, int], PartitionProducers] = {}
        self._readable = readable

    def of(self, partition: Partition) -> PartitionProducers:
        """The state of ``partition`` (which must have a leader) as of its leader's log end."""
        log = partition.leader_log()
        if log is None:
            raise ValueError(f"{partition.topic}-{partition.index} has no leader to read producer state from")
        if self._readable is not None:
            log = self._readable(partition, log)
        state = self._partitions.get(partition.key)
        if state is None or not state.is_current(partition, log):
            state = self._partitions[partition.key] = PartitionProducers(partition)
        state.catch_up(log)
        return state

    def forget(self, topic: str) -> None:
        """Drop the state of a deleted topic's partitions."""
        for key in [key for key in self._partitions if key[0] == topic]:
            del self._partitions[key]
