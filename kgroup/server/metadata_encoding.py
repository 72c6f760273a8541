"""The Metadata response (API key 3, v0-v12) encoded by hand, a topic's partition entries from bytes
built once (issue 23: the first Metadata of a 10,000-partition topic took 155-168 ms).

kafka-python's generic encoder walks a struct per partition (20-70 ms for 10,000 of them) and the
structs themselves cost allocations that wake the garbage collector.  Here a partition entry is
packed straight into bytes with one ``struct.pack`` (its replica and ISR arrays included), a topic's
entries are kept as those bytes by :class:`EncodedPartitions`, and a response is the join of them
with the few brokers and topic headers encoded around it.  The output is byte for byte what
kafka-python's encoder writes for the same response (tests/server/test_metadata_encoding.py compares
both at every version); the layout is Kafka's MetadataResponse.json (clients/src/main/resources/
common/message): flexible from v9 (compact arrays and strings, an empty tagged-field section after
every struct), leader epoch from v7, offline replicas from v5, authorized operations from v8.
"""
from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union, overload

from kafka.protocol.metadata import MetadataResponse

from kgroup.core.error_codes import ErrorCode
from kgroup.server.hand_codec import null_length, string_bytes, uvarint_bytes

__all__ = [
    "EncodedPartitions", "MAX_ENCODED_VERSION", "PARTITION_LAYOUTS", "encode_metadata_frame",
    "encode_partition_entries",
    "partition_layout",
]

#: How many partition-entry layouts the served versions have (see :func:`partition_layout`).
PARTITION_LAYOUTS = 4
#: The newest Metadata version encoded here (what kgroup serves); newer ones go to kafka-python.
MAX_ENCODED_VERSION = 12
_PARTITION_ENTRY = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
_ZERO_UUID_BYTES = bytes(16)
#: kafka-python's bitfield default (bit 31 alone: Kafka's -2147483648, "not requested").
_NOT_REQUESTED_BITS = 0x80000000


def partition_layout(version: int) -> int:
    """Which of the four partition-entry layouts a Metadata version uses: 0 (v0-v4), 1 (v5-v6,
    offline replicas), 2 (v7-v8, leader epoch) or 3 (v9+, flexible)."""
    if version >= 9:
        return 3
    if version >= 7:
        return 2
    if version >= 5:
        return 1
    return 0


_PACKERS: Dict[Tuple[int, int, int, int], Any] = {}


def _packer(layout: int, replicas: int, isr: int, offline: int) -> Any:
    """One ``struct.Struct`` for a whole entry of this shape: error, index, leader, [epoch], then
    each array as its length and its int32s ([offline replicas]; the empty tag section at v9+)."""
    key = (layout, replicas, isr, offline)
    packer = _PACKERS.get(key)
    if packer is None:
        if layout == 3 and max(replicas, isr, offline) >= 126:
            raise ValueError("a compact array this long needs a multi-byte length")  # caller packs it by hand
        size = "B" if layout == 3 else "i"
        arrays = [replicas, isr] + ([offline] if layout >= 1 else [])
        fmt = ">hii" + ("i" if layout >= 2 else "") + "".join(size + "i" * n for n in arrays)
        packer = _PACKERS[key] = struct.Struct(fmt + ("B" if layout == 3 else ""))
    return packer


def _array_prefix(layout: int, count: int) -> bytes:
    return uvarint_bytes(count + 1) if layout == 3 else struct.pack(">i", count)


def _int32_array(layout: int, items: Optional[Iterable[int]]) -> bytes:
    if items is None:
        return null_length(layout == 3)
    values = list(items)
    return _array_prefix(layout, len(values)) + struct.pack(f">{len(values)}i", *values)


def _entry_by_hand(layout: int, error_code: int, index: int, leader: int, epoch: int,
                   replicas: Optional[Iterable[int]], isr: Optional[Iterable[int]],
                   offline: Optional[Iterable[int]]) -> bytes:
    """An entry whatever its shape (null or long arrays): the slow path of :func:`_entry`."""
    head = struct.pack(">hiii", error_code, index, leader, epoch) if layout >= 2 \
        else struct.pack(">hii", error_code, index, leader)
    body = _int32_array(layout, replicas) + _int32_array(layout, isr)
    if layout >= 1:
        body += _int32_array(layout, offline)
    return head + body + (b"\x00" if layout == 3 else b"")


def _entry(layout: int, error_code: int, index: int, leader: int, epoch: int,
           replicas: Any, isr: Any, offline: Any) -> bytes:
    if replicas is None or isr is None or offline is None:
        return _entry_by_hand(layout, error_code, index, leader, epoch, replicas, isr, offline)
    try:
        packer = _packer(layout, len(replicas), len(isr), len(offline))
    except ValueError:
        return _entry_by_hand(layout, error_code, index, leader, epoch, replicas, isr, offline)
    extra = 1 if layout == 3 else 0  # a compact array's length is its count + 1
    if layout == 0:
        return packer.pack(error_code, index, leader, len(replicas), *replicas, len(isr), *isr)
    if layout == 1:
        return packer.pack(error_code, index, leader, len(replicas), *replicas, len(isr), *isr,
                           len(offline), *offline)
    if layout == 2:
        return packer.pack(error_code, index, leader, epoch, len(replicas), *replicas, len(isr), *isr,
                           len(offline), *offline)
    return packer.pack(error_code, index, leader, epoch, len(replicas) + extra, *replicas, len(isr) + extra,
                       *isr, len(offline) + extra, *offline, 0)


def encode_partition_entries(layout: int, indexes: Sequence, leaders: Sequence, epochs: Sequence,
                             replicas: Sequence, isrs: Sequence, live: Union[set, frozenset]) -> List[bytes]:
    """Each partition's Metadata entry, packed: leaderless ones answer LEADER_NOT_AVAILABLE with
    leader -1 (KafkaApis / MetadataCache.partitionMetadata), replicas not in ``live`` are offline.

    One pass, one ``pack`` call an entry (about 1 us), nothing the garbage collector tracks kept."""
    out: List[bytes] = []
    append = out.append
    no_leader = int(ErrorCode.LEADER_NOT_AVAILABLE)
    every_live = live.issuperset
    compact = 1 if layout == 3 else 0  # a compact array's length is its count + 1
    packers: Dict[Tuple[int, int, int], Any] = {}
    for index, leader, epoch, assigned, isr in zip(indexes, leaders, epochs, replicas, isrs):
        offline = () if every_live(assigned) else [b for b in assigned if b not in live]
        code, leader_id = (0, leader) if leader is not None else (no_leader, -1)
        shape = (len(assigned), len(isr), len(offline))
        pack = packers.get(shape)
        if pack is None:
            try:
                pack = packers[shape] = _packer(layout, *shape).pack
            except ValueError:  # a compact array of 126 or more: its length takes several bytes
                append(_entry_by_hand(layout, code, index, leader_id, epoch, assigned, isr, offline))
                continue
        if layout == 3:
            append(pack(code, index, leader_id, epoch, shape[0] + compact, *assigned, shape[1] + compact,
                        *isr, shape[2] + compact, *offline, 0))
        elif layout == 2:
            append(pack(code, index, leader_id, epoch, shape[0], *assigned, shape[1], *isr, shape[2],
                        *offline))
        elif layout == 1:
            append(pack(code, index, leader_id, shape[0], *assigned, shape[1], *isr, shape[2], *offline))
        else:
            append(pack(code, index, leader_id, shape[0], *assigned, shape[1], *isr))
    return out


def _entry_of_struct(layout: int, e: Any) -> bytes:
    epoch = e.leader_epoch if layout >= 2 else 0
    offline = e.offline_replicas if layout >= 1 else ()
    return _entry(layout, e.error_code, e.partition_index, e.leader_id, epoch, e.replica_nodes, e.isr_nodes,
                  offline)


def _decode_int32_array(layout: int, data: bytes, pos: int) -> Tuple[Optional[List[int]], int]:
    if layout == 3:
        count, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            count |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        count -= 1
    else:
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
    if count < 0:
        return None, pos
    return list(struct.unpack_from(f">{count}i", data, pos)), pos + 4 * count


def _decode_entries(version: int, layout: int, data: bytes, count: int) -> List[Any]:
    """The partition entry structs ``data`` (entries without the array's length) encodes."""
    entries = []
    pos = 0
    for _ in range(count):
        entry = _PARTITION_ENTRY.__new__(_PARTITION_ENTRY)
        entry._version = version
        entry.tags = None
        entry.unknown_tags = None
        if layout >= 2:
            entry.error_code, entry.partition_index, entry.leader_id, entry.leader_epoch = \
                struct.unpack_from(">hiii", data, pos)
            pos += 14
        else:
            entry.error_code, entry.partition_index, entry.leader_id = struct.unpack_from(">hii", data, pos)
            entry.leader_epoch = -1  # the schema's default where the version has no epoch
            pos += 10
        entry.replica_nodes, pos = _decode_int32_array(layout, data, pos)
        entry.isr_nodes, pos = _decode_int32_array(layout, data, pos)
        if layout >= 1:
            entry.offline_replicas, pos = _decode_int32_array(layout, data, pos)
        else:
            entry.offline_replicas = []
        if layout == 3:
            pos += 1  # the empty tagged-field section
        entries.append(entry)
    if pos != len(data):
        raise ValueError(f"partition entries: {len(data) - pos} bytes left over after {count} entries")
    return entries


class EncodedPartitions(Sequence):
    """A topic's partition entries as their encoded bytes for one Metadata version.

    It reads as the list of entry structs it stands for (decoded from the bytes on the first read,
    which only tests and kafka-python's own encoder do), so a response holding it is an ordinary
    MetadataResponse; :func:`encode_metadata_frame` copies the bytes."""

    __slots__ = ("version", "encoded", "error_codes", "_count", "_entries")

    def __init__(self, version: int, entries: List[bytes], error_codes: Tuple[int, ...]) -> None:
        self.version = version
        #: The entries, joined (without the array's length prefix).
        self.encoded = b"".join(entries)
        #: The non-zero partition error codes, in partition order, each once (the request trace's).
        self.error_codes = error_codes
        self._count = len(entries)
        self._entries: Optional[List[Any]] = None

    def _structs(self) -> List[Any]:
        if self._entries is None:
            self._entries = _decode_entries(self.version, partition_layout(self.version), self.encoded,
                                            self._count)
        return self._entries

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> List[Any]: ...

    def __getitem__(self, index: Union[int, slice]) -> Any:
        return self._structs()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._structs())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EncodedPartitions):
            return (self.version, self._count, self.encoded) == (other.version, other._count, other.encoded)
        if isinstance(other, (list, tuple)):
            return self._structs() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like the list it stands for

    def __repr__(self) -> str:
        return repr(self._structs())


# -- the response ----------------------------------------------------------------------------------

def _bits(value: Optional[Iterable[int]]) -> bytes:
    """kafka-python's bitfield: the set of bits that are on, None for bit 31 alone."""
    if value is None:
        return struct.pack(">I", _NOT_REQUESTED_BITS)
    field = 0
    for bit in value:
        field |= 1 << bit
    return struct.pack(">I", field)


def _uuid(value: Any) -> bytes:
    if value is None:
        return _ZERO_UUID_BYTES
    return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(value).bytes


def _partitions(version: int, layout: int, partitions: Any) -> bytes:
    if partitions is None:
        return null_length(layout == 3)
    if isinstance(partitions, EncodedPartitions) and partition_layout(partitions.version) == layout:
        return _array_prefix(layout, len(partitions)) + partitions.encoded
    entries = [_entry_of_struct(layout, e) for e in partitions]
    return _array_prefix(layout, len(entries)) + b"".join(entries)


def _topic(version: int, layout: int, topic: Any) -> bytes:
    flexible = layout == 3
    parts = [struct.pack(">h", topic.error_code), string_bytes(topic.name, flexible, nullable=True)]
    if version >= 10:
        parts.append(_uuid(topic.topic_id))
    if version >= 1:
        parts.append(b"\x01" if topic.is_internal else b"\x00")
    parts.append(_partitions(version, layout, topic.partitions))
    if version >= 8:
        parts.append(_bits(topic.authorized_operations))
    if flexible:
        parts.append(b"\x00")
    return b"".join(parts)


def _broker(version: int, flexible: bool, broker: Any) -> bytes:
    parts = [struct.pack(">i", broker.node_id), string_bytes(broker.host, flexible, nullable=True),
             struct.pack(">i", broker.port)]
    if version >= 1:
        parts.append(string_bytes(broker.rack, flexible, nullable=True))
    if flexible:
        parts.append(b"\x00")
    return b"".join(parts)


def _array(flexible: bool, items: Optional[List[bytes]]) -> bytes:
    if items is None:
        return null_length(flexible)
    return _array_prefix(3 if flexible else 0, len(items)) + b"".join(items)


def encode_metadata_frame(response: Any, version: int, correlation_id: int) -> Optional[bytes]:
    """The response frame (size, header, body) kafka-python would write for ``response`` at
    ``version``, or None for a version this module does not encode (the caller falls back)."""
    if not 0 <= version <= MAX_ENCODED_VERSION:
        return None
    flexible = version >= 9
    layout = partition_layout(version)
    brokers = response.brokers
    topics = response.topics
    parts = [struct.pack(">i", correlation_id) + (b"\x00" if flexible else b"")]  # response header v0 / v1
    if version >= 3:
        parts.append(struct.pack(">i", response.throttle_time_ms))
    parts.append(_array(flexible, None if brokers is None
                        else [_broker(version, flexible, b) for b in brokers]))
    if version >= 2:
        parts.append(string_bytes(response.cluster_id, flexible, nullable=True))
    if version >= 1:
        parts.append(struct.pack(">i", response.controller_id))
    parts.append(_array(flexible, None if topics is None else [_topic(version, layout, t) for t in topics]))
    if 8 <= version <= 10:
        parts.append(_bits(response.authorized_operations))
    if flexible:
        parts.append(b"\x00")
    body = b"".join(parts)
    return struct.pack(">i", len(body)) + body
