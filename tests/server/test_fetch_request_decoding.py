"""The hand-written Fetch request decoder (kgroup/server/fetch_request_decoding.py) against
kafka-python's generic codec: the same values decoded from every request at every version the server
serves (v4..v12, flexible from v12 as in Kafka's FetchRequest.json), and frames.decode_request
answering exactly as the generic path does for the bytes the hand decoder leaves to it."""
from __future__ import annotations

import struct
from typing import Any, List, Optional, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer import FetchRequest

from kgroup.server import frames
from kgroup.server.fetch_request_decoding import (
    FIRST_VERSION, LAST_VERSION, FetchRequestData, decode_fetch_request,
)

from .hand_codec_checks import (
    SETTINGS, decode_outcome, generic_decode_outcome, int32, int64, names, string, uvarint,
)

COVERED = list(range(FIRST_VERSION, LAST_VERSION + 1))
nullable_names = st.none() | names
int8 = st.integers(-2**7, 2**7 - 1)
#: Mostly what clients send (a consumer's -1, read_uncommitted/read_committed), sometimes anything.
replica_ids = st.sampled_from([-1, 0, 2]) | int32
isolation_levels = st.sampled_from([0, 1]) | int8
#: (partition, current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset, partition_max_bytes)
fetch_partitions = st.lists(st.tuples(int32, int32, int64, int32, int64, int32), max_size=3)
fetch_topics = st.lists(st.tuples(names, fetch_partitions), max_size=3)
forgotten_topics = st.lists(st.tuples(names, st.lists(int32, max_size=4)), max_size=2)
rack_ids = st.sampled_from(["", "rack-a"]) | names


def _values(request: Any) -> tuple:
    """Every field of a decoded Fetch request, kafka-python's struct or the hand decoder's object."""
    return (request.replica_id, request.max_wait_ms, request.min_bytes, request.max_bytes,
            request.isolation_level, request.session_id, request.session_epoch, request.rack_id,
            request.cluster_id,
            [(t.topic, [(p.partition, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch,
                         p.log_start_offset, p.partition_max_bytes) for p in t.partitions])
             for t in request.topics],
            [(t.topic, list(t.partitions)) for t in request.forgotten_topics_data])


def _generic_request(frame: bytes, version: int) -> Any:
    return FetchRequest.decode(frame, version=version, header=True)


def _struct_request(version: int, replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
                    isolation_level: int, session_id: int, session_epoch: int, topics: list,
                    forgotten: list, rack_id: str, cluster_id: Optional[str]) -> Any:
    """A kafka-python FetchRequest at ``version`` (fields the version lacks are not written)."""
    topic_cls = FetchRequest.FetchTopic
    request = FetchRequest(
        version=version, replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
        max_bytes=max_bytes, isolation_level=isolation_level, session_id=session_id,
        session_epoch=session_epoch, rack_id=rack_id,
        topics=[topic_cls(version=version, topic=name, partitions=[
            topic_cls.FetchPartition(version=version, partition=p[0], current_leader_epoch=p[1],
                                     fetch_offset=p[2], last_fetched_epoch=p[3], log_start_offset=p[4],
                                     partition_max_bytes=p[5])
            for p in partitions]) for name, partitions in topics],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(version=version, topic=name, partitions=list(ps))
                               for name, ps in (forgotten if version >= 7 else ())])
    if version >= 12:
        request.cluster_id = cluster_id
    return request


@SETTINGS
@given(version=st.sampled_from(COVERED), correlation_id=int32, client_id=nullable_names,
       replica_id=replica_ids, max_wait_ms=int32, min_bytes=int32, max_bytes=int32,
       isolation_level=isolation_levels, session_id=int32, session_epoch=int32, topics=fetch_topics,
       forgotten=forgotten_topics, rack_id=rack_ids, cluster_id=nullable_names)
def test_request_encoded_by_kafka_python_decodes_to_kafka_pythons_values(
        version, correlation_id, client_id, replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level,
        session_id, session_epoch, topics, forgotten, rack_id, cluster_id):
    request = _struct_request(version, replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level,
                              session_id, session_epoch, topics, forgotten, rack_id, cluster_id)
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    frame = bytes(request.encode(header=True))
    expected = _generic_request(frame, version)
    decoded = decode_fetch_request(frame, version)
    assert decoded is not None
    assert decoded[0] == expected.header.client_id
    assert _values(decoded[1]) == _values(expected)
    # Trailing bytes are ignored by both (Kafka's AbstractRequest.parseRequest).
    with_trailing_bytes = decode_fetch_request(frame + b"\x01\x02", version)
    assert with_trailing_bytes is not None and _values(with_trailing_bytes[1]) == _values(expected)


# -- frames written independently of both codecs (unknown tagged fields, nulls) ---------------------

def _tags(unknown: List[bytes], cluster_id: Any = ..., cluster_id_at: int = 0) -> bytes:
    """A tagged-field section: ``unknown`` values under tags 7, 8, ... (none defined for FetchRequest
    v12 there), with ClusterId (tag 0) inserted at ``cluster_id_at`` unless ``cluster_id`` is ``...``."""
    fields = [(7 + i, value) for i, value in enumerate(unknown)]
    if cluster_id is not ...:
        raw = b"\x00" if cluster_id is None else uvarint(len(cluster_id.encode()) + 1) + cluster_id.encode()
        fields.insert(min(cluster_id_at, len(fields)), (0, raw))
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(value)) + value
                                           for tag, value in fields)


def _request_frame(version: int, correlation_id: int, client_id: Optional[str], replica_id: int = -1,
                   max_wait_ms: int = 500, min_bytes: int = 1, max_bytes: int = 52428800,
                   isolation_level: int = 0, session_id: int = 0, session_epoch: int = -1,
                   topics: Optional[list] = [], forgotten: Optional[list] = [], rack_id: Optional[str] = "",
                   tags: Tuple[bytes, ...] = (), cluster_id: Any = ..., cluster_id_at: int = 0) -> bytes:
    """A Fetch request frame body as FetchRequest.json lays it out; ``None`` for ``topics``,
    ``forgotten`` or a name writes a null."""
    flexible = version >= 12

    def length(items: Optional[list]) -> bytes:
        if items is None:
            return b"\x00" if flexible else b"\xff\xff\xff\xff"
        return uvarint(len(items) + 1) if flexible else struct.pack(">i", len(items))

    tagged = _tags(list(tags)) if flexible else b""
    out = [struct.pack(">hhi", 1, version, correlation_id), string(client_id, False), tagged,
           struct.pack(">iiiib", replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level)]
    if version >= 7:
        out.append(struct.pack(">ii", session_id, session_epoch))
    out.append(length(topics))
    for name, partitions in topics or ():
        out += [string(name, flexible), length(partitions)]
        for index, leader_epoch, offset, last_fetched_epoch, log_start_offset, max_bytes in partitions:
            out.append(struct.pack(">i", index))
            if version >= 9:
                out.append(struct.pack(">i", leader_epoch))
            out.append(struct.pack(">q", offset))
            if version >= 12:
                out.append(struct.pack(">i", last_fetched_epoch))
            if version >= 5:
                out.append(struct.pack(">q", log_start_offset))
            out += [struct.pack(">i", max_bytes), tagged]
        out.append(tagged)
    if version >= 7:
        out.append(length(forgotten))
        for name, partitions in forgotten or ():
            out += [string(name, flexible), length(partitions),
                    struct.pack(f">{len(partitions)}i", *partitions), tagged]
    if version >= 11:
        out.append(string(rack_id, flexible))
    if flexible:
        out.append(_tags(list(tags), cluster_id, cluster_id_at))
    return b"".join(out)


@SETTINGS
@given(version=st.sampled_from(COVERED), correlation_id=int32, client_id=nullable_names,
       replica_id=replica_ids, isolation_level=isolation_levels, session_id=int32, session_epoch=int32,
       topics=fetch_topics, forgotten=forgotten_topics, rack_id=rack_ids,
       tags=st.lists(st.binary(max_size=5), max_size=2).map(tuple),
       cluster_id=st.just(...) | nullable_names, cluster_id_at=st.integers(0, 2))
def test_request_with_unknown_tagged_fields_decodes_to_kafka_pythons_values(
        version, correlation_id, client_id, replica_id, isolation_level, session_id, session_epoch, topics,
        forgotten, rack_id, tags, cluster_id, cluster_id_at):
    frame = _request_frame(version, correlation_id, client_id, replica_id=replica_id,
                           isolation_level=isolation_level, session_id=session_id,
                           session_epoch=session_epoch, topics=topics, forgotten=forgotten, rack_id=rack_id,
                           tags=tags, cluster_id=cluster_id, cluster_id_at=cluster_id_at)
    expected = _generic_request(frame, version)
    decoded = decode_fetch_request(frame, version)
    assert decoded is not None
    assert decoded[0] == expected.header.client_id
    assert _values(decoded[1]) == _values(expected)


def _outcome(frame: bytes) -> Any:
    return decode_outcome(frame, _values)


def _generic_outcome(frame: bytes, monkeypatch: pytest.MonkeyPatch) -> Any:
    return generic_decode_outcome(frame, _values, "decode_fetch_request", monkeypatch)


_TOPICS = [("topic", [(0, 3, 100, 2, -1, 1048576), (1, 3, 0, -1, -1, 1048576)]), ("other", [])]


@pytest.mark.parametrize("version", [4, 5, 7, 9, 11, 12])
def test_every_truncation_and_byte_flip_answers_as_the_generic_path(version, monkeypatch):
    frame = _request_frame(version, 9, "client", session_id=77, session_epoch=3, topics=_TOPICS,
                           forgotten=[("gone", [4, 5])], rack_id="rack", tags=(b"tag",), cluster_id="kc")
    variants = [frame[:cut] for cut in range(len(frame))]
    variants += [frame[:at] + bytes([frame[at] ^ flip]) + frame[at + 1:]
                 for at in range(len(frame)) for flip in (0x01, 0x80, 0xFF)]
    for variant in variants:
        assert _outcome(variant) == _generic_outcome(variant, monkeypatch), variant.hex()


@pytest.mark.parametrize("version", [7, 11, 12])
@pytest.mark.parametrize("nulled", ["topics", "topic name", "forgotten", "forgotten name", "rack id"])
def test_a_null_where_the_schema_forbids_one_is_left_to_the_generic_path_which_refuses_it(
        version, nulled, monkeypatch):
    if nulled == "rack id" and version < 11:
        return
    fields: dict = {"topics": _TOPICS, "forgotten": [("gone", [4])], "rack_id": "r"}
    if nulled == "topics":
        fields["topics"] = None
    elif nulled == "topic name":
        fields["topics"] = [(None, [])]
    elif nulled == "forgotten":
        fields["forgotten"] = None
    elif nulled == "forgotten name":
        fields["forgotten"] = [(None, [1])]
    else:
        fields["rack_id"] = None
    frame = _request_frame(version, 3, "c", **fields)
    assert decode_fetch_request(frame, version) is None
    outcome = _outcome(frame)
    assert outcome[0] is frames.FrameError and "is null" in outcome[1]
    assert outcome == _generic_outcome(frame, monkeypatch)


def test_a_cluster_id_tag_whose_size_disagrees_is_left_to_the_generic_path(monkeypatch):
    frame = _request_frame(12, 3, "c", topics=_TOPICS, cluster_id="abc")
    assert frame.endswith(b"\x01\x00\x04\x04abc")
    padded = frame[:-7] + b"\x01\x00\x05\x04abc\x00"  # a 5-byte value holding a 4-byte string
    assert decode_fetch_request(frame, 12) is not None
    assert decode_fetch_request(padded, 12) is None
    assert _outcome(padded) == _generic_outcome(padded, monkeypatch)


def test_varints_longer_than_kafka_reads_are_left_to_the_generic_path(monkeypatch):
    frame = _request_frame(12, 3, "c", topics=[], forgotten=[])
    # The empty request-level tagged section, re-written as a 6-byte varint of zero.
    too_long = frame[:-1] + b"\x80\x80\x80\x80\x80\x00"
    assert decode_fetch_request(too_long, 12) is None
    assert _outcome(too_long) == _generic_outcome(too_long, monkeypatch)


def test_versions_not_served_are_left_to_the_generic_codec():
    frame = _request_frame(12, 1, "c", topics=_TOPICS)
    assert decode_fetch_request(frame, 13) is None and decode_fetch_request(frame, 3) is None


# -- the hot path never reaches kafka-python's decoder --------------------------------------------

def _refuse_generic_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("kafka-python's FetchRequest.decode was called")
    monkeypatch.setattr(FetchRequest, "decode", refuse)


def test_a_confluent_kafka_v12_fetch_is_decoded_by_hand(monkeypatch):
    """librdkafka's incremental fetch (KIP-227): a session, a forgotten partition, a rack id."""
    frame = _request_frame(12, 41, "rdkafka", max_wait_ms=500, min_bytes=1, max_bytes=52428800,
                           session_id=1234, session_epoch=5,
                           topics=[("orders", [(0, 4, 1500, 4, -1, 1048576), (2, 4, 800, 4, -1, 1048576)])],
                           forgotten=[("orders", [1])], rack_id="eu-1a")
    _refuse_generic_decoding(monkeypatch)
    decoded = frames.decode_request(frame)
    assert isinstance(decoded.request, FetchRequestData)
    assert (decoded.api_version, decoded.correlation_id, decoded.client_id) == (12, 41, "rdkafka")
    assert _values(decoded.request) == (
        -1, 500, 1, 52428800, 0, 1234, 5, "eu-1a", None,
        [("orders", [(0, 4, 1500, 4, -1, 1048576), (2, 4, 800, 4, -1, 1048576)])], [("orders", [1])])


def test_a_kafka_python_v10_fetch_is_decoded_by_hand(monkeypatch):
    request = _struct_request(10, -1, 500, 1, 52428800, 1, 0, -1,
                              [("orders", [(0, 7, 42, -1, -1, 1048576)])], [], "", None)
    request.with_header(correlation_id=8, client_id="kafka-python-3.0.12")
    frame = bytes(request.encode(header=True))
    _refuse_generic_decoding(monkeypatch)
    decoded = frames.decode_request(frame)
    assert isinstance(decoded.request, FetchRequestData)
    assert (decoded.api_version, decoded.correlation_id, decoded.client_id) == (10, 8, "kafka-python-3.0.12")
    assert _values(decoded.request) == (-1, 500, 1, 52428800, 1, 0, -1, "", None,
                                        [("orders", [(0, 7, 42, -1, -1, 1048576)])], [])
