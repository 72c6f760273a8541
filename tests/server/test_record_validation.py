"""Produced record batches are validated as Kafka's LogValidator validates a client's append
(issue 23, item 4): nothing a stock consumer cannot read is ever stored.

Before, a batch claiming 1,000 records but holding 1, and a gzip-flagged batch with a garbage
payload and a correct CRC, were both appended, and consumers then failed with
``CorruptRecordError`` on that partition for good.  Kafka answers them INVALID_RECORD (87):
DefaultRecordBatch's record iterator raises InvalidRecordException("Incorrect declared batch
size, premature EOF reached"), and LogValidator.validateBatch the same exception for an
inconsistent count; a CRC mismatch is CorruptRecordException, CORRUPT_MESSAGE (2).
"""
from __future__ import annotations

import gzip
import random
import struct

import pytest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kgroup.server import record_log
from kgroup.server.crc32c import crc32c
from kgroup.server.record_log import InvalidRecords, parse_batches
from kgroup.core.error_codes import ErrorCode

CORRUPT_MESSAGE = 2
INVALID_TIMESTAMP = 32
INVALID_RECORD = 87

_CRC_AT, _ATTRIBUTES_AT, _LAST_OFFSET_DELTA_AT, _COUNT_AT, _RECORDS_AT = 17, 21, 23, 57, 61


def _batch(values, codec: int = 0, offsets=None, timestamps=None) -> bytearray:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(offsets[i] if offsets else i, timestamp=timestamps[i] if timestamps else 1_000 + i,
                       key=None, value=value, headers=[])
    return bytearray(builder.build())


def _sealed(batch: bytearray) -> bytes:
    """The batch with its length and CRC made to agree with its bytes, as a hostile client would."""
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, _CRC_AT, crc32c(bytes(batch[_ATTRIBUTES_AT:])))
    return bytes(batch)


def _claims_1000_records_holding_1() -> bytes:
    batch = _batch([b"the only record"])
    struct.pack_into(">i", batch, _COUNT_AT, 1000)
    struct.pack_into(">i", batch, _LAST_OFFSET_DELTA_AT, 999)
    return _sealed(batch)


def _gzip_flagged_garbage() -> bytes:
    batch = _batch([b"v"])[:_RECORDS_AT] + bytearray(b"\x00this is not gzip" * 4)
    struct.pack_into(">h", batch, _ATTRIBUTES_AT, 1)
    return _sealed(batch)


def _produce(records: bytes, topic: str = "t") -> ProduceRequest:
    topic_cls = ProduceRequest.TopicProduceData
    return ProduceRequest(version=7, transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=[
        topic_cls(version=7, name=topic, partition_data=[
            topic_cls.PartitionProduceData(version=7, index=0, records=records)])])


@pytest.mark.parametrize("records", [_claims_1000_records_holding_1(), _gzip_flagged_garbage()],
                         ids=["claims-1000-records-holds-1", "gzip-flag-garbage-payload-correct-crc"])
def test_a_lying_batch_is_refused_with_invalid_record_and_nothing_is_appended(server1, raw_client, records):
    server1.create_topic("t", partitions=1)
    client = raw_client(server1.listener(1))
    refused = client.request(_produce(records)).responses[0].partition_responses[0]
    assert (refused.error_code, refused.base_offset) == (INVALID_RECORD, -1)
    assert server1._call(lambda: server1.cluster.partition("t", 0).leader_log().leo) == 0
    # The partition is untouched: the next good batch lands at offset 0.
    accepted = client.request(_produce(bytes(_batch([b"good"])))).responses[0].partition_responses[0]
    assert (accepted.error_code, accepted.base_offset) == (0, 0)


def _with_record_bytes(records: bytes, count: int) -> bytes:
    batch = _batch([b"v"])[:_RECORDS_AT] + bytearray(records)
    struct.pack_into(">i", batch, _COUNT_AT, count)
    struct.pack_into(">i", batch, _LAST_OFFSET_DELTA_AT, count - 1)
    return _sealed(batch)


def _varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        if value < 0x80:
            return bytes(out + bytes([value]))
        out.append((value & 0x7F) | 0x80)
        value >>= 7


def _record(offset_delta: int, value: bytes = b"v", headers: int = 0, pad: bytes = b"") -> bytes:
    body = b"\x00" + _varint(0) + _varint(offset_delta) + _varint(-1) + _varint(len(value)) + value
    body += _varint(headers) + pad
    return _varint(len(body)) + body


def _flagged(batch: bytearray, attributes: int) -> bytes:
    struct.pack_into(">h", batch, _ATTRIBUTES_AT, attributes)
    return _sealed(batch)


@pytest.mark.parametrize("records, code", [
    (_claims_1000_records_holding_1(), INVALID_RECORD),
    (_gzip_flagged_garbage(), INVALID_RECORD),
    # A truncated gzip stream: Kafka's iterator hits EOF, "premature EOF reached".
    (_sealed(_batch([b"v"])[:_RECORDS_AT] + bytearray(gzip.compress(_record(0))[:-12])), INVALID_RECORD),
    (_with_record_bytes(_record(0), 0), INVALID_RECORD),                       # count 0
    (_with_record_bytes(_record(0) + _record(1), 1), INVALID_RECORD),          # a record left over
    (_with_record_bytes(_record(0) + _record(5), 2), INVALID_RECORD),          # offset deltas 0, 5
    (_with_record_bytes(_record(0, pad=b"xx"), 1), INVALID_RECORD),            # fields short of its size
    (_with_record_bytes(_record(0, headers=-1), 1), INVALID_RECORD),           # negative header count
    (_flagged(_batch([b"v"]), 0x08), INVALID_TIMESTAMP),                      # LogAppendTime from a client
    (_flagged(_batch([b"v"]), 0x20), INVALID_RECORD),                         # a control batch
], ids=["count-1000-holds-1", "gzip-garbage", "gzip-truncated", "count-0", "record-left-over",
        "offset-deltas-skip", "record-size-lies", "negative-headers", "log-append-time", "control-batch"])
def test_log_validator_refusals(records, code):
    with pytest.raises(InvalidRecords) as refused:
        parse_batches(records)
    assert refused.value.code == code


def test_a_flipped_crc_is_corrupt_message_as_ensure_valid_answers():
    batch = _batch([b"v"])
    batch[_CRC_AT] ^= 0xFF
    with pytest.raises(InvalidRecords) as refused:
        parse_batches(bytes(batch))
    assert refused.value.code == CORRUPT_MESSAGE


def test_a_good_gzip_batch_is_stored_as_sent_with_its_records_max_timestamp():
    data = bytes(_batch([b"a" * 500, b"b", b"c"], codec=1, timestamps=[5_000, 9_000, 7_000]))
    (batch,) = parse_batches(data)
    assert (batch.data, batch.record_count, batch.max_timestamp) == (data, 3, 9_000)


def test_a_batch_inflating_past_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(record_log, "MAX_DECOMPRESSED_BYTES", 10_000)
    data = bytes(_batch([b"\x00" * 20_000], codec=1))
    with pytest.raises(InvalidRecords) as refused:
        parse_batches(data)
    assert refused.value.code == ErrorCode.INVALID_RECORD


def test_two_batches_for_one_partition_are_refused_as_produce_request_validate_records_does(
        server1, raw_client):
    server1.create_topic("t", partitions=1)
    client = raw_client(server1.listener(1))
    two = bytes(_batch([b"a"])) + bytes(_batch([b"b"]))
    refused = client.request(_produce(two)).responses[0].partition_responses[0]
    assert (refused.error_code, refused.base_offset) == (INVALID_RECORD, -1)


def test_records_with_keys_and_headers_pass_the_walk():
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(200):
        builder.append(i, timestamp=1_000 + i, key=b"k" * i, value=None if i % 7 == 0 else b"v" * (i * 40),
                       headers=[("h%d" % j, b"x" * j if j % 2 else None) for j in range(i % 4)])
    data = bytes(builder.build())
    (batch,) = parse_batches(data)
    assert (batch.record_count, batch.max_timestamp) == (200, 1_199)


# -- the uniform-run check (issue 28) -------------------------------------------------------------------


def _records_of(batch: bytes) -> bytes:
    return bytes(batch[_RECORDS_AT:])


def _walked(payload: bytes, count: int, monkeypatch, runs) -> object:
    """What _check_records answers (its largest timestamp delta, or the InvalidRecords it raises)."""
    monkeypatch.setattr(record_log, "_UNIFORM_RUNS", runs)
    try:
        return ("ok", record_log._check_records(payload, count))
    except InvalidRecords as error:
        return ("refused", error.code, str(error))


def test_a_producers_batch_of_1_kb_records_is_checked_a_field_at_a_time():
    """kafka-python and confluent-kafka write records of one layout: the walk takes them as two
    uniform runs (offset deltas of one byte, then two) rather than one record at a time."""
    payload = _records_of(_batch([bytes(1024)] * 1000, timestamps=[5_000 + i // 20 for i in range(1000)]))
    first_run = record_log._uniform_run(payload, 0, len(payload), 0, 64, 1)
    assert first_run is not None and first_run[1] == 3  # records 60-63: 5_003
    second_run = record_log._uniform_run(payload, first_run[0], len(payload), 64, 936, 2)
    assert second_run == (len(payload), 49)
    assert record_log._check_records(payload, 1000) == 49


def test_the_uniform_run_check_answers_as_the_record_walk_does(monkeypatch):
    """Every batch, whatever was changed in it, gets the same answer (largest timestamp delta, or
    the same error) with the uniform-run check as from the record-at-a-time walk alone."""
    rng = random.Random(28)
    runs = record_log._UNIFORM_RUNS
    compared = accepted_fast = 0
    for case in range(400):
        count = rng.choice([4, 5, 63, 64, 65, 70, 130])
        value = bytes(rng.choice([0, 1, 60, 64, 1024]))
        spread = rng.choice([0, 5, 63, 64, 200])  # timestamp deltas past 63 need two bytes
        timestamps = [10_000 + rng.randint(-spread, spread) for _ in range(count)]
        values = [value] * count
        if case % 5 == 0:  # one record of another size
            values[rng.randrange(count)] = value + b"x"
        payload = bytearray(_records_of(_batch(values, timestamps=timestamps)))
        if case % 3:
            for _ in range(rng.randint(1, 3)):  # bytes a hostile or broken client got wrong
                wrong = rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, rng.randrange(256)])
                payload[rng.randrange(len(payload))] = wrong
        if case % 7 == 0:
            payload = payload[:rng.randrange(len(payload))]
        fast = _walked(bytes(payload), count, monkeypatch, runs)
        slow = _walked(bytes(payload), count, monkeypatch, ())
        assert fast == slow, case
        compared += 1
        accepted_fast += fast[0] == "ok"
    assert compared == 400 and accepted_fast > 50  # both outcomes were exercised
