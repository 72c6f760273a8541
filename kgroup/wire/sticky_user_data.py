"""Java ``StickyAssignor`` user data (v0: previous assignment; v1: + generation).

Layout (big-endian, Kafka's non-flexible encoding)::

    int32 topic count
      int16 topic name length, utf-8 bytes
      int32 partition count, int32 partition ids
    int32 generation            (v1 only)

We always encode v1, as Java and kafka-python do.  Decoding accepts both:
the bytes left after the topic array tell the version (4 -> v1, 0 -> v0).
kafka-python 3.0's ``StickyAssignorUserData.encode()`` prefixes an int16
version header by default; Java does not.  We encode Java's headerless
bytes and, when those do not parse, retry after a 2-byte header of 0 or 1.
Peer bytes are untrusted, so every length is checked against what remains
before anything is allocated.
"""
from __future__ import annotations

import struct
from typing import Iterable, Optional

from kgroup.errors import InvalidProtocolMetadata
from kgroup.values import TopicPartition

__all__ = ["encode_sticky_user_data", "decode_sticky_user_data"]

_WHAT = "sticky user data"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation_id: int) -> bytes:
    """Encode ``partitions`` (grouped by topic, first-seen order) and ``generation_id`` as v1."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = [_I32.pack(len(by_topic))]
    for topic, ids in by_topic.items():
        name = topic.encode("utf-8")
        out.append(_I16.pack(len(name)))
        out.append(name)
        out.append(_I32.pack(len(ids)))
        out.append(struct.pack(f">{len(ids)}i", *ids))
    out.append(_I32.pack(generation_id))
    return b"".join(out)


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], Optional[int]]:
    """Decode v1 or v0 user data into (partitions, generation id or ``None`` for v0).

    Raises :class:`~kgroup.errors.InvalidProtocolMetadata` on anything malformed.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidProtocolMetadata(_WHAT, f"expected bytes, got {type(data).__name__}")
    try:
        return _decode(memoryview(data))
    except InvalidProtocolMetadata as headerless_error:
        if len(data) >= 2 and data[0] == 0 and data[1] in (0, 1):
            try:
                partitions, generation_id = _decode(memoryview(data)[2:])
            except InvalidProtocolMetadata:
                raise headerless_error from None  # report the layout Java peers send
            if (generation_id is None) == (data[1] == 0):
                return partitions, generation_id
        raise


def _decode(view: memoryview) -> tuple[list[TopicPartition], Optional[int]]:
    end = len(view)
    pos = 0

    def need(count: int, field: str) -> None:
        if end - pos < count:
            raise InvalidProtocolMetadata(_WHAT, f"truncated {field} at byte {pos}")

    need(4, "topic count")
    (topic_count,) = _I32.unpack_from(view, pos)
    pos += 4
    # Each topic entry takes at least 6 bytes; a larger count is a lie.
    if topic_count < 0 or topic_count * 6 > end - pos:
        raise InvalidProtocolMetadata(_WHAT, f"bad topic count {topic_count}")
    partitions: list[TopicPartition] = []
    for _ in range(topic_count):
        need(2, "topic name length")
        (name_len,) = _I16.unpack_from(view, pos)
        pos += 2
        if name_len < 0:
            raise InvalidProtocolMetadata(_WHAT, "null topic name")
        need(name_len, "topic name")
        try:
            topic = bytes(view[pos:pos + name_len]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidProtocolMetadata(_WHAT, f"topic name is not utf-8 ({exc.reason})") from None
        pos += name_len
        need(4, "partition count")
        (count,) = _I32.unpack_from(view, pos)
        pos += 4
        if count < 0 or count * 4 > end - pos:
            raise InvalidProtocolMetadata(_WHAT, f"bad partition count {count} for topic {topic!r}")
        ids = struct.unpack_from(f">{count}i", view, pos)
        if ids and min(ids) < 0:
            # A partition id is never negative; accepting one would hand the
            # assignor a claim on a partition that cannot exist.
            raise InvalidProtocolMetadata(_WHAT, f"negative partition id {min(ids)} for topic {topic!r}")
        pos += 4 * count
        partitions.extend(TopicPartition(topic, p) for p in ids)
    left = end - pos
    if left == 0:
        return partitions, None
    if left == 4:
        return partitions, _I32.unpack_from(view, pos)[0]
    raise InvalidProtocolMetadata(_WHAT, f"{left} unexpected trailing bytes")
