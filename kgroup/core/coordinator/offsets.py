"""OffsetCommit / OffsetFetch / OffsetDelete (Kafka's OffsetMetadataManager) for classic and KIP-848
consumer groups, and the tombstones for the offsets of deleted partitions (onPartitionsDeleted).

An object the coordinator owns, with a narrow view of it: the groups it may read, a way to
create a group for a simple (generation -1) commit, a hook that restarts a member's session
when its commit is accepted, and a sink for the records it produces.  Commits are checked
against member, generation and state as Kafka 4.x does for classic groups; every stored offset
is also emitted as a record.  A consumer group checks the member epoch instead (OffsetCommit /
OffsetFetch v9, STALE_MEMBER_EPOCH), and a commit does not count as a heartbeat there.
OffsetDelete refuses the partitions of topics the group is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC)
and, for a classic group of another protocol type, any group with members (NON_EMPTY_GROUP).

Offsets pending in open transactions (:mod:`.pending_offsets`) are invisible here; OffsetFetch with
``require_stable`` (v7+) answers UNSTABLE_OFFSET_COMMIT for a partition that has one, and OffsetDelete
tombstones a partition whose only offset is pending (Kafka's OffsetMetadataManager).
"""
from __future__ import annotations

from typing import AbstractSet, Callable, Mapping, Optional, Union

from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.core.coordinator.group import Group, Member
from kgroup.core.coordinator.pending_offsets import PendingOffsets
from kgroup.core.coordinator.records import Record
from kgroup.core.coordinator_common.records import OffsetTombstone
from kgroup.core.coordinator.state import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    CONSUMER_PROTOCOL_TYPE, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse, PartitionError, PartitionOffset,
)
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState


class OffsetHandler:
    def __init__(self, groups: Mapping[str, Group], create_group: Callable[[str], Group],
                 heard_from: Callable[[Member, int], None], emit: Callable[[Record], None],
                 consumer_groups: Optional[Mapping[str, ConsumerGroup]] = None,
                 metadata_max_bytes: int = 4096, pending: Optional[PendingOffsets] = None) -> None:
        #: Read-only: the coordinator adds and drops groups.
        self._groups = groups
        self._create_group = create_group
        #: Restarts a member's session deadline at now_ms (Kafka reschedules the heartbeat on a commit).
        self._heard_from = heard_from
        self._emit = emit
        self._metadata_max_bytes = metadata_max_bytes
        self._consumer_groups: Mapping[str, ConsumerGroup] = (
            {} if consumer_groups is None else consumer_groups)
        self._pending = PendingOffsets() if pending is None else pending

    def _consumer_group(self, group_id: str) -> Optional[ConsumerGroup]:
        group = self._consumer_groups.get(group_id)
        return None if group is None or group.is_(ConsumerGroupState.DEAD) else group

    def commit(self, req: OffsetCommitRequest, now_ms: int) -> OffsetCommitResponse:
        code, group = self._check_commit(req, now_ms)
        errors = []
        for commit in req.offsets:
            partition_code = code
            if group is not None:
                metadata = commit.committed.metadata
                if metadata is not None and len(metadata) > self._metadata_max_bytes:
                    # Kafka's OffsetMetadataManager refuses that partition alone and stores the others.
                    partition_code = E.OFFSET_METADATA_TOO_LARGE
                else:
                    self._emit(group.commit_offset(commit.topic_partition, commit.committed))
            errors.append(PartitionError(commit.topic_partition, partition_code))
        return OffsetCommitResponse(tuple(errors))

    def _check_commit(self, req: OffsetCommitRequest,
                      now_ms: int) -> tuple[ErrorCode, Optional[Union[Group, ConsumerGroup]]]:
        """The error code, and the group to store the offsets in when the commit is accepted."""
        consumer_group = self._consumer_group(req.group_id)
        if consumer_group is not None:
            code = consumer_group.validate_offset_commit(req)
            return code, consumer_group if code is E.NONE else None
        # The empty group id is a valid group here, as in Kafka ("for backwards compatibility").
        group = self._groups.get(req.group_id)
        if group is None or group.is_(S.DEAD):
            if group is not None and (req.generation_id >= 0 or req.member_id or req.group_instance_id):
                return E.COORDINATOR_NOT_AVAILABLE, None
            if req.generation_id >= 0:
                # Kafka 4.x: a generation-bearing commit does not create a group.
                return E.ILLEGAL_GENERATION, None
            return E.NONE, self._create_group(req.group_id)
        if req.generation_id < 0 and group.is_(S.EMPTY):
            # A simple (manually assigned) consumer or an admin tool storing offsets.
            return E.NONE, group
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            code = group.validate_member(req.member_id, req.group_instance_id)
            if code is not E.NONE:
                return code, None
            member = group.members[req.member_id]
            if req.generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION, None
            if group.is_(S.COMPLETING_REBALANCE):
                return E.REBALANCE_IN_PROGRESS, None
            self._heard_from(member, now_ms)
            return E.NONE, group
        # No member identity, but the group is managed by members.
        return E.UNKNOWN_MEMBER_ID, None

    def fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        consumer_group = self._consumer_group(req.group_id)
        if consumer_group is not None:
            code = consumer_group.validate_offset_fetch(req)
            if code is not E.NONE:
                return OffsetFetchResponse(code)
            return self._answer_fetch(req, consumer_group.offsets)
        group = self._groups.get(req.group_id)
        # A deleted group has no offsets: Kafka answers -1 per partition, not a retriable error.
        offsets = group.offsets if group is not None and not group.is_(S.DEAD) else {}
        return self._answer_fetch(req, offsets)

    def _answer_fetch(self, req: OffsetFetchRequest, offsets: Mapping) -> OffsetFetchResponse:
        # Without a list, only partitions with a committed offset are answered (Kafka's fetchAllOffsets).
        wanted = offsets if req.partitions is None else req.partitions
        if req.require_stable and self._pending.has_open_transactions(req.group_id):
            has_pending = self._pending.has_pending
            partitions = tuple(
                PartitionOffset(tp, None, E.UNSTABLE_OFFSET_COMMIT) if has_pending(req.group_id, tp)
                else PartitionOffset(tp, offsets.get(tp)) for tp in wanted)
        else:
            partitions = tuple(PartitionOffset(tp, offsets.get(tp)) for tp in wanted)
        return OffsetFetchResponse(E.NONE, partitions)

    def delete(self, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
        """Kafka's OffsetMetadataManager.deleteOffsets (the group checks are validateOffsetDelete)."""
        if not req.group_id:
            return OffsetDeleteResponse(E.INVALID_GROUP_ID)  # GroupCoordinatorService.isGroupIdNotEmpty
        group: Union[Group, ConsumerGroup]
        consumer_group = self._consumer_group(req.group_id)
        if consumer_group is not None:
            # ConsumerGroup.validateOffsetDelete accepts any state: only subscribed topics are refused.
            subscribed: Callable[[str], bool] = consumer_group.subscribed_topics().__contains__
            group = consumer_group
        else:
            classic = self._groups.get(req.group_id)
            if classic is None or classic.is_(S.DEAD):
                return OffsetDeleteResponse(E.GROUP_ID_NOT_FOUND)
            if not classic.is_(S.EMPTY) and classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
                # ClassicGroup.validateOffsetDelete: members of another protocol keep their offsets.
                return OffsetDeleteResponse(E.NON_EMPTY_GROUP)
            # ClassicGroup.isSubscribedToTopic, with the subscriptions decoded once per request.
            topics = classic.subscribed_topics()
            subscribes_to_all = topics is None and classic.uses_consumer_protocol()
            subscribed = (lambda topic: subscribes_to_all) if topics is None else topics.__contains__
            group = classic
        answers = []
        for tp in req.partitions:
            if subscribed(tp.topic):
                answers.append(PartitionError(tp, E.GROUP_SUBSCRIBED_TO_TOPIC))
                continue
            tombstone = group.delete_offset(tp)
            if tombstone is None and self._pending.has_pending(req.group_id, tp):
                # A tombstone also drops the offsets pending in open transactions.
                tombstone = OffsetTombstone(req.group_id, tp)
            if tombstone is not None:
                self._emit(tombstone)
            answers.append(PartitionError(tp, E.NONE))
        return OffsetDeleteResponse(E.NONE, tuple(answers))

    def delete_partitions(self, partitions: AbstractSet[TopicPartition]) -> None:
        """Kafka's OffsetMetadataManager.onPartitionsDeleted: the partitions' topics are gone, so every
        group's offset for them, committed or pending in an open transaction, gets a tombstone (which
        also drops the pending one)."""
        groups: dict[str, Union[Group, ConsumerGroup]] = {
            gid: g for gid, g in self._groups.items() if not g.is_(S.DEAD)}
        groups.update((gid, g) for gid, g in self._consumer_groups.items()
                      if not g.is_(ConsumerGroupState.DEAD))
        wanted = sorted(partitions)
        for group_id in sorted({*groups, *self._pending.groups_with_open_transactions()}):
            group = groups.get(group_id)
            for tp in wanted:
                tombstone = group.delete_offset(tp) if group is not None else None
                if tombstone is None and self._pending.has_pending(group_id, tp):
                    tombstone = OffsetTombstone(group_id, tp)
                if tombstone is not None:
                    self._emit(tombstone)
