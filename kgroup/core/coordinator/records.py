"""The records of a classic group, the union of every record the coordinator emits, and the
replay that folds them back into the persisted view.

A group is described by one header record plus one record per member, so a
join or a sync rewrites only what changed (a whole-group record per join
would make a 1,000-member join quadratic).  Later records for the same key
replace earlier ones; tombstones delete.

A KIP-848 consumer group has its own records (:mod:`kgroup.core.consumer_group.records`);
offsets and the group tombstone are shared (:mod:`kgroup.core.coordinator_common.records`).
A group id has one type at a time: a header of one type replaces a group of the other type,
offsets stay.  Transactional offsets and markers are folded by
:class:`~kgroup.core.coordinator.pending_offsets.PendingOffsets`, the same fold the live
coordinator runs.
"""
from __future__ import annotations

import logging
from typing import Iterable, Optional, Union, get_args

import attrs

from kgroup.core.consumer_group.group import INITIAL_GROUP_EPOCH
from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone, ConsumerGroupMetadataRecord,
    ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone,
    ConsumerGroupTargetAssignmentRecord, PersistedConsumerGroup, ResolvedTopicRegex,
)
from kgroup.core.coordinator.pending_offsets import PendingOffsets, PendingView
from kgroup.core.coordinator_common.records import (
    GroupTombstone, OffsetCommitRecord, OffsetTombstone, TxnMarkerRecord, TxnOffsetCommitRecord,
)
from kgroup.core.messages import JoinGroupProtocol, OffsetAndMetadata
from kgroup.values import TopicPartition


@attrs.frozen
class GroupMetadataRecord:
    group_id: str
    state: str
    generation_id: int
    protocol_type: Optional[str]
    protocol_name: Optional[str]
    leader_id: Optional[str]


@attrs.frozen
class MemberMetadataRecord:
    group_id: str
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[JoinGroupProtocol, ...]
    assignment: bytes


@attrs.frozen
class MemberTombstone:
    group_id: str
    member_id: str


Record = Union[
    GroupMetadataRecord, MemberMetadataRecord, MemberTombstone, GroupTombstone, OffsetCommitRecord,
    OffsetTombstone, ConsumerGroupMetadataRecord, ConsumerGroupMemberRecord,
    ConsumerGroupTargetAssignmentRecord, ConsumerGroupMemberTombstone, TxnOffsetCommitRecord, TxnMarkerRecord,
    ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone,
]
_RECORD_TYPES = get_args(Record)


@attrs.frozen
class PersistedGroup:
    header: GroupMetadataRecord
    members: dict[str, MemberMetadataRecord]


@attrs.frozen
class PersistedView:
    """What the records describe; compared with == by the replay tests."""

    groups: dict[str, PersistedGroup]
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]]
    consumer_groups: dict[str, PersistedConsumerGroup] = attrs.field(factory=dict)
    #: Offsets of open transactions: producer id -> group id -> partition -> offset.
    pending_offsets: PendingView = attrs.field(factory=dict)


log = logging.getLogger("kgroup.coordinator")


def replay(records: Iterable[object]) -> PersistedView:
    """Fold the records of an offsets partition into what they describe (see :func:`replay_with_pending`)."""
    return replay_with_pending(records)[0]


def replay_with_pending(records: Iterable[object]) -> tuple[PersistedView, PendingOffsets]:
    """Fold the records of an offsets partition into what they describe, and the pending
    transactional offsets (with the write order a loading coordinator carries on from).

    A payload that is not a coordinator record is logged and skipped, never fatal: Kafka's
    CoordinatorLoaderImpl does the same with a record of an unknown type ("Ignoring it. It
    could be a left over from an aborted upgrade."), so one stray record cannot keep every
    group of the partition from loading."""
    headers: dict[str, GroupMetadataRecord] = {}
    members: dict[str, dict[str, MemberMetadataRecord]] = {}
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
    consumer_headers: dict[str, ConsumerGroupMetadataRecord] = {}
    consumer_members: dict[str, dict[str, ConsumerGroupMember]] = {}
    targets: dict[str, dict[str, frozenset[TopicPartition]]] = {}
    pending = PendingOffsets()
    regexes: dict[str, dict[str, ResolvedTopicRegex]] = {}
    for position, record in enumerate(records):
        if not isinstance(record, _RECORD_TYPES):
            log.warning("skipping record %d of the offsets partition: %s is not a coordinator record",
                        position, type(record).__name__)
            continue
        committed = pending.apply(record)
        if isinstance(record, TxnMarkerRecord):
            for gid, materialized in (committed or {}).items():
                offsets.setdefault(gid, {}).update(materialized)
            continue
        gid = record.group_id
        if isinstance(record, GroupMetadataRecord):
            headers[gid] = record
            members.setdefault(gid, {})
            # The id now names a classic group (Kafka's downgrade writes the same).
            consumer_headers.pop(gid, None)
            consumer_members.pop(gid, None)
            targets.pop(gid, None)
            regexes.pop(gid, None)
        elif isinstance(record, ConsumerGroupMetadataRecord):
            consumer_headers[gid] = record
            consumer_members.setdefault(gid, {})
            targets.setdefault(gid, {})
            headers.pop(gid, None)
            members.pop(gid, None)
        elif isinstance(record, ConsumerGroupMemberRecord):
            consumer_members.setdefault(gid, {})[record.member.member_id] = record.member
        elif isinstance(record, ConsumerGroupTargetAssignmentRecord):
            targets.setdefault(gid, {})[record.member_id] = record.partitions
        elif isinstance(record, ConsumerGroupMemberTombstone):
            consumer_members.get(gid, {}).pop(record.member_id, None)
            targets.get(gid, {}).pop(record.member_id, None)
        elif isinstance(record, ConsumerGroupRegularExpressionRecord):
            regexes.setdefault(gid, {})[record.regex] = record.resolved
        elif isinstance(record, ConsumerGroupRegularExpressionTombstone):
            regexes.get(gid, {}).pop(record.regex, None)
        elif isinstance(record, MemberMetadataRecord):
            members.setdefault(gid, {})[record.member_id] = record
        elif isinstance(record, MemberTombstone):
            members.get(gid, {}).pop(record.member_id, None)
        elif isinstance(record, OffsetCommitRecord):
            offsets.setdefault(gid, {})[record.topic_partition] = record.committed
        elif isinstance(record, TxnOffsetCommitRecord):
            pass  # pending until its marker: folded by PendingOffsets alone
        elif isinstance(record, OffsetTombstone):
            group_offsets = offsets.get(gid)
            if group_offsets is not None:
                group_offsets.pop(record.topic_partition, None)
                if not group_offsets:
                    del offsets[gid]
        elif isinstance(record, GroupTombstone):
            headers.pop(gid, None)
            members.pop(gid, None)
            offsets.pop(gid, None)
            consumer_headers.pop(gid, None)
            consumer_members.pop(gid, None)
            targets.pop(gid, None)
            regexes.pop(gid, None)
        else:
            raise TypeError(f"not a coordinator record: {record!r}")
    groups = {gid: PersistedGroup(header, members.get(gid, {})) for gid, header in headers.items()}
    # A member or target record of a consumer group whose header was not seen creates the group as
    # Kafka's GroupMetadataManager.replay does (getOrMaybeCreatePersistedConsumerGroup: the constructor,
    # which starts both epochs at 1 since Kafka 4.4, KAFKA-20268); a tombstone alone creates nothing,
    # and a classic header keeps the id classic.
    for gid in [*consumer_members, *targets, *regexes]:
        if gid not in consumer_headers and gid not in headers:
            consumer_headers[gid] = ConsumerGroupMetadataRecord(gid, INITIAL_GROUP_EPOCH, INITIAL_GROUP_EPOCH,
                                                                ())
    consumer_groups = {
        gid: PersistedConsumerGroup(header, consumer_members.get(gid, {}), targets.get(gid, {}),
                                    regexes.get(gid, {}))
        for gid, header in consumer_headers.items()
    }
    view = PersistedView(groups=groups, offsets=offsets, consumer_groups=consumer_groups,
                         pending_offsets=pending.view())
    return view, pending
