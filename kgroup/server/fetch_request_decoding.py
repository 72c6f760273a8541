"""Fetch requests decoded by hand, for the versions the server serves (v4..v12).

Two py-spy profiles of ``python -m kgroup.server --brokers 3`` under clients consuming 1 KB
records (issue 28) put 11 % (720 busy samples) and 23 % (171) of the server's busy samples in
kafka-python's generic FetchRequest decoding: the header parsed through a BytesIO, a struct object
per topic and partition, then :func:`kgroup.server.frames._null_field`'s walk of the result.
Consumers send many small Fetch requests (confluent-kafka v11/v12 with sessions, kafka-python
v4..v10ish), so this is the consume path's request end, as :mod:`kgroup.server.fetch_encoding` is
its answer end.

Written from Kafka's ``FetchRequest.json`` (flexible from v12, KIP-482; the request-level tagged
ClusterId is tag 0 from v12, ReplicaState's tag 1 only from v15, so at v12 every other tag is
unknown and skipped) and checked field by field against kafka-python's codec in
tests/server/test_fetch_request_decoding.py.  It decides nothing on its own: whatever is unusual
(a null, a negative length, a varint too long, bytes running out, a tagged ClusterId of another
size than its tag says) makes :func:`decode_fetch_request` return None and
:mod:`kgroup.server.frames` runs kafka-python's codec, which answers or refuses as it always did.
"""
from __future__ import annotations

import struct
from typing import List, Optional, Tuple

import attrs

from kgroup.server.hand_codec import (
    NotCoveredByHand, RequestFrame, read_array_length, read_string, read_uvarint, skip_tagged_fields,
)

__all__ = ["FIRST_VERSION", "LAST_VERSION", "FetchPartitionData", "FetchRequestData", "FetchTopicData",
           "ForgottenTopicData", "decode_fetch_request"]

#: The Fetch versions the server serves (apis/fetch.py): v4 (the first Kafka 4 accepts) to v12
#: (v13 names topics by id, KIP-516).
FIRST_VERSION, LAST_VERSION = 4, 12
_FIRST_FLEXIBLE = 12
_CLUSTER_ID_TAG = 0

#: replica_id, max_wait_ms, min_bytes, max_bytes (v3+), isolation_level (v4+)
_TOP_V4 = struct.Struct(">iiiib")
#: ... then session_id, session_epoch (v7+, KIP-227)
_TOP_V7 = struct.Struct(">iiiibii")
#: partition, fetch_offset, partition_max_bytes
_PARTITION_V4 = struct.Struct(">iqi")
#: partition, fetch_offset, log_start_offset (v5+), partition_max_bytes
_PARTITION_V5 = struct.Struct(">iqqi")
#: partition, current_leader_epoch (v9+, KIP-320), fetch_offset, log_start_offset, partition_max_bytes
_PARTITION_V9 = struct.Struct(">iiqqi")
#: partition, current_leader_epoch, fetch_offset, last_fetched_epoch (v12+, KIP-595), log_start_offset,
#: partition_max_bytes
_PARTITION_V12 = struct.Struct(">iiqiqi")


# Field names and, for fields a version lacks, defaults as kafka-python's FetchRequest has them.

@attrs.define(eq=False)
class FetchPartitionData:
    """One partition of a Fetch request."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1


@attrs.define(eq=False)
class FetchTopicData:
    """One topic of a Fetch request."""

    topic: str
    partitions: List[FetchPartitionData]


@attrs.define(eq=False)
class ForgottenTopicData:
    """Partitions an incremental fetch (v7+, KIP-227) removes from its session."""

    topic: str
    partitions: List[int]


@attrs.define(eq=False)
class FetchRequestData:
    """A decoded Fetch request with the field names of kafka-python's ``FetchRequest``."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    topics: List[FetchTopicData]
    session_id: int = 0
    session_epoch: int = -1
    forgotten_topics_data: List[ForgottenTopicData] = attrs.field(factory=list)
    rack_id: str = ""
    #: Tagged (v12+): the cluster id the client knows, or None.
    cluster_id: Optional[str] = None


def decode_fetch_request(frame: RequestFrame,
                         version: int) -> Optional[Tuple[Optional[str], FetchRequestData]]:
    """(client id, request) of a Fetch request frame body (API key 1, its length prefix removed) at
    ``version``, or None to leave it to kafka-python's codec.  Bytes after the request are ignored,
    as Kafka's ``AbstractRequest.parseRequest`` and kafka-python do."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    try:
        return _decode(frame, version)
    except (NotCoveredByHand, struct.error, IndexError, ValueError):  # ValueError: UnicodeDecodeError too
        return None


def _decode(frame: RequestFrame, version: int) -> Tuple[Optional[str], FetchRequestData]:
    flexible = version >= _FIRST_FLEXIBLE
    # Request header v1 (v4..v11) / v2 (v12): the client id is a classic nullable string in both.
    client_id, at = read_string(frame, 8, False)
    if flexible:
        at = skip_tagged_fields(frame, at)
    if version >= 7:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch = (
            _TOP_V7.unpack_from(frame, at))
        at += _TOP_V7.size
    else:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = _TOP_V4.unpack_from(frame, at)
        at += _TOP_V4.size
        session_id, session_epoch = 0, -1
    topics, at = _read_topics(frame, at, version, flexible)
    request = FetchRequestData(replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, topics,
                               session_id, session_epoch)
    if version >= 7:
        request.forgotten_topics_data, at = _read_forgotten_topics(frame, at, flexible)
    if version >= 11:
        rack_id, at = read_string(frame, at, flexible)
        if rack_id is None:
            raise NotCoveredByHand("null rack id")
        request.rack_id = rack_id
    if flexible:
        request.cluster_id = _read_cluster_id_tag(frame, at)
    return client_id, request


def _read_topic_head(frame: RequestFrame, at: int, flexible: bool) -> Tuple[str, int, int]:
    """A topic's (or forgotten topic's) name and partition count, both non-nullable."""
    name, at = read_string(frame, at, flexible)
    if name is None:
        raise NotCoveredByHand("null topic name")
    partition_count, at = read_array_length(frame, at, flexible)
    return name, partition_count, at


def _read_topics(frame: RequestFrame, at: int, version: int,
                 flexible: bool) -> Tuple[List[FetchTopicData], int]:
    topic_count, at = read_array_length(frame, at, flexible)
    topics: List[FetchTopicData] = []
    for _ in range(topic_count):
        name, partition_count, at = _read_topic_head(frame, at, flexible)
        partitions: List[FetchPartitionData] = []
        for _ in range(partition_count):
            if version >= 12:
                index, leader_epoch, offset, last_fetched_epoch, log_start_offset, max_bytes = (
                    _PARTITION_V12.unpack_from(frame, at))
                at += _PARTITION_V12.size
                partitions.append(FetchPartitionData(index, offset, max_bytes, leader_epoch, log_start_offset,
                                                     last_fetched_epoch))
                at = skip_tagged_fields(frame, at)  # ReplicaDirectoryId / HighWatermark: v17+ only
            elif version >= 9:
                index, leader_epoch, offset, log_start_offset, max_bytes = (
                    _PARTITION_V9.unpack_from(frame, at))
                at += _PARTITION_V9.size
                partitions.append(FetchPartitionData(index, offset, max_bytes, leader_epoch,
                                                     log_start_offset))
            elif version >= 5:
                index, offset, log_start_offset, max_bytes = _PARTITION_V5.unpack_from(frame, at)
                at += _PARTITION_V5.size
                partitions.append(FetchPartitionData(index, offset, max_bytes, -1, log_start_offset))
            else:
                index, offset, max_bytes = _PARTITION_V4.unpack_from(frame, at)
                at += _PARTITION_V4.size
                partitions.append(FetchPartitionData(index, offset, max_bytes))
        if flexible:
            at = skip_tagged_fields(frame, at)
        topics.append(FetchTopicData(name, partitions))
    return topics, at


def _read_forgotten_topics(frame: RequestFrame, at: int,
                           flexible: bool) -> Tuple[List[ForgottenTopicData], int]:
    count, at = read_array_length(frame, at, flexible)
    forgotten: List[ForgottenTopicData] = []
    for _ in range(count):
        name, partition_count, at = _read_topic_head(frame, at, flexible)
        end = at + 4 * partition_count
        if end > len(frame):
            raise NotCoveredByHand("forgotten partitions past the end of the request")
        indexes = list(struct.unpack_from(f">{partition_count}i", frame, at))
        forgotten.append(ForgottenTopicData(name, indexes))
        at = end
        if flexible:
            at = skip_tagged_fields(frame, at)
    return forgotten, at


def _read_cluster_id_tag(frame: RequestFrame, at: int) -> Optional[str]:
    """The request's tagged fields (v12): ClusterId (tag 0, a compact nullable string) when present,
    the others skipped.  A ClusterId whose bytes do not fill its tag's size exactly is not covered:
    kafka-python reads the string and ignores the size, Kafka reads the size."""
    count, at = read_uvarint(frame, at)
    cluster_id: Optional[str] = None
    for _ in range(count):
        tag, at = read_uvarint(frame, at)
        size, at = read_uvarint(frame, at)
        end = at + size
        if end > len(frame):
            raise NotCoveredByHand("tagged field past the end of the request")
        if tag == _CLUSTER_ID_TAG:
            cluster_id, value_end = read_string(frame, at, True)
            if value_end != end:
                raise NotCoveredByHand("cluster id of another size than its tag")
        at = end
    return cluster_id
