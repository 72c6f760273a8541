"""``__consumer_offsets`` and ``__transaction_state`` as record batches, as Kafka serves them.

kgroup's coordinators append their records to those partitions as Python values (one per offset:
:mod:`kgroup.core.coordinator.records`, :mod:`kgroup.core.consumer_group.records`,
:mod:`kgroup.core.coordinator_common.records`, :mod:`kgroup.core.transaction.log`).  A client that
fetches them (Burrow, ``kafka-console-consumer`` with ``OffsetsMessageFormatter``, a KIP-848 regex
such as ``^.*`` that is assigned ``__consumer_offsets``) reads Kafka's v2 record batches whose keys
and values are Kafka's coordinator records (:mod:`kgroup.server.coordinator_records`).

Each offset's entry becomes one batch of one record at that offset, in the entry's leader epoch,
stamped (CreateTime) with the entry's append time (what Kafka's ``CoordinatorRuntime`` stamps a
coordinator write with).  A transactional offset commit is a transactional batch of its producer
(no base sequence, as the coordinator writes it); a transaction marker is Kafka's control batch.

Encoded lazily, when a Fetch or ListOffsets reads the partition: a *shadow* log per partition holds
one :class:`~kgroup.server.record_log.BatchSlice` per offset, filled in order up to the leader's log
end (the fold below needs every earlier record) and dropped or cut back with the leader's log (a
truncation, a re-created partition), so it never holds an entry the log no longer has and a
repeated fetch re-encodes nothing.  The readers of client batches
(:func:`~kgroup.server.log_reads.read_batches`, the producer state that yields the LSO) read the
shadow as they read a client partition's log.

Where kgroup's records and Kafka's differ (docs/guide/wire-server.md lists it): kgroup writes one
record where Kafka writes several, so each is served as the Kafka record closest to what changed:

- a classic group is a header record plus one record per member; Kafka writes the whole group in
  one GroupMetadata record.  Each header, member or member tombstone is served as the GroupMetadata
  record of the whole group as of that offset (its currentStateTimestamp: the entry's append time);
- a KIP-848 group's header (both epochs) is served as ConsumerGroupMetadata when the group epoch
  moved (no metadata hash), else as ConsumerGroupTargetAssignmentMetadata; a member record as
  ConsumerGroupMemberMetadata when its subscription moved (or it is new), else as
  ConsumerGroupCurrentMemberAssignment; a member tombstone as the ConsumerGroupMemberMetadata
  tombstone; a regex resolution carries version 0 (kgroup has no metadata image offset);
- a group tombstone is the GroupMetadata (classic) or ConsumerGroupMetadata tombstone of the group
  (Kafka also writes one tombstone per offset and per member record before it).
"""
from __future__ import annotations

import struct
import uuid
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

import attrs

from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.replica_log import LogEntry, ReplicaLog
from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone, ConsumerGroupMetadataRecord,
    ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone,
    ConsumerGroupTargetAssignmentRecord,
)
from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord, MemberTombstone
from kgroup.core.coordinator_common.records import (
    GroupTombstone, OffsetCommitRecord, OffsetTombstone, TxnMarkerRecord, TxnOffsetCommitRecord,
)
from kgroup.core.transaction.log import TransactionLogRecord
from kgroup.server import coordinator_records as wire
from kgroup.server.control_batches import end_txn_marker_batch
from kgroup.server.coordinator_records import RecordType
from kgroup.server.crc32c import crc32c
from kgroup.server.hand_codec import uvarint_bytes
from kgroup.server.record_log import BatchSlice, ProducedBatch
from kgroup.values import INTERNAL_TOPICS, TopicPartition

__all__ = ["CoordinatorLogs", "PartitionEncoder", "coordinator_batch"]

_NO_PRODUCER_ID = -1
_NO_SEQUENCE = -1
_TRANSACTIONAL = 0x10
#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc; then what the CRC covers before the records:
#: attributes, lastOffsetDelta, firstTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, count.
_HEAD = struct.Struct(">qiibI")
_CRC_COVERED_HEADER = struct.Struct(">hiqqqhii")
_LOG_OVERHEAD = 12


def _varint(value: int) -> bytes:
    """Kafka's zigzag varint (ByteUtils.writeVarint)."""
    return uvarint_bytes((value << 1) ^ (value >> 63))


def coordinator_batch(key: bytes, value: Optional[bytes], timestamp_ms: int,
                      producer_id: int = _NO_PRODUCER_ID, producer_epoch: int = -1) -> ProducedBatch:
    """One v2 batch of one record (CreateTime ``timestamp_ms``, no compression, no headers), at base
    offset 0 until :meth:`ProducedBatch.stored_at` places it; transactional when ``producer_id`` is
    set.  A null ``value`` is a tombstone."""
    body = (b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key
            + (_varint(-1) if value is None else _varint(len(value)) + value) + _varint(0))
    record = _varint(len(body)) + body
    transactional = producer_id != _NO_PRODUCER_ID
    covered = _CRC_COVERED_HEADER.pack(_TRANSACTIONAL if transactional else 0, 0, timestamp_ms, timestamp_ms,
                                       producer_id, producer_epoch, _NO_SEQUENCE, 1) + record
    batch_length = _HEAD.size + len(covered) - _LOG_OVERHEAD
    data = _HEAD.pack(0, batch_length, -1, 2, crc32c(covered)) + covered
    return ProducedBatch(data, 1, timestamp_ms, producer_id, producer_epoch, _NO_SEQUENCE, transactional)


@attrs.frozen
class _ClassicGroup:
    header: Optional[GroupMetadataRecord]
    members: Dict[str, MemberMetadataRecord]


def _subscription_of(member: ConsumerGroupMember) -> Tuple[object, ...]:
    """What ConsumerGroupMemberMetadataValue holds of a member: when it moves, Kafka writes that record."""
    return (member.instance_id, member.rack_id, member.client_id, member.client_host,
            member.subscribed_topic_names, member.subscribed_topic_regex, member.rebalance_timeout_ms,
            member.server_assignor, member.classic_member_metadata)


class PartitionEncoder:
    """Encodes one internal partition's entries in offset order, folding what it needs of the
    earlier ones (a classic group's members, a consumer group's last header and member records).
    ``topic_id``: the id of a live topic (None for a topic gone: the zero id is written)."""

    def __init__(self, topic_id: Callable[[str], Optional[uuid.UUID]]) -> None:
        self._topic_id = topic_id
        self._classic: Dict[str, _ClassicGroup] = {}
        self._consumer_headers: Dict[str, ConsumerGroupMetadataRecord] = {}
        self._consumer_members: Dict[Tuple[str, str], ConsumerGroupMember] = {}

    def encode(self, entry: LogEntry, offset: int) -> Optional[BatchSlice]:
        """The batch serving ``entry`` at ``offset`` (None for a payload that is no coordinator
        record: nothing a client reads, as before)."""
        produced = self._batch(entry.payload, entry.append_time_ms)
        if produced is None:
            return None
        return BatchSlice(produced.stored_at(offset, entry.leader_epoch))

    def _batch(self, record: object, time_ms: int) -> Optional[ProducedBatch]:
        if isinstance(record, OffsetCommitRecord):
            tp = record.topic_partition
            return coordinator_batch(wire.offset_commit_key(record.group_id, tp.topic, tp.partition),
                                     self._offset_value(record.committed, time_ms), time_ms)
        if isinstance(record, TxnOffsetCommitRecord):
            tp = record.topic_partition
            return coordinator_batch(wire.offset_commit_key(record.group_id, tp.topic, tp.partition),
                                     self._offset_value(record.committed, time_ms), time_ms,
                                     record.producer_id, record.producer_epoch)
        if isinstance(record, OffsetTombstone):
            tp = record.topic_partition
            return coordinator_batch(wire.offset_commit_key(record.group_id, tp.topic, tp.partition), None,
                                     time_ms)
        if isinstance(record, TxnMarkerRecord):
            return end_txn_marker_batch(record.producer_id, record.producer_epoch, record.commit,
                                        record.coordinator_epoch, time_ms)
        if isinstance(record, (GroupMetadataRecord, MemberMetadataRecord, MemberTombstone)):
            return self._classic_group(record, time_ms)
        if isinstance(record, GroupTombstone):
            return self._group_tombstone(record.group_id, time_ms)
        if isinstance(record, TransactionLogRecord):
            return self._transaction(record, time_ms)
        return self._consumer_group(record, time_ms)

    @staticmethod
    def _offset_value(committed, time_ms: int) -> bytes:
        return wire.offset_commit(committed.offset, committed.leader_epoch, committed.metadata, time_ms)

    # -- classic groups ----------------------------------------------------------------------------

    def _classic_group(self, record: object, time_ms: int) -> ProducedBatch:
        group_id: str = record.group_id  # type: ignore[attr-defined]
        group = self._classic.get(group_id) or _ClassicGroup(None, {})
        if isinstance(record, GroupMetadataRecord):
            # A classic header turns the id classic (the replay drops a consumer group of that id).
            self._forget_consumer_group(group_id)
            group = _ClassicGroup(record, group.members)
        elif isinstance(record, MemberMetadataRecord):
            group = _ClassicGroup(group.header, {**group.members, record.member_id: record})
        elif isinstance(record, MemberTombstone):
            kept = {m: r for m, r in group.members.items() if m != record.member_id}
            group = _ClassicGroup(group.header, kept)
        self._classic[group_id] = group
        header = group.header
        protocol = header.protocol_name if header is not None else None
        members = [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                    m.session_timeout_ms, _subscription(m, protocol), m.assignment)
                   for m in group.members.values()]
        value = wire.group_metadata(
            (header.protocol_type if header is not None else None) or "",
            header.generation_id if header is not None else 0, protocol,
            header.leader_id if header is not None else None, time_ms, members)
        return coordinator_batch(wire.group_key(RecordType.GROUP_METADATA, group_id), value, time_ms)

    def _group_tombstone(self, group_id: str, time_ms: int) -> ProducedBatch:
        if group_id in self._classic:
            del self._classic[group_id]
            key = wire.group_key(RecordType.GROUP_METADATA, group_id)
        else:
            key = wire.group_key(RecordType.CONSUMER_GROUP_METADATA, group_id)
        self._forget_consumer_group(group_id)
        return coordinator_batch(key, None, time_ms)

    def _forget_consumer_group(self, group_id: str) -> None:
        self._consumer_headers.pop(group_id, None)
        for key in [key for key in self._consumer_members if key[0] == group_id]:
            del self._consumer_members[key]

    # -- KIP-848 consumer groups --------------------------------------------------------------------

    def _topics(self, partitions: Iterable[TopicPartition]) -> wire.TopicPartitions:
        by_topic: Dict[str, List[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return [(self._topic_id(topic) or wire.ZERO_UUID, sorted(ids))
                for topic, ids in sorted(by_topic.items())]

    def _consumer_group(self, record: object, time_ms: int) -> Optional[ProducedBatch]:
        if isinstance(record, ConsumerGroupMetadataRecord):
            gid = record.group_id
            self._classic.pop(gid, None)
            previous = self._consumer_headers.get(gid)
            self._consumer_headers[gid] = record
            if previous is not None and previous.group_epoch == record.group_epoch \
                    and previous.assignment_epoch != record.assignment_epoch:
                return coordinator_batch(
                    wire.group_key(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, gid),
                    wire.consumer_group_target_assignment_metadata(record.assignment_epoch, time_ms), time_ms)
            return coordinator_batch(wire.group_key(RecordType.CONSUMER_GROUP_METADATA, gid),
                                     wire.consumer_group_metadata(record.group_epoch), time_ms)
        if isinstance(record, ConsumerGroupMemberRecord):
            member = record.member
            key = (record.group_id, member.member_id)
            previous_member = self._consumer_members.get(key)
            self._consumer_members[key] = member
            if previous_member is None or _subscription_of(previous_member) != _subscription_of(member):
                classic = member.classic_member_metadata
                protocols = [(p.name, p.metadata) for p in classic.supported_protocols] if classic else []
                value = wire.consumer_group_member_metadata(
                    member.instance_id, member.rack_id, member.client_id, member.client_host,
                    sorted(member.subscribed_topic_names), member.subscribed_topic_regex,
                    member.rebalance_timeout_ms, member.server_assignor,
                    None if classic is None else (classic.session_timeout_ms, protocols))
                return coordinator_batch(
                    wire.group_member_key(RecordType.CONSUMER_GROUP_MEMBER_METADATA, *key), value, time_ms)
            value = wire.consumer_group_current_assignment(
                member.member_epoch, member.previous_member_epoch, member.state.value,
                self._topics(member.assigned_partitions), self._topics(member.partitions_pending_revocation))
            key_bytes = wire.group_member_key(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, *key)
            return coordinator_batch(key_bytes, value, time_ms)
        if isinstance(record, ConsumerGroupTargetAssignmentRecord):
            return coordinator_batch(
                wire.group_member_key(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, record.group_id,
                                      record.member_id),
                wire.consumer_group_target_assignment(self._topics(record.partitions)), time_ms)
        if isinstance(record, ConsumerGroupMemberTombstone):
            self._consumer_members.pop((record.group_id, record.member_id), None)
            return coordinator_batch(wire.group_member_key(RecordType.CONSUMER_GROUP_MEMBER_METADATA,
                                                           record.group_id, record.member_id), None, time_ms)
        if isinstance(record, ConsumerGroupRegularExpressionRecord):
            resolved = record.resolved
            value = wire.consumer_group_regex(sorted(resolved.topics), 0, resolved.resolved_at_ms)
            return coordinator_batch(wire.regex_key(record.group_id, record.regex), value, time_ms)
        if isinstance(record, ConsumerGroupRegularExpressionTombstone):
            return coordinator_batch(wire.regex_key(record.group_id, record.regex), None, time_ms)
        return None

    # -- __transaction_state --------------------------------------------------------------------------

    @staticmethod
    def _transaction(record: TransactionLogRecord, time_ms: int) -> ProducedBatch:
        key = wire.transaction_log_key(record.key.transactional_id)
        meta = record.value
        if meta is None:
            return coordinator_batch(key, None, time_ms)
        partitions: Optional[List[Tuple[str, List[int]]]] = None
        if meta.state.value != 0:  # Empty writes null partitions (TransactionLog.valueToBytes)
            by_topic: Dict[str, List[int]] = {}
            for tp in meta.partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            partitions = sorted(by_topic.items())
        value = wire.transaction_log_value(meta.producer_id, meta.previous_producer_id, meta.producer_epoch,
                                           meta.transaction_timeout_ms, meta.state.value, partitions,
                                           meta.last_update_timestamp_ms, meta.start_timestamp_ms)
        return coordinator_batch(key, value, time_ms)


def _subscription(member: MemberMetadataRecord, protocol: Optional[str]) -> bytes:
    """The member's metadata for the group's protocol (Kafka's ``member.metadata(protocolName)``)."""
    for p in member.protocols:
        if p.name == protocol:
            return p.metadata
    return b""


class _Shadow:
    """One internal partition's batches, an offset each, as of its leader's log up to ``len``."""

    __slots__ = ("partition", "log", "encoder", "last_source")

    def __init__(self, partition: Partition, topic_id: Callable[[str], Optional[uuid.UUID]]) -> None:
        self.partition = partition
        self.log = ReplicaLog()
        self.encoder = PartitionEncoder(topic_id)
        self.last_source: Optional[LogEntry] = None

    def describes(self, partition: Partition, source: ReplicaLog) -> bool:
        """Whether every batch held still serves the entry at its offset: same partition, and the
        log still holds the last entry encoded there (a truncation replaces it or cuts it off)."""
        held = len(self.log.entries)
        return partition is self.partition and held <= source.leo and (
            held == 0 or source.entries[held - 1] is self.last_source)


class CoordinatorLogs:
    """The shadow logs of the internal partitions the data plane was asked to read."""

    def __init__(self, live_topics: Mapping[str, object], topic_id: Callable[[str], uuid.UUID]) -> None:
        # The id of a live topic; None (the zero id is written) for one deleted since.
        self._topic_id: Callable[[str], Optional[uuid.UUID]] = (
            lambda name: topic_id(name) if name in live_topics else None)
        self._shadows: Dict[Tuple[str, int], _Shadow] = {}

    def readable(self, partition: Partition, source: ReplicaLog) -> ReplicaLog:
        """The batches a client reads of ``partition`` whose leader's log is ``source``: ``source``
        itself for a client topic; for ``__consumer_offsets`` and ``__transaction_state`` their
        coordinators' records up to ``source``'s log end as a log the batch readers read (entry ``i``
        holds the :class:`BatchSlice` serving offset ``i``, or None for a payload no client reads)."""
        if partition.topic not in INTERNAL_TOPICS:
            return source
        shadow = self._shadows.get(partition.key)
        if shadow is None or not shadow.describes(partition, source):
            shadow = self._shadows[partition.key] = _Shadow(partition, self._topic_id)
        entries = shadow.log.entries
        held = len(entries)
        if held < source.leo:
            encode = shadow.encoder.encode
            for offset in range(held, source.leo):
                entry = source.entries[offset]
                entries.append(LogEntry(entry.leader_epoch, encode(entry, offset), entry.append_time_ms))
            shadow.last_source = source.entries[-1]
        return shadow.log

    def forget(self, topic: str) -> None:
        for key in [key for key in self._shadows if key[0] == topic]:
            del self._shadows[key]
