"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic groups (Kafka's GroupMetadataManager
classicGroupJoin / classicGroupSync / classicGroupHeartbeat / classicGroupLeave).

Each handler validates the request, changes the group through its :class:`Group` methods and the
:class:`ClassicGroupManager` (which holds the groups, the rebalance steps and the timers), and
answers through the coordinator's context.  A JoinGroup or SyncGroup may stay parked: it is
answered from a later call (another member's request or a timer).
"""
from __future__ import annotations

from typing import Hashable, Optional

from kgroup.core.coordinator.classic_group_manager import ClassicGroupManager
from kgroup.core.coordinator.context import GroupCoordinatorContext
from kgroup.core.coordinator.group import Group, Member, session_key
from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    CONSUMER_PROTOCOL_TYPE, UNKNOWN_MEMBER_ID, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupMemberResponse, LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.errors import InvalidProtocolMetadata
from kgroup.wire.consumer_protocol import decode_assignment, decode_subscription

E = ErrorCode
S = GroupState

#: Responses are immutable values, so one per error code is shared.
HEARTBEAT_RESPONSES = {code: HeartbeatResponse(code) for code in ErrorCode}


class ClassicGroupHandlers:
    def __init__(self, config: GroupCoordinatorConfig, context: GroupCoordinatorContext,
                 manager: ClassicGroupManager) -> None:
        self.config = config
        self._context = context
        self._deliver = context.deliver
        self._manager = manager
        self._groups = manager.groups
        #: The classic APIs against a consumer group (online migration, KIP-848).
        self._classic_members = context.consumer.classic_members

    # -- JoinGroup -------------------------------------------------------------

    def join(self, key: Hashable, req: JoinGroupRequest, now_ms: int) -> None:
        def fail(code: ErrorCode) -> None:
            self._deliver(key, JoinGroupResponse(code, member_id=req.member_id))

        # Every check that needs no group state comes first, so a bad request changes nothing.
        cfg = self.config
        if not req.group_id:
            return fail(E.INVALID_GROUP_ID)
        if not cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
            return fail(E.INVALID_SESSION_TIMEOUT)
        names = tuple(p.name for p in req.protocols)
        if len(set(names)) != len(names):
            # Kafka does not validate this and later fails to select a protocol; a member listing
            # an assignor twice cannot agree with the group on one, hence this code.
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        unknown = req.member_id == UNKNOWN_MEMBER_ID
        consumer_group = self._context.consumer_group(req.group_id)
        if consumer_group is not None:
            if consumer_group.members:
                # Kafka's classicGroupJoinToConsumerGroup: a classic member joins the consumer group.
                return self._deliver(key, self._classic_members.join(consumer_group, req, now_ms))
            # An empty consumer group's id becomes a classic group's, with its offsets.
            self._context.remove_consumer_group(req.group_id)
            self._manager.create_group(req.group_id).take_offsets(consumer_group.offsets)
        group = self._groups.get(req.group_id)
        if group is None or (group.is_(S.DEAD) and unknown):
            if not unknown:
                return fail(E.UNKNOWN_MEMBER_ID)
            # A deleted group's id is free again: a new member creates a new group.
            group = self._manager.create_group(req.group_id)
        if not self._accepts_joining(group, None if unknown else req.member_id):
            # Kafka's classicGroupJoinToClassicGroup: the member (pending or not) is removed and told
            # so with no member id; a retry with the old id is judged the same way.
            self._reject_over_max_size(group, req.member_id, now_ms)
            self._deliver(key, JoinGroupResponse(E.GROUP_MAX_SIZE_REACHED))
            return
        if group.is_(S.DEAD):
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(req.protocol_type, names):
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        if unknown:
            self._join_new_member(key, group, req, now_ms)
        else:
            self._join_existing_member(key, group, req, now_ms)

    def _accepts_joining(self, group: Group, member_id: Optional[str]) -> bool:
        """GROUP_MAX_SIZE check, Kafka's acceptJoiningMember."""
        limit = self.config.group_max_size
        state = group.state
        if state is S.EMPTY or state is S.DEAD:
            return True
        member = group.members.get(member_id) if member_id is not None else None
        if state is S.PREPARING_REBALANCE:
            # Counting members awaiting the join (not all members) kicks out the last rejoiners
            # of a group that is over a lowered limit.
            return (member is not None and member.join_key is not None) or group.num_awaiting_join < limit
        return member is not None or len(group.members) < limit

    def _reject_over_max_size(self, group: Group, member_id: str, now_ms: int) -> None:
        if member_id in group.pending_members:
            self._manager.drop_pending(group, member_id)
        else:
            member = group.members.get(member_id)
            if member is None:
                return
            self._manager.remove_member(group, member)
        if group.is_(S.PREPARING_REBALANCE):
            # The members left may all have joined already.
            self._manager.maybe_complete_join(group, now_ms)

    def _join_new_member(self, key: Hashable, group: Group, req: JoinGroupRequest, now_ms: int) -> None:
        instance_id = req.group_instance_id
        new_id = self._manager.new_member_id(instance_id if instance_id is not None else req.client_id)
        if instance_id is not None:
            # Static members skip the MEMBER_ID_REQUIRED round trip (KIP-345).
            self._join_new_static_member(key, group, req, instance_id, new_id, now_ms)
        elif req.api_version >= 4:
            group.add_pending_member(new_id)
            self._manager.schedule_session_deadline(session_key(group.group_id, new_id),
                                                    now_ms + req.session_timeout_ms)
            self._deliver(key, JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member_and_rebalance(key, group, req, new_id, now_ms)

    def _join_new_static_member(self, key: Hashable, group: Group, req: JoinGroupRequest, instance_id: str,
                                new_id: str, now_ms: int) -> None:
        """Kafka's updateStaticMemberThenRebalanceOrCompleteJoin (KIP-345, KIP-814)."""
        manager = self._manager
        old_id = group.static_members.get(instance_id)
        if old_id is None:
            self._add_member_and_rebalance(key, group, req, new_id, now_ms)
            return
        old_client = group.members[old_id]
        previous_leader_id = group.leader_id
        new = Member(group.group_id, new_id, instance_id, old_client.client_id, old_client.client_host,
                     req.session_timeout_ms, req.rebalance_timeout_ms, req.protocols)
        old = group.replace_static_member(instance_id, old_id, new)
        self._context.cancel_timer(old.session_key)
        # The old incarnation is fenced: its parked requests are answered so.
        old_join_key = group.take_join_key(old)
        if old_join_key is not None:
            self._deliver(old_join_key, JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=old_id))
        old_sync_key = group.take_sync_key(old)
        if old_sync_key is not None:
            self._deliver(old_sync_key, SyncGroupResponse(E.FENCED_INSTANCE_ID))
        manager.schedule_session(new, now_ms)
        if (group.is_(S.STABLE) and group.select_protocol() == group.protocol_name
                and not _owes_follow_up_rejoin(group, old)):
            # A restarted process cannot reproduce its subscription bytes (owned partitions,
            # generation), so only a change of the selected protocol forces a rebalance; the
            # member gets its stored assignment back through SyncGroup.
            if req.api_version >= 9:
                # KIP-814: a replaced leader gets the members but must not reassign.
                is_leader = group.leader_id == new_id
                self._deliver(key, manager.join_response(group, new, is_leader, skip_assignment=is_leader))
            else:
                # Before v9 the client cannot skip the assignment: it is told the old leader
                # id, so it acts as a follower.
                self._deliver(key, JoinGroupResponse(
                    E.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name, leader=previous_leader_id or "", member_id=new_id))
            return
        group.park_join(new, key)
        if group.is_(S.STABLE) or group.is_(S.COMPLETING_REBALANCE):
            # In CompletingRebalance the leader may already be assigning with the old member id.
            manager.prepare_rebalance(group, now_ms)
        else:
            manager.maybe_complete_join(group, now_ms)

    def _join_existing_member(self, key: Hashable, group: Group, req: JoinGroupRequest, now_ms: int) -> None:
        mid = req.member_id
        if mid in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka: "pending member cannot be a static member" (an IllegalStateException, which
                # the broker answers UNKNOWN_SERVER_ERROR); joining would map one instance id to two
                # members.
                self._deliver(key, JoinGroupResponse(E.UNKNOWN_SERVER_ERROR, member_id=mid))
                return
            self._manager.drop_pending(group, mid)
            self._add_member_and_rebalance(key, group, req, mid, now_ms)
            return
        code = group.validate_member(mid, req.group_instance_id)
        if code is not E.NONE:
            self._deliver(key, JoinGroupResponse(code, member_id=mid))
            return
        member = group.members[mid]
        state = group.state
        if state is S.PREPARING_REBALANCE:
            self._update_member_and_rebalance(key, group, member, req, now_ms)
        elif state is S.COMPLETING_REBALANCE:
            if member.matches(req.protocols):
                # The member missed its JoinGroup response: send it again.
                self._manager.schedule_session(member, now_ms)
                self._deliver(key, self._manager.join_response(group, member, mid == group.leader_id))
            else:
                self._update_member_and_rebalance(key, group, member, req, now_ms)
        elif state is S.STABLE:
            if mid == group.leader_id or not member.matches(req.protocols):
                # A leader's rejoin means it wants a new assignment (e.g. metadata changed).
                self._update_member_and_rebalance(key, group, member, req, now_ms)
            else:
                self._manager.schedule_session(member, now_ms)
                self._deliver(key, self._manager.join_response(group, member, False))
        else:
            self._deliver(key, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=mid))

    def _add_member_and_rebalance(self, key: Hashable, group: Group, req: JoinGroupRequest,
                                  member_id: str, now_ms: int) -> None:
        # A client that gave up on its parked first JoinGroup retries with a new member id; the
        # abandoned member would hold the rebalance forever, so a new member's join times out
        # (Kafka's addMemberThenRebalanceOrCompleteJoin, new member join timeout).
        member = Member(group.group_id, member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.session_timeout_ms, req.rebalance_timeout_ms, req.protocols, is_new=True)
        group.add(member, key, protocol_type=req.protocol_type)
        self._manager.schedule_session_deadline(member.session_key,
                                                now_ms + self.config.group_new_member_join_timeout_ms)
        self._manager.maybe_prepare_rebalance_or_complete_join(group, now_ms)

    def _update_member_and_rebalance(self, key: Hashable, group: Group, member: Member,
                                     req: JoinGroupRequest, now_ms: int) -> None:
        superseded = group.update_member(member, req.protocols, req.session_timeout_ms,
                                         req.rebalance_timeout_ms, key)
        if superseded is not None:
            # Kafka drops the superseded callback; we answer it so no caller waits forever.
            self._deliver(superseded, JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        if not member.is_new:
            # A new member keeps its join timeout (Kafka does not reschedule it here either).
            self._manager.schedule_session(member, now_ms)
        self._manager.maybe_prepare_rebalance_or_complete_join(group, now_ms)

    # -- SyncGroup -------------------------------------------------------------

    def sync(self, key: Hashable, req: SyncGroupRequest, now_ms: int) -> None:
        def fail(code: ErrorCode) -> None:
            self._deliver(key, SyncGroupResponse(code))

        if not req.group_id:
            return fail(E.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if group is None:
            consumer_group = self._context.consumer_group(req.group_id)
            if consumer_group is not None:
                return self._deliver(key, self._classic_members.sync(consumer_group, req, now_ms))
            return fail(E.UNKNOWN_MEMBER_ID)
        if group.is_(S.DEAD):
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        code = group.validate_member(req.member_id, req.group_instance_id)
        if code is not E.NONE:
            return fail(code)
        member = group.members[req.member_id]
        if req.generation_id != group.generation_id:
            return fail(E.ILLEGAL_GENERATION)
        if ((req.protocol_type is not None and req.protocol_type != group.protocol_type)
                or (req.protocol_name is not None and req.protocol_name != group.protocol_name)):
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        state = group.state
        if state is S.PREPARING_REBALANCE:
            return fail(E.REBALANCE_IN_PROGRESS)
        manager = self._manager
        if state is S.STABLE:
            manager.synced(group, member.member_id)
            manager.schedule_session(member, now_ms)
            self._deliver(key, SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name,
                                                 member.assignment))
            return
        if state is not S.COMPLETING_REBALANCE:
            return fail(E.UNKNOWN_MEMBER_ID)
        superseded = group.park_sync(member, key)
        if superseded is not None:
            self._deliver(superseded, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
        manager.synced(group, member.member_id)
        manager.schedule_session(member, now_ms)
        if req.member_id != group.leader_id:
            return
        group.assign({a.member_id: a.assignment for a in req.assignments})
        group.transition_to(S.STABLE)
        for m in group.members.values():
            sync_key = group.take_sync_key(m)
            if sync_key is not None:
                self._deliver(sync_key, SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name,
                                                          m.assignment))
                manager.schedule_session(m, now_ms)

    # -- Heartbeat -------------------------------------------------------------

    def heartbeat(self, key: Hashable, req: HeartbeatRequest, now_ms: int) -> None:
        self._deliver(key, HEARTBEAT_RESPONSES[self.heartbeat_code(req, now_ms)])

    def heartbeat_code(self, req: HeartbeatRequest, now_ms: int) -> ErrorCode:
        if not req.group_id:
            return E.INVALID_GROUP_ID
        group = self._groups.get(req.group_id)
        if group is None:
            # A group id has one type: the consumer group is looked up only when there is no classic one.
            consumer_group = self._context.consumer_group(req.group_id)
            if consumer_group is not None:
                return self._classic_members.heartbeat(consumer_group, req, now_ms)
            return E.UNKNOWN_MEMBER_ID
        code, member = group.heartbeat(req.member_id, req.group_instance_id, req.generation_id)
        if member is not None:
            self._manager.schedule_session(member, now_ms)
        return code

    # -- LeaveGroup ------------------------------------------------------------

    def leave(self, key: Hashable, req: LeaveGroupRequest, now_ms: int) -> None:
        if not req.group_id:
            return self._deliver(key, LeaveGroupResponse(E.INVALID_GROUP_ID))
        group = self._groups.get(req.group_id)
        if group is None:
            consumer_group = self._context.consumer_group(req.group_id)
            if consumer_group is not None:
                return self._deliver(key, self._classic_members.leave(consumer_group, req, now_ms))
            # Kafka 4.x answers an unknown group per member (UNKNOWN_MEMBER_ID each, NONE at the top);
            # v0-v2 carry the one member's error at the top (conformance classic.leave.unknown-group).
            return self._deliver(key, LeaveGroupResponse(E.NONE, tuple(
                LeaveGroupMemberResponse(m.member_id, m.group_instance_id, E.UNKNOWN_MEMBER_ID)
                for m in req.members)))
        if group.is_(S.DEAD):
            return self._deliver(key, LeaveGroupResponse(E.COORDINATOR_NOT_AVAILABLE))
        results = []
        members_before = len(group.members)
        for ident in req.members:
            code = self._leave_one(group, ident.member_id, ident.group_instance_id)
            results.append(LeaveGroupMemberResponse(ident.member_id, ident.group_instance_id, code))
        if len(group.members) < members_before:
            self._manager.update_group_after_removal(group, now_ms)
        elif group.is_(S.PREPARING_REBALANCE):
            # Only pending members left: that alone may complete the join, never start one.
            self._manager.maybe_complete_join(group, now_ms)
        self._deliver(key, LeaveGroupResponse(E.NONE, tuple(results)))

    def _leave_one(self, group: Group, member_id: str, instance_id: Optional[str]) -> ErrorCode:
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            if member_id != UNKNOWN_MEMBER_ID and member_id != current:
                return E.FENCED_INSTANCE_ID
            self._manager.remove_member(group, group.members[current])
            return E.NONE
        if member_id in group.pending_members:
            self._manager.drop_pending(group, member_id)
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        self._manager.remove_member(group, member)
        return E.NONE


def _owes_follow_up_rejoin(group: Group, member: Member) -> bool:
    """The replaced incarnation of a static member was told to revoke partitions it owned and had not
    rejoined since (KIP-429's second round): its last subscription claims partitions its assignment
    lacks.

    Kafka hands the new process the stored assignment without a rebalance whatever the old one
    owed; the follow-up JoinGroup lived only in the old process, so the partitions it was revoking
    then stay unowned for good (kgroup's fault campaign, seed 4976; docs/fault_campaign.md).
    kgroup rebalances instead.  Metadata that is not ConsumerProtocol owes nothing.
    """
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    metadata = next((p.metadata for p in member.protocols if p.name == group.protocol_name), None)
    if metadata is None:
        return False
    try:
        owned = decode_subscription(metadata).owned_partitions
        assigned = decode_assignment(member.assignment).partitions if member.assignment else ()
    except InvalidProtocolMetadata:  # not ConsumerProtocol bytes: nothing to read, nothing owed
        return False
    return bool(set(owned) - set(assigned))
