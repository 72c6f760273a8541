"""Record batch validation on the produce path (the CRC check uses kgroup.server.crc32c)."""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kgroup.server.record_log import InvalidRecords, parse_batches
from kgroup.core.error_codes import ErrorCode


def _batch(values) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for offset, value in enumerate(values):
        builder.append(offset, timestamp=None, key=None, value=value, headers=[])
    return bytes(builder.build())


def test_valid_batches_parse():
    for values in ([b"a" * 100, b"b"], [b"c" * 2000]):
        data = _batch(values)
        (parsed,) = parse_batches(data)
        assert (parsed.record_count, bytes(parsed.data)) == (len(values), data)


def test_two_batches_are_refused_as_produce_request_validate_records_refuses_them():
    """Produce v3+ holds exactly one batch per partition (ProduceRequest.validateRecords), refused
    before the log: parse_batches refuses the second one itself, before reading any CRC."""
    with pytest.raises(InvalidRecords) as raised:
        parse_batches(_batch([b"a" * 100, b"b"]) + _batch([b"c" * 2000]))
    assert (raised.value.code, raised.value.in_request) == (ErrorCode.INVALID_RECORD, True)


@pytest.mark.parametrize("position", [21, 30, 70, -1])  # attributes, inside the header, a record, the end
def test_a_flipped_bit_after_the_crc_is_corrupt_message(position):
    data = bytearray(_batch([b"x" * 100]))
    data[position] ^= 0x01
    with pytest.raises(InvalidRecords) as raised:
        parse_batches(bytes(data))
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


def test_a_stored_batch_keeps_the_clients_bytes_and_patches_only_its_head():
    """Issue 28: appending copied a 1 MB batch twice (bytearray, then bytes) to patch 12 bytes.
    Now the stored batch is a patched 16-byte head and a view of the client's bytes (parsing makes
    no copy either since the batch header is read without kafka-python's DefaultRecordBatch); a consumer
    reads the two one after the other: the client's batch with the leader's base offset and epoch."""
    from kafka.record.default_records import DefaultRecordBatch

    data = _batch([b"v" * 1000] * 3)
    (produced,) = parse_batches(data)
    stored = produced.stored_at(base_offset=4_000, leader_epoch=7)
    assert stored.tail.obj is data  # a view of the request's bytes, not a copy (nor is the parsed batch)
    assert len(stored.head) == 16 and stored.size == len(data)
    whole = stored.head + bytes(stored.tail)
    assert whole[16:] == data[16:] and whole[8:12] == data[8:12]  # only base offset and epoch differ
    read = DefaultRecordBatch(whole)
    assert read.base_offset == 4_000 and int.from_bytes(whole[12:16], "big") == 7  # partition leader epoch
    assert read.validate_crc() and [r.offset for r in read] == [4_000, 4_001, 4_002]
    assert stored.data == whole
