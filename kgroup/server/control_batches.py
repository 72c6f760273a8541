"""End-of-transaction control batches, as Kafka's ``MemoryRecords.withEndTransactionMarker`` writes them.

A transaction marker (KIP-98) is a record batch of its own: magic 2, no compression, CreateTime,
the transactional (bit 4) and control (bit 5) attributes, the producer's id and epoch, no base
sequence (-1), and one record whose key is ``ControlRecordType`` (version 0, then ABORT 0 or
COMMIT 1, two int16) and whose value is ``EndTransactionMarker`` (version 0 as int16, then the
transaction coordinator's epoch as int32).  The CRC32C covers everything from the attributes on.
"""
from __future__ import annotations

import struct
from typing import Tuple

from kgroup.server.crc32c import crc32c
from kgroup.server.record_log import ProducedBatch, StoredBatch

__all__ = ["ABORT", "COMMIT", "end_txn_marker", "end_txn_marker_batch"]

#: ControlRecordType's key types.
ABORT = 0
COMMIT = 1
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_NO_SEQUENCE = -1
_CONTROL_KEY = struct.Struct(">hh")          # version, type
_END_TXN_MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch
#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc (DefaultRecordBatch's header up to the CRC).
_HEAD = struct.Struct(">qiibI")
#: attributes, lastOffsetDelta, firstTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence,
#: recordsCount: what the CRC covers, before the records.
_CRC_COVERED_HEADER = struct.Struct(">hiqqqhii")
_LOG_OVERHEAD = 12  # baseOffset + batchLength: not counted in batchLength


def _record(key: bytes, value: bytes) -> bytes:
    """One DefaultRecord with attributes 0, timestamp and offset deltas 0 and no headers; every
    length here is below 64, so each zigzag varint is one byte (2 * n)."""
    body = b"\x00\x00\x00" + bytes([2 * len(key)]) + key + bytes([2 * len(value)]) + value + b"\x00"
    return bytes([2 * len(body)]) + body


def end_txn_marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                         timestamp_ms: int) -> ProducedBatch:
    """The control batch ending ``producer_id``'s transaction (base offset 0 and leader epoch -1
    until the leader appends it: :meth:`ProducedBatch.stored_at`)."""
    key = _CONTROL_KEY.pack(0, COMMIT if commit else ABORT)
    value = _END_TXN_MARKER_VALUE.pack(0, coordinator_epoch)
    covered = _CRC_COVERED_HEADER.pack(_TRANSACTIONAL | _CONTROL, 0, timestamp_ms, timestamp_ms, producer_id,
                                       producer_epoch, _NO_SEQUENCE, 1) + _record(key, value)
    batch_length = _HEAD.size + len(covered) - _LOG_OVERHEAD
    data = _HEAD.pack(0, batch_length, -1, 2, crc32c(covered)) + covered
    return ProducedBatch(data, 1, timestamp_ms, producer_id, producer_epoch, _NO_SEQUENCE, True)


def end_txn_marker(batch: StoredBatch) -> Tuple[bool, int]:
    """(commit, coordinator epoch) of a stored control batch written by :func:`end_txn_marker_batch`
    (Kafka's ``EndTransactionMarker.deserialize``: the key's type, the value's epoch)."""
    records = batch.data[_HEAD.size + _CRC_COVERED_HEADER.size:]
    key_length = records[4] // 2  # record length, attributes, two deltas, then the key's length
    key = records[5:5 + key_length]
    value = records[5 + key_length + 1:5 + key_length + 1 + _END_TXN_MARKER_VALUE.size]
    _version, control_type = _CONTROL_KEY.unpack(key)
    _version, coordinator_epoch = _END_TXN_MARKER_VALUE.unpack(value)
    return control_type == COMMIT, coordinator_epoch
