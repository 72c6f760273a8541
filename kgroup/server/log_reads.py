"""Reading the stored batches of a partition log: Fetch's whole-batch reads, ListOffsets' timestamp
lookups and OffsetForLeaderEpoch's epoch ends.  Moved out of :mod:`kgroup.server.data_plane`
(issue 25); no state of its own."""
from __future__ import annotations

from typing import List, Tuple, Union

from kgroup.core.cluster.replica_log import ReplicaLog
from kgroup.server.record_log import BatchSlice

__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP", "epoch_end_offset",
           "offset_for_timestamp", "read_batches"]

#: Kafka's ListOffsets special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


def read_batches(log: ReplicaLog, offset: int, max_bytes: int, first: bool,
                 end_offset: int) -> Tuple[List[Union[bytes, memoryview]], int, int]:
    """Whole batches from the one holding ``offset`` up to ``end_offset`` (the HW, or the LSO for
    read_committed): their pieces (each batch's patched ``head`` then its ``tail``, not joined: the
    Fetch encoder writes them straight into the response frame), their total size in bytes, and
    the offset after the last one returned.  The first batch of a response is returned even when
    larger than the limit (KIP-74), so a consumer always progresses."""
    chunks: List[Union[bytes, memoryview]] = []
    size = 0
    entries = log.entries
    while offset < end_offset:
        payload = entries[offset].payload
        if not isinstance(payload, BatchSlice):
            offset += 1  # not a record batch (the coordinators' records): nothing a client reads
            continue
        batch = payload.batch
        if batch.next_offset > end_offset:
            break
        batch_size = batch.size
        if size + batch_size > max_bytes and not (first and not chunks):
            break
        chunks.append(batch.head)  # the patched base offset and leader epoch, then the client's bytes
        chunks.append(batch.tail)
        size += batch_size
        offset = batch.next_offset
    return chunks, size, offset


def offset_for_timestamp(log: ReplicaLog, timestamp: int, end_offset: int) -> Tuple[int, int]:
    """ListOffsets for a timestamp (or MAX_TIMESTAMP) among the records below ``end_offset`` (the
    HW, or the LSO for read_committed: Partition.fetchOffsetForTimestamp's lastFetchableOffset):
    (offset, timestamp), or (-1, -1) when none qualifies."""
    best: Tuple[int, int] = (-1, -1)
    offset = 0
    while offset < end_offset:
        payload = log.entries[offset].payload
        if not isinstance(payload, BatchSlice):
            offset += 1
            continue
        batch = payload.batch
        if batch.next_offset > end_offset:
            break
        if timestamp == MAX_TIMESTAMP:
            for record_offset, record_ts in batch.record_timestamps():
                if record_ts > best[1]:
                    best = (record_offset, record_ts)
        elif batch.max_timestamp >= timestamp:
            for record_offset, record_ts in batch.record_timestamps():
                if record_ts >= timestamp:
                    return record_offset, record_ts
        offset = batch.next_offset
    return best


def epoch_end_offset(log: ReplicaLog, requested: int) -> Tuple[int, int]:
    """Kafka's ``LeaderEpochFileCache.endOffsetFor``: the latest epoch ends at the LEO; an older one
    answers the largest known epoch <= it and where the next epoch starts; one older than every known
    epoch answers itself and the first epoch's start; one newer than the latest is unknown (-1, -1)."""
    starts = log.epoch_starts
    if requested < 0 or not starts:
        return -1, -1
    if starts[-1][0] == requested:
        return requested, log.leo
    higher = next(((epoch, start) for epoch, start in starts if epoch > requested), None)
    if higher is None:
        return -1, -1
    floor = [epoch for epoch, _ in starts if epoch <= requested]
    return (floor[-1] if floor else requested), higher[1]
