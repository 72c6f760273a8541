"""Fetch responses encoded by hand, for the versions the server serves (v4..v12).

A profile of confluent-kafka consuming from ``python -m kgroup.server --brokers 3`` (issue 28) put
about a fifth of the server's CPU in kafka-python's generic FetchResponse machinery (building the
structs, then its generated encoder), and the records of every partition were copied three times:
joined from the stored batches, copied into the encoder's buffer, copied again into the frame.
Here the answer is a few light objects and the frame is one ``b"".join`` over the header pieces
and the stored batches' own ``head``/``tail`` pieces, so each record byte is copied once.

Written from Kafka's ``FetchResponse.json`` (flexible from v12, KIP-482; the partition's tagged
DivergingEpoch / CurrentLeader / SnapshotId written when set, as kafka-python's TaggedFields
does) and checked byte for byte against kafka-python's codec in tests/server/test_fetch_encoding.py.
Whatever it does not cover (another version, a null where the schema allows none, a value out
of range) makes :func:`encode_fetch_response` return None, and :mod:`kgroup.server.frames` runs
kafka-python's codec on :func:`as_struct`'s struct, which answers or refuses exactly as before.
"""
from __future__ import annotations

import itertools
import struct
from typing import Any, List, Optional, Sequence, Tuple, Union

import attrs
from kafka.protocol.consumer import FetchResponse

from kgroup.server.hand_codec import (
    NotCoveredByHand, array_prefix, distinct_error_codes, null_length, string_bytes, uvarint_bytes,
)

__all__ = ["FIRST_VERSION", "LAST_VERSION", "AbortedTransactionAnswer", "FetchAnswer", "PartitionFetchAnswer",
           "RecordPiece", "TopicFetchAnswer", "as_struct", "encode_fetch_response"]

#: The Fetch versions the server serves (apis/fetch.py): v4 (the first Kafka 4 accepts) to v12
#: (v13 names topics by id, KIP-516).
FIRST_VERSION, LAST_VERSION = 4, 12
_FIRST_FLEXIBLE = 12

#: A piece of a partition's records: a stored batch's patched head or its client bytes.
RecordPiece = Union[bytes, memoryview]

_INT32 = struct.Struct(">i")
_INT64_PAIR = struct.Struct(">qq")
_RESPONSE_HEADER = struct.Struct(">ii")  # frame length, correlation id
_TOP_V7 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
#: partition_index, error_code, high_watermark, last_stable_offset (v4+) [, log_start_offset (v5+)]
_PARTITION_V4 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
#: The tagged structs (v12), each followed by its own empty tagged-field section.
_DIVERGING_EPOCH = struct.Struct(">iqx")  # epoch, end_offset
_CURRENT_LEADER = struct.Struct(">iix")  # leader_id, leader_epoch
_SNAPSHOT_ID = struct.Struct(">qix")  # end_offset, epoch


def _pieces_repr(pieces: Optional[Sequence[RecordPiece]]) -> str:
    return "None" if pieces is None else f"<{sum(map(len, pieces))} bytes in {len(pieces)} pieces>"


@attrs.define(eq=False)
class AbortedTransactionAnswer:
    producer_id: int
    first_offset: int


@attrs.define(eq=False)
class PartitionFetchAnswer:
    """One partition of a Fetch response, with kafka-python's field names; its records are kept as
    the stored batches' pieces (``records`` joins them, for the rare reader that wants bytes)."""

    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    #: AbortedTransactionAnswer (or kafka-python AbortedTransaction) items, or None: a null array.
    aborted_transactions: Optional[List[Any]] = None
    preferred_read_replica: int = -1
    #: None: null records; empty: no records.
    record_pieces: Optional[Sequence[RecordPiece]] = attrs.field(default=(), repr=_pieces_repr)
    #: Tagged (v12): kafka-python EpochEndOffset / LeaderIdAndEpoch / SnapshotId structs or None.
    diverging_epoch: Any = None
    current_leader: Any = None
    snapshot_id: Any = None

    @property
    def records(self) -> Optional[bytes]:
        pieces = self.record_pieces
        return None if pieces is None else b"".join(pieces)

    @records.setter
    def records(self, value: Optional[bytes]) -> None:
        self.record_pieces = None if value is None else (value,)


@attrs.define(eq=False)
class TopicFetchAnswer:
    topic: str
    partitions: List[PartitionFetchAnswer]


@attrs.define(eq=False)
class FetchAnswer:
    """A Fetch response: encoded by :func:`encode_fetch_response`, or turned into kafka-python's
    struct by :func:`as_struct` for what that does not cover."""

    responses: List[TopicFetchAnswer]
    throttle_time_ms: int = 0
    error_code: int = 0
    session_id: int = 0

    def error_codes(self) -> Tuple[int, ...]:
        """Every non-zero error code, in field order, each once (faults.error_codes_of)."""
        partition_codes = (p.error_code for topic in self.responses for p in topic.partitions)
        return distinct_error_codes(itertools.chain((self.error_code,), partition_codes))


def as_struct(response: Any, version: int) -> Any:
    """``response`` as kafka-python's ``FetchResponse`` at ``version`` when it is a
    :class:`FetchAnswer`, else ``response`` unchanged."""
    if type(response) is not FetchAnswer:
        return response
    topic_cls = FetchResponse.FetchableTopicResponse
    partition_cls = topic_cls.PartitionData
    aborted_cls = partition_cls.AbortedTransaction
    topics = []
    for topic in response.responses:
        partitions = []
        for p in topic.partitions:
            aborted = None if p.aborted_transactions is None else [
                aborted_cls(version=version, producer_id=txn.producer_id, first_offset=txn.first_offset)
                for txn in p.aborted_transactions]
            struct_partition = partition_cls(
                version=version, partition_index=p.partition_index, error_code=p.error_code,
                high_watermark=p.high_watermark, last_stable_offset=p.last_stable_offset,
                log_start_offset=p.log_start_offset, aborted_transactions=aborted,
                preferred_read_replica=p.preferred_read_replica, records=p.records)
            struct_partition.diverging_epoch = p.diverging_epoch
            struct_partition.current_leader = p.current_leader
            struct_partition.snapshot_id = p.snapshot_id
            partitions.append(struct_partition)
        topics.append(topic_cls(version=version, topic=topic.topic, partitions=partitions))
    return FetchResponse(version=version, throttle_time_ms=response.throttle_time_ms,
                         error_code=response.error_code, session_id=response.session_id, responses=topics)


# -- encoding -----------------------------------------------------------------------------------

def encode_fetch_response(response: Any, version: int, correlation_id: int) -> Optional[bytes]:
    """The response frame (length prefix, header, body) kafka-python's codec would write for the
    ``FetchResponse`` or :class:`FetchAnswer` ``response`` at ``version``, or None when ``response``
    is something else or this module does not cover it."""
    if type(response) not in _RESPONSE_TYPES or not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    try:
        return _encode(response, version, correlation_id)
    except (NotCoveredByHand, struct.error, AttributeError, TypeError, ValueError):
        return None


_RESPONSE_TYPES = (FetchResponse, FetchAnswer)
_BYTES_TYPES = (bytes, memoryview)


def _record_pieces(partition: Any) -> Optional[Sequence[RecordPiece]]:
    if type(partition) is PartitionFetchAnswer:
        return partition.record_pieces
    records = partition.records  # a kafka-python struct: bytes or None
    if records is None:
        return None
    if not isinstance(records, _BYTES_TYPES):
        raise NotCoveredByHand("records that are not bytes")
    return (records,)


def _encode(response: Any, version: int, correlation_id: int) -> bytes:
    flexible = version >= _FIRST_FLEXIBLE
    partition_struct = _PARTITION_V5 if version >= 5 else _PARTITION_V4
    parts: List[Any] = [b"", b"\x00"] if flexible else [b""]  # frame header; response header v1 tags
    append = parts.append
    extend = parts.extend
    if version >= 7:
        append(_TOP_V7.pack(response.throttle_time_ms, response.error_code, response.session_id))
    else:
        append(_INT32.pack(response.throttle_time_ms))
    topics = response.responses
    append(array_prefix(topics, flexible))
    for topic in topics:
        append(string_bytes(topic.topic, flexible, nullable=False))
        partitions = topic.partitions
        append(array_prefix(partitions, flexible))
        for p in partitions:
            if version >= 5:
                append(partition_struct.pack(p.partition_index, p.error_code, p.high_watermark,
                                             p.last_stable_offset, p.log_start_offset))
            else:
                append(partition_struct.pack(p.partition_index, p.error_code, p.high_watermark,
                                             p.last_stable_offset))
            aborted = p.aborted_transactions
            if aborted is None:
                append(null_length(flexible))
            else:
                append(array_prefix(aborted, flexible))
                for txn in aborted:
                    append(_INT64_PAIR.pack(txn.producer_id, txn.first_offset))
                    if flexible:
                        append(b"\x00")
            if version >= 11:
                append(_INT32.pack(p.preferred_read_replica))
            pieces = _record_pieces(p)
            if pieces is None:
                append(null_length(flexible))
            else:
                size = sum(map(len, pieces))
                append(uvarint_bytes(size + 1) if flexible else _INT32.pack(size))
                extend(pieces)
            if flexible:
                append(_partition_tags(p))
        if flexible:
            append(b"\x00")
    if flexible:
        append(b"\x00")  # NodeEndpoints (tag 0) is v16+: no tag at v12
    body_size = sum(map(len, parts))
    parts[0] = _RESPONSE_HEADER.pack(body_size + 4, correlation_id)
    return b"".join(parts)


def _partition_tags(p: Any) -> bytes:
    """The partition's tagged fields (v12): each struct written when set (kafka-python's default
    for all three is None), in tag order, each with its own empty tagged-field section."""
    diverging, leader, snapshot = p.diverging_epoch, p.current_leader, p.snapshot_id
    if diverging is None and leader is None and snapshot is None:
        return b"\x00"
    tags: List[bytes] = []
    if diverging is not None:
        tags.append(b"\x00\x0d" + _DIVERGING_EPOCH.pack(diverging.epoch, diverging.end_offset))
    if leader is not None:
        tags.append(b"\x01\x09" + _CURRENT_LEADER.pack(leader.leader_id, leader.leader_epoch))
    if snapshot is not None:
        tags.append(b"\x02\x0d" + _SNAPSHOT_ID.pack(snapshot.end_offset, snapshot.epoch))
    return bytes((len(tags),)) + b"".join(tags)
