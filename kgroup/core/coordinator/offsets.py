"""OffsetCommit / OffsetFetch handlers (a mixin of GroupCoordinator).

Commits are checked against member, generation and state as Kafka 4.x does
for classic groups; every stored offset is also emitted as a record.
"""
from __future__ import annotations

from typing import Hashable, Optional

from kgroup.core.coordinator.group import Group
from kgroup.core.coordinator.records import OffsetCommitRecord
from kgroup.core.coordinator.state import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, PartitionError,
    PartitionOffset,
)

E = ErrorCode
S = GroupState


class OffsetHandlers:
    def _offset_commit(self, key: Hashable, req: OffsetCommitRequest) -> None:
        code, group = self._offset_commit_check(req)
        if code is E.NONE:
            gid = group.group_id
            for commit in req.offsets:
                group.offsets[commit.topic_partition] = commit.committed
                self._records.append(OffsetCommitRecord(gid, commit.topic_partition, commit.committed))
        self._deliver(key, OffsetCommitResponse(tuple(PartitionError(c.topic_partition, code) for c in req.offsets)))

    def _offset_commit_check(self, req: OffsetCommitRequest) -> tuple[ErrorCode, Optional[Group]]:
        if not req.group_id:
            return E.INVALID_GROUP_ID, None
        group = self._groups.get(req.group_id)
        if group is None or group.is_(S.Dead):
            if group is not None and (req.generation_id >= 0 or req.member_id or req.group_instance_id):
                return E.COORDINATOR_NOT_AVAILABLE, None
            if req.generation_id >= 0:
                # Kafka 4.x: a generation-bearing commit does not create a group.
                return E.ILLEGAL_GENERATION, None
            return E.NONE, self._create_group(req.group_id)
        if req.generation_id < 0 and group.is_(S.Empty):
            # A simple (manually assigned) consumer or an admin tool storing offsets.
            return E.NONE, group
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            if group.is_static_member_fenced(req.member_id, req.group_instance_id):
                return E.FENCED_INSTANCE_ID, None
            member = group.members.get(req.member_id)
            if member is None:
                return E.UNKNOWN_MEMBER_ID, None
            if req.generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION, None
            if group.is_(S.CompletingRebalance):
                return E.REBALANCE_IN_PROGRESS, None
            self._schedule_session(member)
            return E.NONE, group
        # No member identity, but the group is managed by members.
        return E.UNKNOWN_MEMBER_ID, None

    def _offset_fetch(self, key: Hashable, req: OffsetFetchRequest) -> None:
        if not req.group_id:
            return self._deliver(key, OffsetFetchResponse(E.INVALID_GROUP_ID))
        group = self._groups.get(req.group_id)
        if group is not None and group.is_(S.Dead):
            return self._deliver(key, OffsetFetchResponse(E.COORDINATOR_NOT_AVAILABLE))
        offsets = group.offsets if group is not None else {}
        if req.partitions is None:
            partitions = tuple(PartitionOffset(tp, committed) for tp, committed in offsets.items())
        else:
            partitions = tuple(PartitionOffset(tp, offsets.get(tp)) for tp in req.partitions)
        self._deliver(key, OffsetFetchResponse(E.NONE, partitions))

