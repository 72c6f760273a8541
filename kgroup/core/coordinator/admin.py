"""DescribeGroups / ListGroups / DeleteGroups (the admin part of Kafka's GroupMetadataManager).

Both group types answer: ListGroups v5 tells them apart (GroupType "classic" / "consumer") and
filters on it; DescribeGroups shows a consumer group with its members' current assignments as
ConsumerProtocol assignment bytes and the group's assignor as protocol data.

An object the coordinator owns, with a narrow view of it: the groups it may read, a hook that
cancels a group's timers (its join deadline and its pending members' deadlines) before the
group is deleted, and a sink for the tombstones it produces.  Deleting a group also tombstones the
partitions it has offsets pending in open transactions (Kafka's deleteAllOffsets), which drops them.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence, Set

from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.values import TopicPartition
from kgroup.core.coordinator.group import Group
from kgroup.core.coordinator.pending_offsets import PendingOffsets
from kgroup.core.coordinator.records import Record
from kgroup.core.coordinator_common.records import OffsetTombstone
from kgroup.core.coordinator.state import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, DeleteGroupsResponse, DeletedGroup, DescribedGroup, DescribedMember,
    DescribeGroupsRequest, DescribeGroupsResponse, ListedGroup, ListGroupsRequest, ListGroupsResponse,
)

E = ErrorCode
S = GroupState


#: What Java's String.trim removes from both ends.
_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))


class AdminHandler:
    def __init__(self, groups: Mapping[str, Group], cancel_timers: Callable[[Group], None],
                 emit: Callable[[Record], None],
                 consumer_groups: Optional[Mapping[str, ConsumerGroup]] = None,
                 pending: Optional[PendingOffsets] = None) -> None:
        #: Read-only: the coordinator adds and drops groups.
        self._groups = groups
        self._consumer_groups: Mapping[str, ConsumerGroup] = (
            {} if consumer_groups is None else consumer_groups)
        self._cancel_timers = cancel_timers
        self._emit = emit
        self._pending = PendingOffsets() if pending is None else pending

    def describe(self, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
        return DescribeGroupsResponse(tuple(self._describe_one(gid) for gid in req.groups))

    def _consumer_group(self, group_id: str) -> Optional[ConsumerGroup]:
        group = self._consumer_groups.get(group_id)
        return None if group is None or group.is_(ConsumerGroupState.DEAD) else group

    def _describe_one(self, group_id: str) -> DescribedGroup:
        # A KIP-848 consumer group is no classic group: Kafka's GroupMetadataManager.describeGroups
        # answers it as a missing one, Dead with no members (Kafka 4.4's recorded answer to
        # consumer.describe-groups-on-consumer-group); ConsumerGroupDescribe describes it.
        group = self._groups.get(group_id)
        if group is None or group.is_(S.DEAD) or self._consumer_group(group_id) is not None:
            return DescribedGroup(E.NONE, group_id, S.DEAD.value)
        # Kafka's describeGroups: member metadata and the protocol only when Stable (the selected
        # protocol is final then); the assignment as stored, whatever the state.
        stable = group.is_(S.STABLE)
        protocol = group.protocol_name
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata_for(protocol) if stable else b"", m.assignment)
            for m in group.members.values()
        )
        return DescribedGroup(E.NONE, group_id, group.state.value, group.protocol_type or "",
                              protocol or "" if stable else "", members)

    def list(self, req: ListGroupsRequest) -> ListGroupsResponse:
        # GroupMetadataManager.listGroups lower-cases and trims (String.trim: code points up to U+0020)
        # each state filter; a type filter is only lower-cased (Group.GroupType.parse).
        wanted = {s.lower().strip(_JAVA_TRIMMED) for s in req.states_filter}
        types = {t.lower() for t in req.types_filter}
        listed = [
            ListedGroup(gid, group.protocol_type or "", group.state.value, "classic")
            for gid, group in self._groups.items()
            if not group.is_(S.DEAD) and (not wanted or group.state.value.lower() in wanted)
        ]
        listed += [
            ListedGroup(gid, "consumer", group.state.value, "consumer")
            for gid, group in self._consumer_groups.items()
            if not group.is_(ConsumerGroupState.DEAD) and (not wanted or group.state.value.lower() in wanted)
        ]
        return ListGroupsResponse(E.NONE, tuple(g for g in listed if not types or g.group_type in types))

    def delete(self, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
        return DeleteGroupsResponse(tuple(DeletedGroup(gid, self._delete_one(gid)) for gid in req.groups))

    def _delete_one(self, group_id: str) -> ErrorCode:
        consumer_group = self._consumer_group(group_id)
        if consumer_group is not None:
            if consumer_group.members:
                return E.NON_EMPTY_GROUP
            self._emit_deletion(group_id, set(consumer_group.offsets), consumer_group.delete())
            return E.NONE
        group = self._groups.get(group_id)
        if group is None or group.is_(S.DEAD):
            return E.GROUP_ID_NOT_FOUND
        if not group.is_(S.EMPTY):
            return E.NON_EMPTY_GROUP
        self._cancel_timers(group)
        self._emit_deletion(group_id, set(group.offsets), group.delete())
        return E.NONE

    def _emit_deletion(self, group_id: str, committed: Set[TopicPartition],
                       tombstones: Sequence[Record]) -> None:
        """The group's tombstones, with one more per partition whose only offset is pending in a
        transaction (Kafka writes one tombstone per partition, before the group's)."""
        pending_only = sorted(self._pending.pending_partitions(group_id) - committed)
        *offset_tombstones, group_tombstone = tombstones
        for record in [*offset_tombstones, *(OffsetTombstone(group_id, tp) for tp in pending_only),
                       group_tombstone]:
            self._emit(record)
