"""Produce requests decoded and Produce responses encoded by hand, for the versions clients send.

A profile of kafka-python's producer against ``python -m kgroup.server --brokers 3`` (issue 28)
put about a third of the server's CPU per Produce request in kafka-python's generic message
machinery: header parsing, struct objects, the null-field walk and the response encoder.  The
Produce request is the hot path of every producer, so its two ends are written out here from
Kafka's schemas (``ProduceRequest.json`` / ``ProduceResponse.json``, v3..v12; flexible from v9,
KIP-482) and checked byte for byte against kafka-python's codec in
tests/server/test_produce_encoding.py.

Neither end decides anything on its own: whatever it does not cover (another version, a null
where the schema allows none, truncated or malformed bytes, a response built from tuples) makes
it return None and :mod:`kgroup.server.frames` runs kafka-python's generic codec, which then
answers or refuses exactly as before.
"""
from __future__ import annotations

import struct
from typing import Any, List, Optional, Tuple

import attrs
from kafka.protocol.producer import ProduceResponse

from kgroup.server.hand_codec import (
    NotCoveredByHand, RequestFrame, array_prefix, distinct_error_codes, read_array_length, read_length,
    read_string, skip_tagged_fields, string_bytes, uvarint_bytes,
)

__all__ = ["FIRST_VERSION", "LAST_VERSION", "PartitionProduceAnswer", "PartitionProduceData", "ProduceAnswer",
           "RequestFrame",
           "ProduceRequestData", "TopicProduceAnswer", "TopicProduceData", "as_struct",
           "decode_produce_request", "encode_produce_response"]

#: The Produce versions both ends cover: v3 (the first Kafka 4 accepts) to v12 (v13 names
#: topics by id, KIP-516).
FIRST_VERSION, LAST_VERSION = 3, 12
_FIRST_FLEXIBLE = 9

_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_RESPONSE_HEADER = struct.Struct(">ii")  # frame length, correlation id
#: index, error_code, base_offset, log_append_time_ms (v2+) [, log_start_offset (v5+)]
_PARTITION_V3 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
_LEADER_ID_AND_EPOCH = struct.Struct(">ii")


def _records_repr(records: Optional[memoryview]) -> str:
    return "None" if records is None else f"<{len(records)} bytes>"


@attrs.define(eq=False)
class PartitionProduceData:
    """One partition of a Produce request (the attributes kafka-python's struct has).

    ``records`` is a view of the request's bytes, not a copy (a copy of a produced megabyte was a
    fifth of the server's time, issue 28); ``frame`` and ``records_at`` tell where it lies in them,
    so the records are validated in place."""

    index: int
    records: Optional[memoryview] = attrs.field(repr=_records_repr)
    frame: RequestFrame = attrs.field(default=b"", repr=False)
    records_at: int = attrs.field(default=0, repr=False)


@attrs.define(eq=False)
class TopicProduceData:
    """One topic of a Produce request."""

    name: str
    partition_data: List[PartitionProduceData]


@attrs.define(eq=False)
class ProduceRequestData:
    """A decoded Produce request with the field names of kafka-python's ``ProduceRequest``."""

    transactional_id: Optional[str]
    acks: int
    timeout_ms: int
    topic_data: List[TopicProduceData]


# -- decoding -----------------------------------------------------------------------------------

def decode_produce_request(frame: RequestFrame,
                           version: int) -> Optional[Tuple[Optional[str], ProduceRequestData]]:
    """(client id, request) of a Produce request frame body (API key 0, its length prefix removed)
    at ``version``, or None to leave it to kafka-python's codec.  Bytes after the request are
    ignored, as Kafka's ``AbstractRequest.parseRequest`` and kafka-python do."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    try:
        return _decode(frame, version >= _FIRST_FLEXIBLE)
    except (NotCoveredByHand, struct.error, IndexError, ValueError):  # ValueError: UnicodeDecodeError too
        return None


def _decode(frame: RequestFrame, flexible: bool) -> Tuple[Optional[str], ProduceRequestData]:
    # Request header v1 (v3..v8) / v2 (v9+): the client id is a classic nullable string in both.
    client_id, at = read_string(frame, 8, False)
    if flexible:
        at = skip_tagged_fields(frame, at)
    transactional_id, at = read_string(frame, at, flexible)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, at)
    at += _ACKS_TIMEOUT.size
    topic_count, at = read_array_length(frame, at, flexible)
    topics: List[TopicProduceData] = []
    size = len(frame)
    view = memoryview(frame)
    for _ in range(topic_count):
        name, at = read_string(frame, at, flexible)
        if name is None:
            raise NotCoveredByHand("null topic name")
        partition_count, at = read_array_length(frame, at, flexible)
        partitions: List[PartitionProduceData] = []
        for _ in range(partition_count):
            (index,) = _INT32.unpack_from(frame, at)
            at += 4
            length, at = read_length(frame, at, flexible)
            records: Optional[memoryview] = None
            records_at = at
            if length >= 0:
                end = at + length
                if end > size:
                    raise NotCoveredByHand("records past the end of the request")
                records = view[at:end]
                at = end
            elif length != -1:
                raise NotCoveredByHand("negative records length")
            if flexible:
                at = skip_tagged_fields(frame, at)
            partitions.append(PartitionProduceData(index, records, frame, records_at))
        if flexible:
            at = skip_tagged_fields(frame, at)
        topics.append(TopicProduceData(name, partitions))
    if flexible:
        skip_tagged_fields(frame, at)
    return client_id, ProduceRequestData(transactional_id, acks, timeout_ms, topics)


# -- answers -----------------------------------------------------------------------------------

@attrs.define(eq=False)
class PartitionProduceAnswer:
    """One partition of a Produce response, with kafka-python's field names and defaults (built per
    partition on the hot path, where kafka-python's struct costs several times more)."""

    index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: Optional[str] = None
    #: BatchIndexAndErrorMessage structs (v8+); kgroup refuses whole batches, so none so far.
    record_errors: List[Any] = attrs.field(init=False, factory=list)
    #: A LeaderIdAndEpoch struct (tag 0, v10+), or None: not written.
    current_leader: Any = attrs.field(init=False, default=None)


@attrs.define(eq=False)
class TopicProduceAnswer:
    name: str
    partition_responses: List[PartitionProduceAnswer]


@attrs.define(eq=False)
class ProduceAnswer:
    """A Produce response: encoded by :func:`encode_produce_response`, or turned into kafka-python's
    struct by :func:`as_struct` for what that does not cover."""

    responses: List[TopicProduceAnswer]
    throttle_time_ms: int = 0
    #: NodeEndpoint structs (tag 0, v10+), or empty: not written.
    node_endpoints: List[Any] = attrs.field(init=False, factory=list, repr=False)

    def error_codes(self) -> Tuple[int, ...]:
        """Every non-zero partition error code, in field order, each once (faults.error_codes_of)."""
        return distinct_error_codes(p.error_code for topic in self.responses
                                    for p in topic.partition_responses)


def as_struct(response: Any, version: int) -> Any:
    """``response`` as kafka-python's ``ProduceResponse`` at ``version`` when it is a
    :class:`ProduceAnswer`, else ``response`` unchanged."""
    if type(response) is not ProduceAnswer:
        return response
    topic_cls = ProduceResponse.TopicProduceResponse
    partition_cls = topic_cls.PartitionProduceResponse
    topics = []
    for topic in response.responses:
        partitions = []
        for p in topic.partition_responses:
            struct_partition = partition_cls(
                version=version, index=p.index, error_code=p.error_code, base_offset=p.base_offset,
                log_append_time_ms=p.log_append_time_ms, log_start_offset=p.log_start_offset,
                record_errors=p.record_errors, error_message=p.error_message)
            struct_partition.current_leader = p.current_leader
            partitions.append(struct_partition)
        topics.append(topic_cls(version=version, name=topic.name, partition_responses=partitions))
    return ProduceResponse(version=version, throttle_time_ms=response.throttle_time_ms, responses=topics,
                           node_endpoints=response.node_endpoints)


# -- encoding -----------------------------------------------------------------------------------

def encode_produce_response(response: Any, version: int, correlation_id: int) -> Optional[bytes]:
    """The response frame (length prefix, header, body) kafka-python's codec would write for the
    ``ProduceResponse`` or :class:`ProduceAnswer` ``response`` at ``version``, or None when
    ``response`` is something else or this module does not cover it."""
    if type(response) not in _RESPONSE_TYPES or not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    try:
        return _encode(response, version, correlation_id)
    except (NotCoveredByHand, struct.error, AttributeError, TypeError):
        return None


_RESPONSE_TYPES = (ProduceResponse, ProduceAnswer)


def _encode(response: Any, version: int, correlation_id: int) -> bytes:
    flexible = version >= _FIRST_FLEXIBLE
    partition_struct = _PARTITION_V5 if version >= 5 else _PARTITION_V3
    parts: List[bytes] = [b"", b"\x00"] if flexible else [b""]  # frame header; response header v1 tags
    append = parts.append
    topics = response.responses
    append(array_prefix(topics, flexible))
    for topic in topics:
        append(string_bytes(topic.name, flexible, nullable=False))
        partitions = topic.partition_responses
        append(array_prefix(partitions, flexible))
        for p in partitions:
            if version >= 5:
                append(partition_struct.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                                             p.log_start_offset))
            else:
                append(partition_struct.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms))
            if version >= 8:
                record_errors = p.record_errors
                append(array_prefix(record_errors, flexible))
                for record_error in record_errors:
                    append(_INT32.pack(record_error.batch_index))
                    append(string_bytes(record_error.batch_index_error_message, flexible, nullable=True))
                    if flexible:
                        append(b"\x00")
                append(string_bytes(p.error_message, flexible, nullable=True))
            if flexible:
                # Tag 0 (v10+): CurrentLeader, written when it differs from its default (None),
                # as kafka-python's TaggedFields does; the struct ends with its own empty tags.
                leader = p.current_leader if version >= 10 else None
                if leader is None:
                    append(b"\x00")
                else:
                    append(b"\x01\x00\x09")  # one tag, tag 0, 9 bytes
                    append(_LEADER_ID_AND_EPOCH.pack(leader.leader_id, leader.leader_epoch))
                    append(b"\x00")
        if flexible:
            append(b"\x00")
    append(_INT32.pack(response.throttle_time_ms))
    if flexible:
        endpoints = response.node_endpoints if version >= 10 else []
        if endpoints is None:
            raise NotCoveredByHand("null node endpoints")
        if not endpoints:  # the default: not written
            append(b"\x00")
        else:
            encoded = [uvarint_bytes(len(endpoints) + 1)]
            for node in endpoints:
                encoded.append(_INT32.pack(node.node_id))
                encoded.append(string_bytes(node.host, True, nullable=False))
                encoded.append(_INT32.pack(node.port))
                encoded.append(string_bytes(node.rack, True, nullable=True))
                encoded.append(b"\x00")
            value = b"".join(encoded)
            append(b"\x01\x00" + uvarint_bytes(len(value)) + value)
    body_size = sum(map(len, parts))
    parts[0] = _RESPONSE_HEADER.pack(body_size + 4, correlation_id)
    return b"".join(parts)
