"""Record batches on the in-memory partition logs.

The cluster's replicated log (``kgroup.core.cluster``) stores one opaque payload per offset.
The server stores each produced v2 record batch as it arrived (compressed or not), with
its base offset and partition leader epoch rewritten to where the leader appended it; the
payload of every offset the batch covers is a :class:`BatchSlice` pointing at it.  A fetch
answers whole batches from the one holding the fetch offset, as Kafka does (the client
skips records before its position).  Neither rewritten field is covered by the batch CRC
(it starts at the attributes), so the bytes stay valid without recompressing.

Parsing and validation use kafka-python's record classes (:mod:`kafka.record`).
"""
from __future__ import annotations

import struct
from typing import Iterator, List, Optional, Tuple

import attrs
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from kgroup.server.crc32c import crc32c
from kgroup.server.wire_errors import WireError

__all__ = ["BatchSlice", "InvalidRecords", "StoredBatch", "parse_batches"]

_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH_AT = 12
_LEADER_EPOCH = struct.Struct(">i")
_ATTRIBUTES_AT = DefaultRecordBatch.ATTRIBUTES_OFFSET
#: The codecs Kafka's record format defines (none, gzip, snappy, lz4, zstd).
_KNOWN_CODECS = range(0, 5)


class InvalidRecords(Exception):
    """A produce request's records cannot be appended; ``code`` is the Kafka error to answer."""

    def __init__(self, code: WireError, message: str) -> None:
        super().__init__(message)
        self.code = code


@attrs.frozen
class StoredBatch:
    """One v2 record batch as stored: ``data`` carries the log's base offset and leader epoch."""

    data: bytes
    base_offset: int
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count

    def record_timestamps(self) -> Iterator[Tuple[int, int]]:
        """(offset, timestamp) of every record, decompressing if needed."""
        for record in DefaultRecordBatch(self.data):
            yield record.offset, record.timestamp


@attrs.frozen
class BatchSlice:
    """The log payload of one offset: the batch that holds it."""

    batch: StoredBatch


@attrs.frozen
class ProducedBatch:
    """A produced batch, validated, before the leader gives it offsets."""

    data: bytes
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool

    def stored_at(self, base_offset: int, leader_epoch: int) -> StoredBatch:
        data = bytearray(self.data)
        _BASE_OFFSET.pack_into(data, 0, base_offset)
        _LEADER_EPOCH.pack_into(data, _LEADER_EPOCH_AT, leader_epoch)
        return StoredBatch(bytes(data), base_offset, self.record_count, self.max_timestamp,
                           self.producer_id, self.producer_epoch, self.base_sequence)


def parse_batches(records: Optional[bytes]) -> List[ProducedBatch]:
    """The batches of a produce request's partition data, validated as Kafka's LogValidator does
    for what kgroup stores: magic 2 only, a known codec, a matching CRC, a record count that
    agrees with the last offset delta, and no trailing bytes."""
    if not records:
        raise InvalidRecords(WireError.CORRUPT_MESSAGE, "empty record set")
    data = bytes(records)
    batches: List[ProducedBatch] = []
    reader = MemoryRecords(data)
    position = 0
    try:
        while reader.has_next():
            batch = reader.next_batch()
            if not isinstance(batch, DefaultRecordBatch) or batch.magic != 2:
                raise InvalidRecords(WireError.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                                     "only v2 (magic 2) record batches are accepted")
            if batch.compression_type not in _KNOWN_CODECS:
                raise InvalidRecords(WireError.UNSUPPORTED_COMPRESSION_TYPE,
                                     f"unknown compression codec {batch.compression_type}")
            raw = data[position:position + batch.size_in_bytes]
            # The CRC covers everything from the attributes on (kafka-python's own check is ~30x slower).
            if crc32c(raw[_ATTRIBUTES_AT:]) != batch.crc:
                raise InvalidRecords(WireError.CORRUPT_MESSAGE, "record batch CRC mismatch")
            count = batch.records_count
            if count <= 0 or count != batch.last_offset_delta + 1:
                raise InvalidRecords(
                    WireError.CORRUPT_MESSAGE,
                    f"batch of {count} records with last offset delta {batch.last_offset_delta}")
            position += batch.size_in_bytes
            batches.append(ProducedBatch(raw, count, batch.max_timestamp, batch.producer_id,
                                         batch.producer_epoch, batch.base_sequence, batch.is_transactional))
        if position != len(data):
            raise InvalidRecords(WireError.CORRUPT_MESSAGE, "trailing bytes after the last record batch")
    except InvalidRecords:
        raise
    except Exception as error:  # kafka-python's CorruptRecordError, struct.error on short input
        raise InvalidRecords(WireError.CORRUPT_MESSAGE, f"unreadable record batch: {error}") from None
    if not batches:
        raise InvalidRecords(WireError.CORRUPT_MESSAGE, "no complete record batch")
    return batches
