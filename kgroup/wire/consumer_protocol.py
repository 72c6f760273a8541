"""Kafka's ConsumerProtocol subscription and assignment bytes (v0-v3).

Layout (big endian, non-flexible, from ConsumerProtocolSubscription.json and
ConsumerProtocolAssignment.json):

* subscription: int16 version, [string] topics, nullable bytes user_data,
  v1+ [(string topic, [int32] partitions)] owned_partitions,
  v2+ int32 generation_id, v3+ nullable string rack_id.
* assignment: int16 version, [(string topic, [int32] partitions)],
  nullable bytes user_data.

Partitions are grouped by topic in order of first appearance (Java groups
them through a hash map, so its topic order is not a contract; readers,
Java's included, accept any order).

Decoding is untrusted input.  A version newer than 3 is read by its known
v3 prefix and the rest ignored, as Java's ``ConsumerProtocol`` does for
forward compatibility; for versions 0-3 trailing bytes are an error,
because no valid writer produces them.  Every failure raises
:class:`~kgroup.errors.InvalidProtocolMetadata`.

Encoding is hand-written rather than through kafka-python's schema structs
so that the decoder can bound every length against the remaining buffer
before allocating; the tests pin both against hand-derived golden bytes and
against kafka-python's own ``ConsumerProtocolSubscription`` / ``Assignment``.
"""
from __future__ import annotations

import struct
from typing import Iterable, Optional

from kgroup.errors import ConfigError, InvalidProtocolMetadata
from kgroup.values import NO_GENERATION, Assignment, Subscription, TopicPartition

__all__ = [
    "LATEST_VERSION",
    "encode_subscription",
    "decode_subscription",
    "encode_assignment",
    "decode_assignment",
    "subscription_version",
]

#: Highest ConsumerProtocol version kgroup writes and fully understands.
LATEST_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_INT32_MAX = 2**31 - 1


# ---------------------------------------------------------------- encoding


def _check_version(version: int) -> None:
    if not isinstance(version, int) or not 0 <= version <= LATEST_VERSION:
        raise ConfigError(f"ConsumerProtocol version must be 0..{LATEST_VERSION}, got {version!r}")


def _string(value: str, out: list) -> None:
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ConfigError(f"string too long for the protocol ({len(raw)} bytes): {value[:40]!r}...")
    out.append(_I16.pack(len(raw)))
    out.append(raw)


def _nullable_string(value: Optional[str], out: list) -> None:
    if value is None:
        out.append(_I16.pack(-1))
    else:
        _string(value, out)


def _nullable_bytes(value: Optional[bytes], out: list) -> None:
    if value is None:
        out.append(_I32.pack(-1))
    else:
        out.append(_I32.pack(len(value)))
        out.append(bytes(value))


def _topic_partitions(partitions: Iterable[TopicPartition], out: list) -> None:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out.append(_I32.pack(len(by_topic)))
    for topic, numbers in by_topic.items():
        _string(topic, out)
        out.append(_I32.pack(len(numbers)))
        out.append(struct.pack(f">{len(numbers)}i", *numbers))


def encode_subscription(subscription: Subscription, version: int = LATEST_VERSION) -> bytes:
    """Serialize ``subscription`` as ConsumerProtocolSubscription ``version``.

    Fields the version does not carry (owned partitions before v1, generation
    before v2, rack before v3) are dropped, as Java drops them.
    ``group_instance_id`` is not part of these bytes (JoinGroup carries it).
    """
    _check_version(version)
    out: list = [_I16.pack(version), _I32.pack(len(subscription.topics))]
    for topic in subscription.topics:
        _string(topic, out)
    _nullable_bytes(subscription.user_data, out)
    if version >= 1:
        _topic_partitions(subscription.owned_partitions, out)
    if version >= 2:
        out.append(_I32.pack(subscription.generation_id))
    if version >= 3:
        _nullable_string(subscription.rack_id, out)
    return b"".join(out)


def encode_assignment(assignment: Assignment, version: int = LATEST_VERSION) -> bytes:
    """Serialize ``assignment`` as ConsumerProtocolAssignment ``version``.

    v0-v3 share one layout; only the version header differs.
    """
    _check_version(version)
    out: list = [_I16.pack(version)]
    _topic_partitions(assignment.partitions, out)
    _nullable_bytes(assignment.user_data, out)
    return b"".join(out)


# ---------------------------------------------------------------- decoding


class _Reader:
    """Bounds-checked cursor: every read checks the bytes left first."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidProtocolMetadata(what, f"expected bytes, got {type(data).__name__}")
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def fail(self, reason: str) -> InvalidProtocolMetadata:
        return InvalidProtocolMetadata(self.what, f"{reason} (at byte {self.pos} of {len(self.data)})")

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _take(self, size: int, field: str) -> bytes:
        if size > self.remaining():
            raise self.fail(f"truncated {field}: needs {size} bytes, {self.remaining()} left")
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def int16(self, field: str) -> int:
        return _I16.unpack(self._take(2, field))[0]

    def int32(self, field: str) -> int:
        return _I32.unpack(self._take(4, field))[0]

    def array_length(self, field: str, min_item_size: int) -> int:
        count = self.int32(f"{field} length")
        if count < 0:
            raise self.fail(f"negative {field} length {count}")
        # Bound the count by what the buffer could hold so a forged length
        # cannot make us allocate or loop far beyond the input size.
        if count * min_item_size > self.remaining():
            raise self.fail(f"{field} length {count} exceeds the {self.remaining()} bytes left")
        return count

    def string(self, field: str) -> str:
        size = self.int16(f"{field} length")
        if size < 0:
            raise self.fail(f"invalid {field} length {size}")
        return self._utf8(size, field)

    def nullable_string(self, field: str) -> Optional[str]:
        size = self.int16(f"{field} length")
        if size == -1:
            return None
        if size < 0:
            raise self.fail(f"invalid {field} length {size}")
        return self._utf8(size, field)

    def _utf8(self, size: int, field: str) -> str:
        raw = self._take(size, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"{field} is not valid UTF-8 ({exc.reason})") from None

    def nullable_bytes(self, field: str) -> Optional[bytes]:
        size = self.int32(f"{field} length")
        if size == -1:
            return None
        if size < 0:
            raise self.fail(f"invalid {field} length {size}")
        return self._take(size, field)

    def topic_partitions(self, field: str) -> list[TopicPartition]:
        result: list[TopicPartition] = []
        # A topic entry is at least a string length (2) and an array length (4).
        for _ in range(self.array_length(field, 6)):
            topic = self.string(f"{field} topic")
            count = self.array_length(f"{field} partitions of {topic!r}", 4)
            numbers = struct.unpack(f">{count}i", self._take(4 * count, f"{field} partitions"))
            for number in numbers:
                if number < 0:
                    raise self.fail(f"negative partition {number} in {field} of topic {topic!r}")
            result.extend(TopicPartition(topic, number) for number in numbers)
        return result

    def version(self) -> int:
        version = self.int16("version")
        if version < 0:
            raise self.fail(f"negative version {version}")
        return version

    def finish(self, version: int) -> None:
        if version <= LATEST_VERSION and self.remaining():
            raise self.fail(f"{self.remaining()} unexpected trailing bytes for version {version}")


def subscription_version(data: bytes) -> int:
    """The version header of a subscription blob (validated, not clamped)."""
    return _Reader(data, "subscription").version()


def decode_subscription(data: bytes, group_instance_id: Optional[str] = None) -> Subscription:
    """Parse ConsumerProtocolSubscription bytes received from a peer.

    ``group_instance_id`` comes from the JoinGroup member entry, not from
    these bytes, and is copied into the result.  Older versions get the
    defaults for the fields they lack (no owned partitions, generation -1,
    no rack).
    """
    reader = _Reader(data, "subscription")
    version = reader.version()
    topics = [reader.string("topic") for _ in range(reader.array_length("topics", 2))]
    user_data = reader.nullable_bytes("user data")
    owned: list[TopicPartition] = []
    generation_id = NO_GENERATION
    rack_id = None
    if version >= 1:
        owned = reader.topic_partitions("owned partitions")
    if version >= 2:
        generation_id = reader.int32("generation id")
    if version >= 3:
        rack_id = reader.nullable_string("rack id")
    reader.finish(version)
    return Subscription(
        topics=topics,
        owned_partitions=owned,
        generation_id=generation_id,
        group_instance_id=group_instance_id,
        rack_id=rack_id,
        user_data=user_data,
    )


def decode_assignment(data: bytes) -> Assignment:
    """Parse ConsumerProtocolAssignment bytes.

    Empty bytes are an empty assignment: the coordinator sends them to a
    member the leader left out of its SyncGroup.
    """
    reader = _Reader(data, "assignment")
    if not reader.data:
        return Assignment()
    version = reader.version()
    partitions = reader.topic_partitions("assigned partitions")
    user_data = reader.nullable_bytes("user data")
    reader.finish(version)
    return Assignment(partitions=partitions, user_data=user_data)
