"""DescribeGroups / ListGroups / DeleteGroups handlers (a mixin of GroupCoordinator)."""
from __future__ import annotations

from typing import Hashable

from kgroup.core.coordinator.records import GroupTombstone, OffsetTombstone
from kgroup.core.coordinator.state import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, DeleteGroupsResponse, DeletedGroup, DescribedGroup, DescribedMember,
    DescribeGroupsRequest, DescribeGroupsResponse, ListedGroup, ListGroupsRequest, ListGroupsResponse,
)

E = ErrorCode
S = GroupState


class AdminHandlers:
    def _describe(self, key: Hashable, req: DescribeGroupsRequest) -> None:
        self._deliver(key, DescribeGroupsResponse(tuple(self._describe_one(gid) for gid in req.groups)))

    def _describe_one(self, group_id: str) -> DescribedGroup:
        group = self._groups.get(group_id)
        if group is None or group.is_(S.Dead):
            return DescribedGroup(E.NONE, group_id, S.Dead.value)
        # Kafka's describeGroups: member metadata and the protocol only when Stable (the selected
        # protocol is final then); the assignment as stored, whatever the state.
        stable = group.is_(S.Stable)
        protocol = group.protocol_name
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata_for(protocol) if stable else b"", m.assignment)
            for m in group.members.values()
        )
        return DescribedGroup(E.NONE, group_id, group.state.value, group.protocol_type or "",
                              protocol or "" if stable else "", members)

    def _list(self, key: Hashable, req: ListGroupsRequest) -> None:
        wanted = {s.lower() for s in req.states_filter}
        listed = tuple(
            ListedGroup(gid, group.protocol_type or "", group.state.value)
            for gid, group in self._groups.items()
            if not group.is_(S.Dead) and (not wanted or group.state.value.lower() in wanted)
        )
        self._deliver(key, ListGroupsResponse(E.NONE, listed))

    def _delete(self, key: Hashable, req: DeleteGroupsRequest) -> None:
        results = tuple(DeletedGroup(gid, self._delete_one(gid)) for gid in req.groups)
        self._deliver(key, DeleteGroupsResponse(results))

    def _delete_one(self, group_id: str) -> ErrorCode:
        group = self._groups.get(group_id)
        if group is None or group.is_(S.Dead):
            return E.GROUP_ID_NOT_FOUND
        if not group.is_(S.Empty):
            return E.NON_EMPTY_GROUP
        # The Dead group stays in memory so stale members see COORDINATOR_NOT_AVAILABLE.
        group.transition_to(S.Dead)
        self._cancel(group.join_key)
        for member_id in list(group.pending_members):
            self._drop_pending(group, member_id)
        for tp in group.offsets:
            self._records.append(OffsetTombstone(group_id, tp))
        group.offsets = {}
        self._records.append(GroupTombstone(group_id))
        group.persisted_header = None
        group.persisted_members = {}
        group.dirty_members.clear()
        return E.NONE
