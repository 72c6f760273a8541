"""The hand-written Fetch response encoder (kgroup/server/fetch_encoding.py) against kafka-python's
generic codec: the same bytes for every response at every version the server serves (v4..v12,
flexible from v12 as in Kafka's FetchResponse.json, the partition's tagged DivergingEpoch /
CurrentLeader / SnapshotId included), frames.encode_response answering exactly as the generic path
for what the hand encoder leaves to it, and a fetch answered through the engine never reaching
kafka-python's encoder, its records written from the stored batches' own pieces."""
from __future__ import annotations

from typing import Any, List

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecords

from kgroup.server import fetch_encoding, frames
from kgroup.server.faults import error_codes_of
from kgroup.server.fetch_encoding import (
    FIRST_VERSION, LAST_VERSION, AbortedTransactionAnswer, FetchAnswer, PartitionFetchAnswer,
    TopicFetchAnswer, as_struct, encode_fetch_response,
)
from kgroup.server.log_reads import read_batches
from kgroup.server.record_log import BatchSlice

from .hand_codec_checks import SETTINGS, generic_response_frame, int16, int32, int64, names

COVERED = list(range(FIRST_VERSION, LAST_VERSION + 1))
#: A batch as (head, tail): the 16 patched bytes and the rest, as StoredBatch keeps them; one
#: long enough for a multi-byte compact length now and then.
batches = st.tuples(st.binary(min_size=16, max_size=16), st.binary(max_size=40) | st.binary(min_size=130,
                                                                                            max_size=200))
partitions = st.lists(st.fixed_dictionaries({
    "partition_index": int32, "error_code": int16, "high_watermark": int64, "last_stable_offset": int64,
    "log_start_offset": int64,
    "aborted_transactions": st.none() | st.lists(st.tuples(int64, int64), max_size=3),
    "preferred_read_replica": int32, "records": st.none() | st.lists(batches, max_size=3),
    "diverging_epoch": st.none() | st.tuples(int32, int64),
    "current_leader": st.none() | st.tuples(int32, int32),
    "snapshot_id": st.none() | st.tuples(int64, int32)}), max_size=3)
topics = st.lists(st.tuples(names, partitions), max_size=3)

_TOPIC = FetchResponse.FetchableTopicResponse
_PARTITION = _TOPIC.PartitionData


def _tagged_structs(fields: dict) -> dict:
    diverging, leader, snapshot = fields["diverging_epoch"], fields["current_leader"], fields["snapshot_id"]
    return {
        "diverging_epoch": None if diverging is None else _PARTITION.EpochEndOffset(
            epoch=diverging[0], end_offset=diverging[1]),
        "current_leader": None if leader is None else _PARTITION.LeaderIdAndEpoch(
            leader_id=leader[0], leader_epoch=leader[1]),
        "snapshot_id": None if snapshot is None else _PARTITION.SnapshotId(
            end_offset=snapshot[0], epoch=snapshot[1])}


def _response(version: int, topic_list: list, throttle_time_ms: int, error_code: int, session_id: int) -> Any:
    """kafka-python's FetchResponse struct for the drawn values."""
    def partition(fields: dict) -> Any:
        aborted = fields["aborted_transactions"]
        records = fields["records"]
        result = _PARTITION(
            version=version, partition_index=fields["partition_index"], error_code=fields["error_code"],
            high_watermark=fields["high_watermark"], last_stable_offset=fields["last_stable_offset"],
            log_start_offset=fields["log_start_offset"],
            aborted_transactions=None if aborted is None else [
                _PARTITION.AbortedTransaction(version=version, producer_id=producer_id, first_offset=first)
                for producer_id, first in aborted],
            preferred_read_replica=fields["preferred_read_replica"],
            records=None if records is None else b"".join(head + tail for head, tail in records))
        for name, value in _tagged_structs(fields).items():
            setattr(result, name, value)
        return result

    return FetchResponse(version=version, throttle_time_ms=throttle_time_ms, error_code=error_code,
                         session_id=session_id, responses=[
                             _TOPIC(version=version, topic=name, partitions=[partition(p) for p in parts])
                             for name, parts in topic_list])


def _answer(topic_list: list, throttle_time_ms: int, error_code: int, session_id: int) -> FetchAnswer:
    """The same response as :func:`_response`, as the data plane builds it: records as head bytes and
    tail views."""
    answer = FetchAnswer([], throttle_time_ms, error_code, session_id)
    for name, parts in topic_list:
        built: List[PartitionFetchAnswer] = []
        for fields in parts:
            aborted, records = fields["aborted_transactions"], fields["records"]
            partition = PartitionFetchAnswer(
                fields["partition_index"], fields["error_code"], fields["high_watermark"],
                fields["last_stable_offset"], fields["log_start_offset"],
                None if aborted is None else [AbortedTransactionAnswer(pid, first) for pid, first in aborted],
                fields["preferred_read_replica"],
                None if records is None else [
                    piece for head, tail in records for piece in (head, memoryview(tail))],
                **_tagged_structs(fields))
            built.append(partition)
        answer.responses.append(TopicFetchAnswer(name, built))
    return answer


@SETTINGS
@given(version=st.sampled_from(COVERED), correlation_id=int32, topic_list=topics, throttle_time_ms=int32,
       error_code=int16, session_id=int32)
def test_response_encodes_to_kafka_pythons_bytes(version, correlation_id, topic_list, throttle_time_ms,
                                                 error_code, session_id):
    values = (version, topic_list, throttle_time_ms, error_code, session_id)
    expected = generic_response_frame(_response(*values), version, correlation_id)
    assert encode_fetch_response(_response(*values), version, correlation_id) == expected
    answer = _answer(*values[1:])
    assert encode_fetch_response(answer, version, correlation_id) == expected
    assert frames.encode_response(answer, version, correlation_id) == expected
    assert generic_response_frame(as_struct(answer, version), version, correlation_id) == expected
    assert error_codes_of(answer) == error_codes_of(_response(*values))


def test_answer_beyond_the_covered_versions_goes_through_kafka_pythons_struct():
    partition = PartitionFetchAnswer(0, 0, 5, 5, 0, record_pieces=[b"x"])
    answer = FetchAnswer([TopicFetchAnswer("t", [partition])])
    for version in (3, 13):
        assert encode_fetch_response(answer, version, 1) is None
    assert frames.encode_response(answer, 3, 1) == generic_response_frame(as_struct(answer, 3), 3, 1)


def test_a_value_only_kafka_python_judges_is_refused_as_the_generic_path_refuses_it():
    partition = PartitionFetchAnswer(0, 0, None)  # type: ignore[arg-type]
    answer = FetchAnswer([TopicFetchAnswer("t", [partition])])
    assert encode_fetch_response(answer, 12, 1) is None
    with pytest.raises(Exception) as raised:
        frames.encode_response(answer, 12, 1)
    with pytest.raises(type(raised.value)):
        generic_response_frame(as_struct(answer, 12), 12, 1)


def test_records_joins_the_pieces_and_sets_one_piece():
    partition = PartitionFetchAnswer(0, record_pieces=[b"ab", memoryview(b"cd")])
    assert partition.records == b"abcd"
    partition.records = None
    assert partition.record_pieces is None and partition.records is None
    partition.records = b"xy"
    assert partition.records == b"xy"


# -- through the engine ---------------------------------------------------------------------------

def _produce(records: bytes) -> ProduceRequest:
    topic = ProduceRequest.TopicProduceData
    data = topic.PartitionProduceData(version=9, index=0, records=records)
    return ProduceRequest(version=9, acks=-1, timeout_ms=5_000,
                          topic_data=[topic(version=9, name="t", partition_data=[data])])


def _fetch(version: int, isolation_level: int = 0) -> FetchRequest:
    topic = FetchRequest.FetchTopic
    return FetchRequest(version=version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                        isolation_level=isolation_level, session_id=0, session_epoch=-1,
                        forgotten_topics_data=[], topics=[topic(version=version, topic="t", partitions=[
                            topic.FetchPartition(version=version, partition=0, fetch_offset=0,
                                                 partition_max_bytes=1 << 20, current_leader_epoch=-1,
                                                 log_start_offset=-1)])])


@pytest.fixture
def loaded(make_engine, make_records):
    """Three brokers, topic "t" (one partition, three replicas) holding two batches."""
    harness = make_engine(brokers=3)
    harness.cluster.create_topic("t", 1, 3)
    harness.engine.data.topic_id("t")
    leader = harness.leader("t")
    connection = harness.connect(leader)
    for first in (b"a", b"b"):
        harness.send(connection, _produce(make_records(3, value=first)))
    return harness


def test_a_fetch_never_reaches_kafka_pythons_encoder(loaded, monkeypatch):
    """Structural, not a timing: neither FetchResponse.encode nor the struct conversion runs for a
    fetch answered at any served version, and the frame is what kafka-python decodes into the
    stored records."""
    calls: List[str] = []
    encode, convert = FetchResponse.encode, fetch_encoding.as_struct

    def counting_encode(self, *args, **kwargs):
        calls.append("FetchResponse.encode")
        return encode(self, *args, **kwargs)

    def counting_convert(*args):
        calls.append("as_struct")
        return convert(*args)

    monkeypatch.setattr(FetchResponse, "encode", counting_encode)
    monkeypatch.setattr(fetch_encoding, "as_struct", counting_convert)
    connection = loaded.connect(loaded.leader("t"))
    for version in COVERED:
        for isolation_level in (0, 1):
            [reply] = loaded.send(connection, _fetch(version, isolation_level), correlation_id=version)
            frame = reply.frame()
            assert frame is not None and calls == []
            answer = FetchResponse.decode(frame[4:], version=version, header=True)
            [topic] = answer.responses
            [partition] = topic.partitions
            assert answer.header.correlation_id == version
            assert (partition.error_code, partition.high_watermark) == (0, 6)
            assert partition.aborted_transactions == ([] if isolation_level else None)
            reader, values = MemoryRecords(partition.records), []
            while reader.has_next():
                values.extend(r.value for r in reader.next_batch())
            assert values == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2"]


def test_read_batches_hands_out_the_stored_pieces_without_copying_them(loaded):
    """The records are copied once, into the frame: read_batches returns the stored batches' own
    head bytes and tail views, and their total size."""
    partition = loaded.cluster.topics["t"][0]
    log = partition.leader_log()
    stored = [entry.payload.batch for entry in log.entries if isinstance(entry.payload, BatchSlice)]
    stored = list({id(batch): batch for batch in stored}.values())
    pieces, size, next_offset = read_batches(log, 0, 1 << 20, first=True, end_offset=log.hw)
    assert len(stored) == 2 and next_offset == 6
    assert size == sum(batch.size for batch in stored)
    assert all(piece is expected for piece, expected in zip(
        pieces, [piece for batch in stored for piece in (batch.head, batch.tail)], strict=True))


def test_the_fetch_error_answer_encodes_as_the_struct_it_replaced():
    """apis/fetch.py's error answer (a fault rule's or UNSUPPORTED_VERSION's): null records and an
    empty aborted list, as kafka-python's struct defaults wrote them."""
    from kgroup.server.apis.fetch import API
    request = _fetch(12)
    answer = API.error_answer(request, 12, 6)
    struct_response = FetchResponse(version=12, throttle_time_ms=0, error_code=0, session_id=0, responses=[
        _TOPIC(version=12, topic="t", partitions=[
            _PARTITION(version=12, partition_index=0, error_code=6, high_watermark=-1, records=None)])])
    assert frames.encode_response(answer, 12, 3) == generic_response_frame(struct_response, 12, 3)
    assert error_codes_of(answer) == (6,)
