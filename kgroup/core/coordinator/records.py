"""Records the coordinator emits for every change of group metadata and offsets,
and the replay that folds them back into the persisted view.

A group is described by one header record plus one record per member, so a
join or a sync rewrites only what changed (a whole-group record per join
would make a 1,000-member join quadratic).  Later records for the same key
replace earlier ones; tombstones delete.
"""
from __future__ import annotations

from typing import Iterable, Optional, Union

import attrs

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


@attrs.frozen
class GroupTombstone:
    """The group is deleted, with its members and its offsets."""

    group_id: str


@attrs.frozen
class OffsetCommitRecord:
    group_id: str
    topic_partition: TopicPartition
    committed: OffsetAndMetadata


@attrs.frozen
class OffsetTombstone:
    group_id: str
    topic_partition: TopicPartition


Record = Union[
    GroupMetadataRecord, MemberMetadataRecord, MemberTombstone, GroupTombstone, OffsetCommitRecord,
    OffsetTombstone,
]


@attrs.frozen
class PersistedGroup:
    header: GroupMetadataRecord
    members: dict[str, MemberMetadataRecord]


@attrs.frozen
class PersistedView:
    """What the records describe; compared with == by the replay tests."""

    groups: dict[str, PersistedGroup]
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]]


def replay(records: Iterable[Record]) -> PersistedView:
    headers: dict[str, GroupMetadataRecord] = {}
    members: dict[str, dict[str, MemberMetadataRecord]] = {}
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
    for record in records:
        gid = record.group_id
        if isinstance(record, GroupMetadataRecord):
            headers[gid] = record
            members.setdefault(gid, {})
        elif isinstance(record, MemberMetadataRecord):
            members.setdefault(gid, {})[record.member_id] = record
        elif isinstance(record, MemberTombstone):
            members.get(gid, {}).pop(record.member_id, None)
        elif isinstance(record, OffsetCommitRecord):
            offsets.setdefault(gid, {})[record.topic_partition] = record.committed
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
        else:
            raise TypeError(f"not a coordinator record: {record!r}")
    groups = {gid: PersistedGroup(header, members.get(gid, {})) for gid, header in headers.items()}
    return PersistedView(groups=groups, offsets=offsets)
