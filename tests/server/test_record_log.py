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
    data = _batch([b"a" * 100, b"b"]) + _batch([b"c" * 2000])
    batches = parse_batches(data)
    assert [b.record_count for b in batches] == [2, 1]
    assert b"".join(b.data for b in batches) == data


@pytest.mark.parametrize("position", [21, 30, 70, -1])  # attributes, inside the header, a record, the end
def test_a_flipped_bit_after_the_crc_is_corrupt_message(position):
    data = bytearray(_batch([b"x" * 100]))
    data[position] ^= 0x01
    with pytest.raises(InvalidRecords) as raised:
        parse_batches(bytes(data))
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE
