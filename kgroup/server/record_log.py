"""Record batches on the in-memory partition logs.

The cluster's replicated log (``kgroup.core.cluster``) stores one opaque payload per offset.
The server stores each produced v2 record batch as it arrived (compressed or not), with
its base offset and partition leader epoch rewritten to where the leader appended it; the
payload of every offset the batch covers is a :class:`BatchSlice` pointing at it.  A fetch
answers whole batches from the one holding the fetch offset, as Kafka does (the client
skips records before its position).  Neither rewritten field is covered by the batch CRC
(it starts at the attributes), so the bytes stay valid without recompressing.

Produced batches are parsed and validated here, in place (headers with one struct, records
walked where they lie in the request); kafka-python's ``DefaultRecordBatch`` only reads a stored
batch's record timestamps (ListOffsets).
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator, List, Optional, Tuple, Union

import attrs
from kafka.record.default_records import DefaultRecordBatch

from kgroup.server.crc32c import crc32c
from kgroup.core.error_codes import ErrorCode

__all__ = ["BatchSlice", "InvalidRecords", "ProducedBatch", "StoredBatch", "last_sequence",
           "names_unknown_codec", "parse_batches", "starts_transactional"]

#: A batch's first 16 bytes: base offset, batch length, partition leader epoch.  The leader
#: rewrites the first and the last (neither is covered by the CRC).
_HEAD = struct.Struct(">qii")
_HEAD_BYTES = _HEAD.size
_BASE_OFFSET = struct.Struct(">q")
_BATCH_LENGTH_AT = 8
_BATCH_LENGTH = struct.Struct(">i")
_ATTRIBUTES_AT = 21
_ATTRIBUTES = struct.Struct(">h")
_MAGIC_AT = 16
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_MAX_SEQUENCE = 2 ** 31 - 1
#: DefaultRecordBatch's header: base offset, length, leader epoch, magic, CRC, attributes, last
#: offset delta, first and max timestamps, producer id and epoch, base sequence, record count.
_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
_RECORDS_AT = _BATCH_HEADER.size
#: MemoryRecords: a batch's offset and length fields, and the least a batch of any magic can hold.
_LOG_OVERHEAD = 12
_MIN_BATCH_SLICE = 26
_CODEC_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
#: The most a produced batch may decompress to: Kafka's socket.request.max.bytes (100 MiB).
MAX_DECOMPRESSED_BYTES = 104_857_600
#: The codecs Kafka's record format defines (none, gzip, snappy, lz4, zstd).
_KNOWN_CODECS = range(0, 5)
_ZSTD = 4


class InvalidRecords(Exception):
    """A produce request's records cannot be appended; ``code`` is the Kafka error to answer.
    ``in_request``: Kafka refuses it before the log sees it (``ProduceRequest.validateRecords``, run
    by ``KafkaApis.handleProduceRequest``), so its answer is a bare ``PartitionResponse(error)``."""

    def __init__(self, code: ErrorCode, message: str, in_request: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.in_request = in_request


def last_sequence(base_sequence: int, record_count: int) -> int:
    """Kafka's ``DefaultRecordBatch.lastSequence``: the base sequence plus the last offset delta,
    wrapping past Integer.MAX_VALUE to 0; -1 without a base sequence."""
    if base_sequence < 0:
        return -1
    last = base_sequence + record_count - 1
    return last if last <= _MAX_SEQUENCE else last - _MAX_SEQUENCE - 1


@attrs.frozen
class StoredBatch:
    """One v2 record batch as stored: the client's bytes, untouched, behind a patched 16-byte
    ``head`` that carries the log's base offset and leader epoch.  Readers send ``head`` and
    ``tail`` one after the other (:func:`kgroup.server.log_reads.read_batches` hands both to the
    Fetch encoder, which joins them into the response frame), so neither the append nor a fetch
    copies the batch once more for the patch."""

    head: bytes
    #: The client's bytes after the first 16 (a view: no copy of the produced batch is made).
    tail: memoryview = attrs.field(eq=False)
    base_offset: int
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def data(self) -> bytes:
        """The whole batch as a consumer reads it (a copy: for the rare readers of one batch)."""
        return self.head + self.tail

    @property
    def size(self) -> int:
        return len(self.head) + len(self.tail)

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count

    @property
    def is_transactional(self) -> bool:
        """Attribute bit 4 (KIP-98): the batch belongs to its producer's transaction."""
        return bool(_ATTRIBUTES.unpack_from(self.tail, _ATTRIBUTES_AT - _HEAD_BYTES)[0] & _TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        """Attribute bit 5: a control batch (a transaction marker), never a client's."""
        return bool(_ATTRIBUTES.unpack_from(self.tail, _ATTRIBUTES_AT - _HEAD_BYTES)[0] & _CONTROL)

    @property
    def last_sequence(self) -> int:
        return last_sequence(self.base_sequence, self.record_count)

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

    #: The batch as the client sent it (a view of the request's bytes for a produced one).
    data: Union[bytes, memoryview] = attrs.field(eq=False)
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    compression_type: int = 0

    @property
    def last_sequence(self) -> int:
        return last_sequence(self.base_sequence, self.record_count)

    def stored_at(self, base_offset: int, leader_epoch: int) -> StoredBatch:
        (batch_length,) = _BATCH_LENGTH.unpack_from(self.data, _BATCH_LENGTH_AT)
        head = _HEAD.pack(base_offset, batch_length, leader_epoch)
        return StoredBatch(head, memoryview(self.data)[_HEAD_BYTES:], base_offset, self.record_count,
                           self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence)


def starts_transactional(records: Optional[bytes]) -> bool:
    """Whether the first batch of a partition's produced records is transactional (attribute bit 4),
    as Kafka's RequestUtils.hasTransactionalRecords reads it (before any validation)."""
    if records is None or len(records) < _RECORDS_AT or records[_MAGIC_AT] != 2:
        return False
    return bool(_ATTRIBUTES.unpack_from(records, _ATTRIBUTES_AT)[0] & _TRANSACTIONAL)


def parse_batches(records: Union[bytes, memoryview, None], source: Optional[bytes] = None,
                  source_at: int = 0, produce_version: int = 9,
                  max_batch_bytes: Optional[int] = None) -> List[ProducedBatch]:
    """The one batch of a produce request's partition data, validated as Kafka validates a client's
    append, in Kafka's order, so nothing a stock consumer cannot read is ever stored:

    - ``ProduceRequest.validateRecords`` (``in_request``: refused before the log sees it), reading the
      batch boundaries as ``ByteBufferLogInputStream.nextBatchSize`` reads them: a length below the
      minimum record overhead or a magic above 2 (or negative) is CORRUPT_MESSAGE (2); no whole batch
      (an empty set, a batch cut short or whose length runs past the data), a first batch of magic 0
      or 1, a second whole batch are INVALID_RECORD (87); below Produce v7 the first batch's codec is
      read (zstd: UNSUPPORTED_COMPRESSION_TYPE; 5-7: UNKNOWN_SERVER_ERROR, which the data plane
      answers for the whole request, see :func:`names_unknown_codec`).  No CRC is read before a
      second batch is refused.  Bytes after the one batch that are no whole batch are dropped, as
      ``UnifiedLog.trimInvalidBytes`` drops them;
    - ``UnifiedLog.analyzeAndValidateRecords``: a base offset other than 0 is INVALID_RECORD, a batch
      over ``max_batch_bytes`` MESSAGE_TOO_LARGE, one shorter than its header or whose CRC does not
      match CORRUPT_MESSAGE, then a codec other than 0-4 UNKNOWN_SERVER_ERROR (-1:
      ``CompressionType.forId``'s IllegalArgumentException, which Kafka maps to no error code);
    - ``LogValidator.validateBatch``: a count that is not positive or disagrees with the last
      offset delta, a control batch, a producer id without a base sequence are INVALID_RECORD
      (InvalidRecordException);
    - the records themselves, as ``DefaultRecordBatch``'s record iterator reads them (after
      decompression): fewer records than the count ("premature EOF"), bytes left after the last
      one, a record whose fields do not fill its declared size, offset deltas other than
      0, 1, 2... are INVALID_RECORD; a payload the codec cannot decompress too (see
      docs/guide/wire-server.md for how that differs from Kafka);
    - ``LogValidator.validateTimestamp``: a producer setting the LogAppendTime type is
      INVALID_TIMESTAMP (32).

    ``source``: the bytes ``records`` is a view of, from ``source_at`` (a decoded request's records
    are read in place: no copy).
    """
    if not records:
        raise InvalidRecords(ErrorCode.INVALID_RECORD, "Produce requests must have at least one record batch "
                             "per partition", in_request=True)
    if source is not None:
        # ``records`` is a view of ``source`` from ``source_at``: read there, in place.
        data, position = source, source_at
    else:
        data, position = (records if isinstance(records, bytes) else bytes(records)), 0
    view = memoryview(data)
    end = position + len(records)
    try:
        # The batch header is read here with one struct, as MemoryRecords/DefaultRecordBatch would
        # read it but without their copy of every batch (a sixth of the server's time under
        # librdkafka's megabyte batches, issue 28); the order of the checks, and so the error
        # answered for a batch wrong in several ways, is theirs.
        batch_end = _next_batch_end(data, position, end)
        if batch_end is None:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, "Produce requests must have at least one record "
                                 "batch per partition", in_request=True)
        if data[position + _MAGIC_AT] != 2:
            raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                 "produce requests may only hold record batches with magic 2",
                                 in_request=True)
        if produce_version < 7:
            codec = _ATTRIBUTES.unpack_from(data, position + _ATTRIBUTES_AT)[0] & _CODEC_MASK
            if codec == _ZSTD:
                raise InvalidRecords(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Produce requests with version "
                                     f"{produce_version} cannot use zstd (KIP-110)", in_request=True)
            if codec not in _KNOWN_CODECS:
                raise InvalidRecords(ErrorCode.UNKNOWN_SERVER_ERROR, f"unknown compression codec {codec}",
                                     in_request=True)
        if _next_batch_end(data, batch_end, end) is not None:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, f"Produce requests with version {produce_version} "
                                 "are only allowed to contain exactly one record batch", in_request=True)
        # UnifiedLog.analyzeAndValidateRecords, then LogValidator.
        (base_offset,) = _BASE_OFFSET.unpack_from(data, position)
        if base_offset != 0:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, "The baseOffset of the record batch in the append "
                                 f"should be 0, but it is {base_offset}")
        if max_batch_bytes is not None and batch_end - position > max_batch_bytes:
            raise InvalidRecords(ErrorCode.MESSAGE_TOO_LARGE, "batch larger than max.message.bytes")
        if batch_end - position < _RECORDS_AT:
            raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, "record batch shorter than its header")
        (_, _, _, _, crc, attributes, last_offset_delta, first_timestamp, max_timestamp, producer_id,
         producer_epoch, base_sequence, count) = _BATCH_HEADER.unpack_from(data, position)
        raw = view[position:batch_end]
        # The CRC covers everything from the attributes on (kafka-python's own check is ~30x slower).
        if crc32c(raw[_ATTRIBUTES_AT:]) != crc:
            raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, "record batch CRC mismatch")
        compression_type = attributes & _CODEC_MASK
        if compression_type not in _KNOWN_CODECS:
            raise InvalidRecords(ErrorCode.UNKNOWN_SERVER_ERROR,
                                 f"unknown compression codec {compression_type}")
        if count <= 0:
            raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                 f"Invalid reported count for record batch: {count}")
        if count != last_offset_delta + 1:
            raise InvalidRecords(
                ErrorCode.INVALID_RECORD,
                f"Inconsistent batch offset range [0, {last_offset_delta}] "
                f"and count of records {count}")
        if attributes & _CONTROL:
            raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                 "Clients are not allowed to write control records")
        if producer_id >= 0 and base_sequence < 0:
            raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                 f"Invalid sequence number {base_sequence} in record batch "
                                 f"with producerId {producer_id}")
        if attributes & _LOG_APPEND_TIME:
            raise InvalidRecords(ErrorCode.INVALID_TIMESTAMP,
                                 "Producer should not set timestamp type to LogAppendTime")
        if compression_type == 0:  # walked in place: no copy of the records
            max_delta = _check_records(data, count, position + _RECORDS_AT, batch_end)
        else:
            payload = _decompressed(compression_type, bytes(raw[_RECORDS_AT:]))
            max_delta = None if payload is None else _check_records(payload, count, 0, len(payload))
        if max_delta is not None:
            # What Kafka writes into the header (LogValidator sets maxTimestamp from the records).
            max_timestamp = first_timestamp + max_delta
    except InvalidRecords:
        raise
    except Exception as error:  # struct.error on short input, or anything else a hostile batch finds
        raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, f"unreadable record batch: {error}") from None
    return [ProducedBatch(raw, count, max_timestamp, producer_id, producer_epoch, base_sequence,
                          bool(attributes & _TRANSACTIONAL), compression_type)]


def names_unknown_codec(records: Union[bytes, memoryview, None]) -> bool:
    """Whether ``ProduceRequest.validateRecords`` below v7 reaches a first batch naming codec 5-7: a
    whole batch of magic 2.  Its ``compressionType()`` then throws an IllegalArgumentException that
    ``KafkaApis.handleProduceRequest`` does not catch, so Kafka answers the whole request with
    UNKNOWN_SERVER_ERROR (``ProduceRequest.getErrorResponse``) and appends nothing."""
    if records is None or len(records) < _ATTRIBUTES_AT + 2 or records[_MAGIC_AT] != 2:
        return False
    try:
        if _next_batch_end(records, 0, len(records)) is None:
            return False
    except InvalidRecords:
        return False
    return _ATTRIBUTES.unpack_from(records, _ATTRIBUTES_AT)[0] & _CODEC_MASK not in _KNOWN_CODECS


def _next_batch_end(data: Union[bytes, memoryview], position: int, end: int) -> Optional[int]:
    """Where the batch at ``position`` ends, or None when no whole batch is there; Kafka's
    ``ByteBufferLogInputStream.nextBatchSize``: a length below the least record overhead (the magic
    0 one) and a magic byte above 2 or negative are CORRUPT_MESSAGE, the magic read as soon as the
    bytes up to it are there, even if the batch is not whole."""
    if end - position < _LOG_OVERHEAD:
        return None
    (length,) = _BATCH_LENGTH.unpack_from(data, position + _BATCH_LENGTH_AT)
    if _LOG_OVERHEAD + length < _MIN_BATCH_SLICE:
        raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, f"Record size {length} is less than the minimum "
                             "record overhead (14)", in_request=True)
    if end - position <= _MAGIC_AT:
        return None
    if data[position + _MAGIC_AT] > 2:  # an unsigned read: a negative magic is 0x80 and up
        raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE,
                             f"Invalid magic found in record: {data[position + _MAGIC_AT]}", in_request=True)
    batch_end = position + _LOG_OVERHEAD + length
    return batch_end if batch_end <= end else None


def _decompressed(codec: int, payload: bytes) -> Optional[bytes]:
    """The batch's records, decompressed; None when the codec's library is not installed here
    (the batch is then stored unchecked past its header, as before this validation existed)."""
    if codec == 0:
        return payload
    if codec == 1:
        return _gunzip(payload)
    decode = _OPTIONAL_DECODERS.get(codec)
    if decode is None:
        return None
    try:
        out = decode(payload)
    except Exception as error:
        raise InvalidRecords(ErrorCode.INVALID_RECORD,
                             f"Failed to decompress record stream: {error}") from None
    if len(out) > MAX_DECOMPRESSED_BYTES:
        raise InvalidRecords(ErrorCode.INVALID_RECORD, "record batch decompresses past the server's limit")
    return out


def _gunzip(payload: bytes) -> bytes:
    """gzip members one after another, as Java's GZIPInputStream reads them, with a size cap so a
    small hostile batch cannot inflate into gigabytes."""
    out = bytearray()
    rest = payload
    try:
        while True:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += inflater.decompress(rest, MAX_DECOMPRESSED_BYTES + 1 - len(out))
            if len(out) > MAX_DECOMPRESSED_BYTES:
                raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                     "record batch decompresses past the server's limit")
            if not inflater.eof:
                raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                     "Incorrect declared batch size, premature EOF reached")
            rest = inflater.unused_data
            if not rest:
                return bytes(out)
    except zlib.error as error:
        raise InvalidRecords(ErrorCode.INVALID_RECORD,
                             f"Failed to decompress record stream: {error}") from None


def _optional_decoders() -> dict:
    from kafka import codec

    found = {}
    for codec_id, available, decode in ((2, codec.has_snappy, codec.snappy_decode),
                                        (3, codec.has_lz4, codec.lz4_decode),
                                        (4, codec.has_zstd, codec.zstd_decode)):
        if available():
            found[codec_id] = decode
    return found


_OPTIONAL_DECODERS = _optional_decoders()


def _varint(data: bytes, at: int, end: int) -> Tuple[int, int]:
    """A zigzag varint (Kafka's ByteUtils.readVarint/readVarlong) at ``at``, read no further than
    ``end``: (value, next position).  One and two bytes (record sizes and lengths up to 8 KB)
    take the short path."""
    if at + 1 < end:
        first, second = data[at], data[at + 1]
        if first < 0x80:
            return (first >> 1) ^ -(first & 1), at + 1
        if second < 0x80:
            value = (first & 0x7F) | (second << 7)
            return (value >> 1) ^ -(value & 1), at + 2
    value = 0
    shift = 0
    while True:
        if at >= end:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, _PREMATURE_EOF)
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), at
        shift += 7
        if shift > 63:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, "varint longer than 10 bytes")


def _check_records(payload: bytes, count: int, start: int = 0, end: Optional[int] = None) -> Optional[int]:
    """Walk ``count`` records from ``start`` to ``end`` of ``payload`` as DefaultRecord.readFrom
    does; the largest timestamp delta (None for an empty walk).  Every length is checked against
    what is left, so a lie cannot read on.  This runs on every produced record: one-byte varints
    (most fields) and two-byte ones (a 1 KB record's size and value length) are decoded inline."""
    position = start
    if end is None:
        end = len(payload)
    max_delta: Optional[int] = None
    first = 0
    for run_start, run_stop, delta_width in _UNIFORM_RUNS:
        # Records a producer writes in one go usually share one layout (same key and value sizes,
        # no headers): such a run is checked a field at a time over every record (C slices)
        # instead of a record at a time.  Anything else is left to the walk below.
        if first != run_start or count - run_start < _MIN_UNIFORM_RUN:
            break
        run = _uniform_run(payload, position, end, run_start, min(count, run_stop) - run_start, delta_width)
        if run is None:
            break
        position, run_max_delta = run
        max_delta = run_max_delta if max_delta is None else max(max_delta, run_max_delta)
        first = min(count, run_stop)
    read = _varint
    for expected_offset_delta in range(first, count):
        byte = payload[position] if position < end else 0x80
        if byte < 0x80:
            size, at = (byte >> 1) ^ -(byte & 1), position + 1
        elif position + 1 < end and payload[position + 1] < 0x80:
            two_bytes = (byte & 0x7F) | (payload[position + 1] << 7)
            size, at = (two_bytes >> 1) ^ -(two_bytes & 1), position + 2
        else:
            size, at = read(payload, position, end)
        record_end = at + size
        if size < 6 or record_end > end:  # attributes + five one-byte varints at the least
            raise InvalidRecords(ErrorCode.INVALID_RECORD, _PREMATURE_EOF)
        # Every read below stops at the record's end, never in the next record.  Fields: attributes,
        # timestamp delta, offset delta, key length, key, value length, value, header count, headers.
        byte = payload[at + 1]
        if byte < 0x80:
            timestamp_delta, at = (byte >> 1) ^ -(byte & 1), at + 2
        else:
            timestamp_delta, at = read(payload, at + 1, record_end)
        byte = payload[at] if at < record_end else 0x80
        if byte < 0x80 and byte >> 1 == expected_offset_delta and not byte & 1:
            at += 1
        else:
            offset_delta, at = read(payload, at, record_end)
            if offset_delta != expected_offset_delta:
                raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                     f"record {expected_offset_delta} has offset delta {offset_delta}")
        byte = payload[at] if at < record_end else 0x80
        if byte == 1:  # a null key
            at += 1
        else:
            length, at = read(payload, at, record_end)
            if length < -1:
                raise InvalidRecords(ErrorCode.INVALID_RECORD, f"Invalid record key length {length}")
            at += max(length, 0)
        if at + 1 < record_end and payload[at] >= 0x80 and payload[at + 1] < 0x80:  # 64 B..8 KB values
            two_bytes = (payload[at] & 0x7F) | (payload[at + 1] << 7)
            length, at = (two_bytes >> 1) ^ -(two_bytes & 1), at + 2
        else:
            length, at = read(payload, at, record_end)
        if length < -1:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, f"Invalid record value length {length}")
        at += max(length, 0)
        if at + 1 == record_end and payload[at] == 0:  # no headers, and the record ends there
            at += 1
        else:
            at = _check_headers(payload, at, record_end)
        if at != record_end:
            raise InvalidRecords(ErrorCode.INVALID_RECORD,
                                 f"Invalid record size: expected to read {size} bytes in record payload, "
                                 f"but instead read {at - (record_end - size)}")
        if max_delta is None or timestamp_delta > max_delta:
            max_delta = timestamp_delta
        position = record_end
    if position != end:
        raise InvalidRecords(ErrorCode.INVALID_RECORD,
                             "Incorrect declared batch size, records still remaining in file")
    return max_delta


#: Records whose offset deltas are one-byte varints (0..63), then two-byte ones (64..8191).
_UNIFORM_RUNS = ((0, 64, 1), (64, 8192, 2))
_MIN_UNIFORM_RUN = 4
#: The canonical varint bytes of offset deltas 0..63, and the low and high bytes of 64..8191.
_ONE_BYTE_DELTAS = bytes(2 * i for i in range(64))
_TWO_BYTE_DELTAS_LOW = bytes((2 * i) & 0x7F | 0x80 for i in range(64, 8192))
_TWO_BYTE_DELTAS_HIGH = bytes((2 * i) >> 7 for i in range(64, 8192))
_ODD_BYTES = bytes(range(1, 256, 2))


def _uniform_run(payload: bytes, position: int, end: int, first: int, records: int,
                 delta_width: int) -> Optional[Tuple[int, int]]:
    """Check ``records`` records from ``position`` (offset deltas ``first``...) at once when they
    all have the first one's layout: the same size, key and value lengths (byte for byte), no
    headers, one-byte timestamp deltas, canonical ``delta_width``-byte offset deltas.  (end of the
    run, largest timestamp delta), or None when they do not (nothing is raised here: the caller
    walks them one by one, which finds the error if there is one).  Every record it accepts, the
    walk in :func:`_check_records` accepts too, with the same largest timestamp delta: the first
    record is decoded as that walk decodes it, and the others hold the same bytes at every
    position that decides a length."""
    try:
        size, at = _varint(payload, position, end)
        record_end = at + size
        if size < 6 or record_end > end:
            return None
        timestamp_at = at + 1  # after the attributes, which nothing checks
        _, delta_at = _varint(payload, timestamp_at, record_end)
        offset_delta, key_length_at = _varint(payload, delta_at, record_end)
        key_length, key_at = _varint(payload, key_length_at, record_end)
        value_length_at = key_at + max(key_length, 0)
        value_length, value_at = _varint(payload, value_length_at, record_end)
    except InvalidRecords:
        return None
    headers_at = value_at + max(value_length, 0)
    if (delta_at != timestamp_at + 1 or key_length_at != delta_at + delta_width or offset_delta != first
            or key_length < -1 or value_length < -1 or headers_at + 1 != record_end
            or payload[headers_at] != 0):
        return None
    stride = record_end - position
    run_end = position + records * stride
    if run_end > end:
        return None

    def column(at: int) -> bytes:
        """The byte at ``at`` in the first record and at the same place in every other one."""
        return payload[at:run_end:stride]
    same = [(position, at), (key_length_at, key_at), (value_length_at, value_at), (headers_at, record_end)]
    for start, stop in same:  # size, key length, value length, header count: byte for byte
        for fixed in range(start, stop):
            if column(fixed) != payload[fixed:fixed + 1] * records:
                return None
    if delta_width == 1:
        if column(delta_at) != _ONE_BYTE_DELTAS[first:first + records]:
            return None
    elif (column(delta_at) != _TWO_BYTE_DELTAS_LOW[first - 64:first - 64 + records]
          or column(delta_at + 1) != _TWO_BYTE_DELTAS_HIGH[first - 64:first - 64 + records]):
        return None
    timestamps = column(timestamp_at)
    if max(timestamps) >= 0x80:
        return None
    # Zigzag: an even byte b is the delta b / 2, an odd one -(b + 1) / 2.
    non_negative = timestamps.translate(None, _ODD_BYTES)
    max_delta = max(non_negative) >> 1 if non_negative else -((min(timestamps) >> 1) + 1)
    return run_end, max_delta


def _check_headers(payload: bytes, at: int, record_end: int) -> int:
    headers, at = _varint(payload, at, record_end)
    if headers < 0:
        raise InvalidRecords(ErrorCode.INVALID_RECORD,
                             f"Found invalid number of record headers {headers}")
    for _ in range(headers):
        key_length, at = _varint(payload, at, record_end)
        if key_length < 0:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, "Invalid negative header key size")
        at += key_length
        value_length, at = _varint(payload, at, record_end)
        at += max(value_length, 0)
    return at
