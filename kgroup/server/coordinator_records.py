"""The coordinators' records in Kafka's bytes: keys and values of ``__consumer_offsets`` and
``__transaction_state`` as Kafka 4.4 writes them.

Kafka's ``CoordinatorRecordSerde`` writes a record key as a short (the record type,
``CoordinatorRecordType``) then the key struct, and a value as a short (the value's version) then
the value struct; a tombstone has a null value.  The structs are the generated messages of
``group-coordinator/src/main/resources/common/message/*Key.json`` / ``*Value.json`` and of
``transaction-coordinator/.../TransactionLogKey.json`` / ``TransactionLogValue.json``: keys are
never flexible; flexible values (compact strings and arrays, tagged fields) are the ones whose
``flexibleVersions`` cover the version written.  The versions are the ones Kafka 4.4 writes
(``GroupCoordinatorRecordHelpers``, ``TransactionLog.valueToBytes``): OffsetCommitValue 4,
GroupMetadataValue 3, every consumer-group value 0, TransactionLogValue 1 (transaction.version 2).

Pure functions of a record; :mod:`kgroup.server.coordinator_log` decides which record each log
entry of kgroup's coordinators becomes.
"""
from __future__ import annotations

import struct
import uuid
from typing import Iterable, List, Optional, Sequence, Tuple

from kgroup.server.hand_codec import uvarint_bytes

__all__ = ["RecordType", "Writer", "consumer_group_current_assignment", "consumer_group_member_metadata",
           "consumer_group_metadata", "consumer_group_regex", "consumer_group_target_assignment",
           "consumer_group_target_assignment_metadata", "group_key", "group_member_key",
           "group_metadata", "offset_commit", "offset_commit_key", "regex_key", "transaction_log_key",
           "transaction_log_value"]

ZERO_UUID = uuid.UUID(int=0)


class RecordType:
    """Kafka's ``CoordinatorRecordType`` ids (the key's version prefix)."""

    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    #: ``__transaction_state``'s one record type (the transaction coordinator's CoordinatorRecordType).
    TRANSACTION_LOG = 0


class Writer:
    """Kafka's protocol types, appended to one buffer (``ByteBufferAccessor``'s writes)."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def int8(self, value: int) -> "Writer":
        self.out += struct.pack(">b", value)
        return self

    def int16(self, value: int) -> "Writer":
        self.out += struct.pack(">h", value)
        return self

    def int32(self, value: int) -> "Writer":
        self.out += struct.pack(">i", value)
        return self

    def int64(self, value: int) -> "Writer":
        self.out += struct.pack(">q", value)
        return self

    def uvarint(self, value: int) -> "Writer":
        self.out += uvarint_bytes(value)
        return self

    def uuid(self, value: uuid.UUID) -> "Writer":
        self.out += value.bytes
        return self

    # Non-flexible versions: int16 / int32 lengths, -1 for null.
    def string(self, value: Optional[str]) -> "Writer":
        if value is None:
            return self.int16(-1)
        data = value.encode()
        self.int16(len(data))
        self.out += data
        return self

    def bytes_(self, value: bytes) -> "Writer":
        self.int32(len(value))
        self.out += value
        return self

    # Flexible versions: unsigned varint of length + 1, 0 for null.
    def compact_string(self, value: Optional[str]) -> "Writer":
        if value is None:
            return self.uvarint(0)
        data = value.encode()
        self.uvarint(len(data) + 1)
        self.out += data
        return self

    def compact_bytes(self, value: bytes) -> "Writer":
        self.uvarint(len(value) + 1)
        self.out += value
        return self

    def compact_array_length(self, count: Optional[int]) -> "Writer":
        return self.uvarint(0 if count is None else count + 1)

    def tagged_fields(self, fields: Sequence[Tuple[int, bytes]] = ()) -> "Writer":
        """Tagged fields in ascending tag order, each as tag, size, data."""
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag).uvarint(len(data))
            self.out += data
        return self

    def done(self) -> bytes:
        return bytes(self.out)


def _version(version: int) -> Writer:
    return Writer().int16(version)


# -- keys (never flexible) ------------------------------------------------------------------------

def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    return _version(RecordType.OFFSET_COMMIT).string(group_id).string(topic).int32(partition).done()


def group_key(record_type: int, group_id: str) -> bytes:
    """GroupMetadataKey, ConsumerGroupMetadataKey, ConsumerGroupTargetAssignmentMetadataKey: the group."""
    return _version(record_type).string(group_id).done()


def group_member_key(record_type: int, group_id: str, member_id: str) -> bytes:
    """ConsumerGroupMemberMetadataKey, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey: the group and the member."""
    return _version(record_type).string(group_id).string(member_id).done()


def regex_key(group_id: str, regex: str) -> bytes:
    return _version(RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION).string(group_id).string(regex).done()


def transaction_log_key(transactional_id: str) -> bytes:
    return _version(RecordType.TRANSACTION_LOG).string(transactional_id).done()


# -- values ------------------------------------------------------------------------------------------

def offset_commit(offset: int, leader_epoch: int, metadata: str, commit_timestamp_ms: int) -> bytes:
    """OffsetCommitValue v4 (what ``offsetCommitValueVersion`` picks without an expire timestamp): no
    topic id tag (kgroup keeps the committed topic's name only: what a commit by name writes)."""
    return (_version(4).int64(offset).int32(leader_epoch).compact_string(metadata)
            .int64(commit_timestamp_ms).tagged_fields().done())


#: A classic member as GroupMetadataValue's MemberMetadata holds it.
ClassicMember = Tuple[str, Optional[str], str, str, int, int, bytes, bytes]


def group_metadata(protocol_type: str, generation: int, protocol: Optional[str], leader: Optional[str],
                   current_state_timestamp_ms: int, members: Iterable[ClassicMember]) -> bytes:
    """GroupMetadataValue v3 (``newGroupMetadataRecord``): members as (member id, instance id, client
    id, client host, rebalance timeout, session timeout, subscription, assignment)."""
    members = list(members)
    w = (_version(3).string(protocol_type).int32(generation).string(protocol).string(leader)
         .int64(current_state_timestamp_ms).int32(len(members)))
    for member_id, instance_id, client_id, client_host, rebalance_ms, session_ms, subscription, assignment \
            in members:
        (w.string(member_id).string(instance_id).string(client_id).string(client_host).int32(rebalance_ms)
         .int32(session_ms).bytes_(subscription).bytes_(assignment))
    return w.done()


def consumer_group_metadata(epoch: int) -> bytes:
    """ConsumerGroupMetadataValue v0: the group epoch; no metadata hash tag (see the caller)."""
    return _version(0).int32(epoch).tagged_fields().done()


def consumer_group_target_assignment_metadata(assignment_epoch: int, assignment_timestamp_ms: int) -> bytes:
    """ConsumerGroupTargetAssignmentMetadataValue v0 with its AssignmentTimestamp tag (0)."""
    timestamp = Writer().int64(assignment_timestamp_ms).done()
    return _version(0).int32(assignment_epoch).tagged_fields([(0, timestamp)]).done()


#: (topic id, sorted partitions) per topic.
TopicPartitions = List[Tuple[uuid.UUID, List[int]]]


def _topic_partitions(w: Writer, topics: TopicPartitions) -> None:
    w.compact_array_length(len(topics))
    for topic_id, partitions in topics:
        w.uuid(topic_id).compact_array_length(len(partitions))
        for partition in partitions:
            w.int32(partition)
        w.tagged_fields()


def consumer_group_member_metadata(instance_id: Optional[str], rack_id: Optional[str], client_id: str,
                                   client_host: str, subscribed_topic_names: Sequence[str],
                                   subscribed_topic_regex: Optional[str], rebalance_timeout_ms: int,
                                   server_assignor: Optional[str],
                                   classic: Optional[Tuple[int, Sequence[Tuple[str, bytes]]]]) -> bytes:
    """ConsumerGroupMemberMetadataValue v0; ``classic``: (session timeout, [(protocol name, metadata)])
    of a classic-protocol member, Kafka's ClassicMemberMetadata tag (0)."""
    w = (_version(0).compact_string(instance_id).compact_string(rack_id).compact_string(client_id)
         .compact_string(client_host).compact_array_length(len(subscribed_topic_names)))
    for name in subscribed_topic_names:
        w.compact_string(name)
    w.compact_string(subscribed_topic_regex).int32(rebalance_timeout_ms).compact_string(server_assignor)
    if classic is None:
        return w.tagged_fields().done()
    session_timeout_ms, protocols = classic
    tag = Writer().int32(session_timeout_ms).compact_array_length(len(protocols))
    for name, metadata in protocols:
        tag.compact_string(name).compact_bytes(metadata).tagged_fields()
    tag.tagged_fields()
    return w.tagged_fields([(0, tag.done())]).done()


def consumer_group_target_assignment(topics: TopicPartitions) -> bytes:
    """ConsumerGroupTargetAssignmentMemberValue v0."""
    w = _version(0)
    _topic_partitions(w, topics)
    return w.tagged_fields().done()


def consumer_group_current_assignment(member_epoch: int, previous_member_epoch: int, state: int,
                                      assigned: TopicPartitions,
                                      pending_revocation: TopicPartitions) -> bytes:
    """ConsumerGroupCurrentMemberAssignmentValue v0 (no assignment-epochs tags: kgroup keeps none)."""
    w = _version(0).int32(member_epoch).int32(previous_member_epoch).int8(state)
    _topic_partitions(w, assigned)
    _topic_partitions(w, pending_revocation)
    return w.tagged_fields().done()


def consumer_group_regex(topics: Sequence[str], version: int, timestamp_ms: int) -> bytes:
    """ConsumerGroupRegularExpressionValue v0: the topics a regex resolved to, the metadata version
    and time of the resolution."""
    w = _version(0).compact_array_length(len(topics))
    for topic in topics:
        w.compact_string(topic)
    return w.int64(version).int64(timestamp_ms).tagged_fields().done()


def transaction_log_value(producer_id: int, previous_producer_id: int, producer_epoch: int,
                          transaction_timeout_ms: int, status: int,
                          partitions: Optional[Sequence[Tuple[str, Sequence[int]]]],
                          last_update_timestamp_ms: int, start_timestamp_ms: int) -> bytes:
    """TransactionLogValue v1 (``TransactionLog.valueToBytes`` under transaction.version 2): null
    partitions for an Empty transaction; the PreviousProducerId tag (0) when there is one."""
    w = (_version(1).int64(producer_id).int16(producer_epoch).int32(transaction_timeout_ms).int8(status)
         .compact_array_length(None if partitions is None else len(partitions)))
    for topic, ids in partitions or ():
        w.compact_string(topic).compact_array_length(len(ids))
        for partition in ids:
            w.int32(partition)
        w.tagged_fields()
    w.int64(last_update_timestamp_ms).int64(start_timestamp_ms)
    tags = [] if previous_producer_id < 0 else [(0, Writer().int64(previous_producer_id).done())]
    return w.tagged_fields(tags).done()
