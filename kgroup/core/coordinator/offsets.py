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
        errors = tuple(PartitionError(c.topic_partition, code) for c in req.offsets)
        self._deliver(key, OffsetCommitResponse(errors))

    def _offset_commit_check(self, req: OffsetCommitRequest) -> tuple[ErrorCode, Optional[Group]]:
        # The empty group id is a valid group here, as in Kafka ("for backwards compatibility").
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
            code = group.validate_member(req.member_id, req.group_instance_id)
            if code is not E.NONE:
                return code, None
            member = group.members[req.member_id]
            if req.generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION, None
            if group.is_(S.CompletingRebalance):
                return E.REBALANCE_IN_PROGRESS, None
            self._schedule_session(member)
            return E.NONE, group
        # No member identity, but the group is managed by members.
        return E.UNKNOWN_MEMBER_ID, None

    def _offset_fetch(self, key: Hashable, req: OffsetFetchRequest) -> None:
        group = self._groups.get(req.group_id)
        # A deleted group has no offsets: Kafka answers -1 per partition, not a retriable error.
        offsets = group.offsets if group is not None and not group.is_(S.Dead) else {}
        if req.partitions is None:
            partitions = tuple(PartitionOffset(tp, committed) for tp, committed in offsets.items())
        else:
            partitions = tuple(PartitionOffset(tp, offsets.get(tp)) for tp in req.partitions)
        self._deliver(key, OffsetFetchResponse(E.NONE, partitions))
