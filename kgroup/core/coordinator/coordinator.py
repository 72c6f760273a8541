"""Request handlers of the in-memory group coordinator (Kafka's classic group protocol).

Sans-I/O: every call takes ``now_ms`` and returns a :class:`CoordinatorResult`
with the responses that became ready and the records that describe what
changed.  Parked JoinGroup / SyncGroup requests are answered from a later
call (another member's request or a timer).
"""
from __future__ import annotations

import uuid
from typing import Callable, Hashable, Iterable, Optional, cast

from kgroup.core.coordinator.admin import AdminHandlers
from kgroup.core.coordinator.config import GroupCoordinatorConfig
from kgroup.core.coordinator.group import Group, Member, TransitionObserver, session_key
from kgroup.core.coordinator.offsets import OffsetHandlers
from kgroup.core.coordinator.records import MemberTombstone, PersistedGroup, PersistedView, Record, replay
from kgroup.core.coordinator.results import CoordinatorResult, Delivery
from kgroup.core.coordinator.state import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    UNKNOWN_MEMBER_ID, DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, HeartbeatResponse,
    JoinGroupMember, JoinGroupRequest, JoinGroupResponse, LeaveGroupMemberResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.core.timers import KeyedTimers

E = ErrorCode
S = GroupState
_DEFAULT_CONFIG = GroupCoordinatorConfig()


#: Responses are immutable values, so one per error code is shared.
_HEARTBEAT_RESPONSES = {code: HeartbeatResponse(code) for code in ErrorCode}


def _uuid_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class GroupCoordinator(OffsetHandlers, AdminHandlers):
    def __init__(self, config: GroupCoordinatorConfig = _DEFAULT_CONFIG, *,
                 member_id_factory: Optional[Callable[[str], str]] = None,
                 on_transition: Optional[TransitionObserver] = None) -> None:
        self.config = config
        self._new_member_id = member_id_factory or _uuid_member_id
        self._observer = on_transition
        self._groups: dict[str, Group] = {}
        # ("join", group_id), ("sync", group_id) and ("session", group_id, member_id) deadlines.
        self._timers = KeyedTimers()
        self._deliveries: list[Delivery] = []
        self._records: list[Record] = []
        self._touched: set[str] = set()
        self._now_ms = 0
        self._handlers = {
            JoinGroupRequest: self._join,
            SyncGroupRequest: self._sync,
            HeartbeatRequest: self._heartbeat,
            LeaveGroupRequest: self._leave,
            OffsetCommitRequest: self._offset_commit,
            OffsetFetchRequest: self._offset_fetch,
            DescribeGroupsRequest: self._describe,
            ListGroupsRequest: self._list,
            DeleteGroupsRequest: self._delete,
        }

    # -- public API ------------------------------------------------------------

    def handle(self, request_key: Hashable, request: object, now_ms: int) -> CoordinatorResult:
        if type(request) is HeartbeatRequest:
            # Hot path: a heartbeat changes no persisted state, so it skips the record flush.
            self._now_ms = now_ms
            response = _HEARTBEAT_RESPONSES[self._heartbeat_code(request)]
            return CoordinatorResult((Delivery(request_key, response),))
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"GroupCoordinator cannot handle {type(request).__name__}")
        self._now_ms = now_ms
        try:
            handler(request_key, request)
        except Exception:
            # The host answers a request that raised (an InProcessHub with UNKNOWN_SERVER_ERROR):
            # nothing queued for it may be released later as a second answer.
            self._deliveries = [d for d in self._deliveries if d.request_key != request_key]
            raise
        return self._flush()

    def on_timers(self, now_ms: int) -> CoordinatorResult:
        self._now_ms = now_ms
        while True:
            due = self._timers.pop_due(now_ms)
            if not due:
                break
            for due_key in due:
                # A key re-armed by an earlier callback in this batch is no longer due.
                if due_key in self._timers:
                    continue
                key = cast(tuple, due_key)  # every key this coordinator schedules is a tuple
                if key[0] == "join":
                    self._on_join_timer(key[1])
                elif key[0] == "sync":
                    self._on_sync_timer(key[1])
                else:
                    self._on_session_timer(key[1], key[2])
        return self._flush()

    def next_deadline_ms(self) -> Optional[int]:
        return self._timers.next_deadline_ms()

    def group_state(self, group_id: str) -> Optional[GroupState]:
        group = self._groups.get(group_id)
        return None if group is None else group.state

    def session_deadline_ms(self, group_id: str, member_id: str) -> Optional[int]:
        """When the member (or pending member) expires unless it is heard from."""
        return self._timers.deadline_of(session_key(group_id, member_id))

    def group_ids(self) -> list[str]:
        return [gid for gid, group in self._groups.items() if not group.is_(S.Dead)]

    def persisted_view(self) -> PersistedView:
        groups = {}
        offsets = {}
        for gid, group in self._groups.items():
            if group.is_(S.Dead):
                continue
            members = {mid: m.record(gid) for mid, m in group.members.items()}
            groups[gid] = PersistedGroup(group.header_record(), members)
            if group.offsets:
                offsets[gid] = dict(group.offsets)
        return PersistedView(groups=groups, offsets=offsets)

    @classmethod
    def load(cls, records: Iterable[Record], now_ms: int, config: GroupCoordinatorConfig = _DEFAULT_CONFIG, *,
             member_id_factory: Optional[Callable[[str], str]] = None,
             on_transition: Optional[TransitionObserver] = None) -> "GroupCoordinator":
        """Rebuild from records, e.g. when this coordinator takes over a partition.

        Parked requests are not in the records: members simply retry.  Every
        loaded member gets a fresh session deadline, as Kafka does on load.
        """
        coordinator = cls(config, member_id_factory=member_id_factory, on_transition=on_transition)
        coordinator._now_ms = now_ms
        view = replay(records)
        for gid, persisted in view.groups.items():
            header = persisted.header
            group = Group(gid, on_transition, initial=GroupState(header.state))
            group.generation_id = header.generation_id
            group.protocol_type = header.protocol_type
            group.protocol_name = header.protocol_name
            group.leader_id = header.leader_id
            for record in persisted.members.values():
                member = Member(gid, record.member_id, record.group_instance_id, record.client_id,
                                record.client_host, record.session_timeout_ms, record.rebalance_timeout_ms,
                                record.protocols, record.assignment)
                group.members[member.member_id] = member
                group.supported_protocols.update(member.protocol_names)
                if member.group_instance_id is not None:
                    group.static_members[member.group_instance_id] = member.member_id
                coordinator._schedule_session(member)
            group.persisted_header = header
            group.persisted_members = dict(persisted.members)
            group.offsets = dict(view.offsets.get(gid, {}))
            coordinator._groups[gid] = group
            if group.is_(S.PreparingRebalance):
                # Nobody's join is parked any more: give members a rebalance timeout to rejoin.
                coordinator._schedule_join(group, now_ms + group.rebalance_timeout_ms(), initial=False)
            elif group.is_(S.CompletingRebalance):
                # Nobody has synced with this coordinator yet.
                coordinator._await_syncs(group)
            over_capacity = len(group.members) > config.group_max_size
            if over_capacity and (group.is_(S.Stable) or group.is_(S.CompletingRebalance)):
                # The limit was lowered: rebalance so the last rejoiners are kicked out (Kafka's
                # GroupMetadataManager replay: "Freshly-loaded group ... is over capacity").
                coordinator._prepare_rebalance(group)
        # A group that changed state while loading stays touched: its new header is emitted by the
        # next call's flush.
        return coordinator

    def resign(self, code: ErrorCode = E.NOT_COORDINATOR) -> CoordinatorResult:
        """Answer every parked JoinGroup / SyncGroup with ``code``; the host drops this coordinator.

        Called when the broker stops leading the group's offsets partition
        (or must revert to what the log holds): parked members learn at once
        that they have to look for the coordinator again.
        """
        deliveries = []
        for group in self._groups.values():
            for member in group.members.values():
                if member.join_key is not None:
                    response = JoinGroupResponse(code, member_id=member.member_id)
                    deliveries.append(Delivery(member.join_key, response))
                    member.join_key = None
                if member.sync_key is not None:
                    deliveries.append(Delivery(member.sync_key, SyncGroupResponse(code)))
                    member.sync_key = None
        self._groups = {}
        self._timers = KeyedTimers()
        self._deliveries = []
        self._records = []
        self._touched.clear()
        return CoordinatorResult(tuple(deliveries))

    # -- plumbing --------------------------------------------------------------

    def _deliver(self, key: Hashable, response: object) -> None:
        self._deliveries.append(Delivery(key, response))

    def _flush(self) -> CoordinatorResult:
        records = self._records
        for gid in self._touched:
            group = self._groups.get(gid)
            if group is None or group.is_(S.Dead):
                continue
            header = group.header_record()
            if header != group.persisted_header:
                records.append(header)
                group.persisted_header = header
            persisted = group.persisted_members
            for mid in group.dirty_members:
                member = group.members.get(mid)
                if member is None:
                    if persisted.pop(mid, None) is not None:
                        records.append(MemberTombstone(gid, mid))
                    continue
                record = member.record(gid)
                if persisted.get(mid) != record:
                    records.append(record)
                    persisted[mid] = record
            group.dirty_members.clear()
        self._touched.clear()
        result = CoordinatorResult(tuple(self._deliveries), tuple(records))
        self._deliveries = []
        self._records = []
        return result

    def _schedule_session(self, member: Member) -> None:
        self._timers.schedule(member.session_key, self._now_ms + member.session_timeout_ms)

    def _schedule_join(self, group: Group, deadline_ms: int, initial: bool) -> None:
        group.join_is_initial = initial
        self._timers.schedule(group.join_key, deadline_ms)

    def _cancel(self, key: tuple) -> None:
        self._timers.cancel(key)

    def _create_group(self, group_id: str) -> Group:
        group = Group(group_id, self._observer)
        self._groups[group_id] = group
        self._touched.add(group_id)
        return group

    # -- JoinGroup -------------------------------------------------------------

    def _join(self, key: Hashable, req: JoinGroupRequest) -> None:
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
        group = self._groups.get(req.group_id)
        if group is None or (group.is_(S.Dead) and unknown):
            if not unknown:
                return fail(E.UNKNOWN_MEMBER_ID)
            # A deleted group's id is free again: a new member creates a new group.
            group = self._create_group(req.group_id)
        self._touched.add(group.group_id)
        if not self._accepts_joining(group, None if unknown else req.member_id):
            # Kafka's classicGroupJoinToClassicGroup: the member (pending or not) is removed and told
            # so with no member id; a retry with the old id is judged the same way.
            self._reject_over_max_size(group, req.member_id)
            self._deliver(key, JoinGroupResponse(E.GROUP_MAX_SIZE_REACHED))
            return
        if group.is_(S.Dead):
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(req.protocol_type, names):
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        if unknown:
            self._join_new_member(key, group, req)
        else:
            self._join_existing_member(key, group, req)

    def _accepts_joining(self, group: Group, member_id: Optional[str]) -> bool:
        """GROUP_MAX_SIZE check, Kafka's acceptJoiningMember."""
        limit = self.config.group_max_size
        state = group.state
        if state is S.Empty or state is S.Dead:
            return True
        member = group.members.get(member_id) if member_id is not None else None
        if state is S.PreparingRebalance:
            # Counting members awaiting the join (not all members) kicks out the last rejoiners
            # of a group that is over a lowered limit.
            return (member is not None and member.join_key is not None) or group.num_awaiting_join < limit
        return member is not None or len(group.members) < limit

    def _reject_over_max_size(self, group: Group, member_id: str) -> None:
        if member_id in group.pending_members:
            self._drop_pending(group, member_id)
        else:
            member = group.members.get(member_id)
            if member is None:
                return
            self._remove_member(group, member)
        if group.is_(S.PreparingRebalance):
            # The members left may all have joined already.
            self._maybe_complete_join(group)

    def _join_new_member(self, key: Hashable, group: Group, req: JoinGroupRequest) -> None:
        instance_id = req.group_instance_id
        new_id = self._new_member_id(instance_id if instance_id is not None else req.client_id)
        if instance_id is not None:
            # Static members skip the MEMBER_ID_REQUIRED round trip (KIP-345).
            self._join_new_static_member(key, group, req, new_id)
        elif req.api_version >= 4:
            group.pending_members.add(new_id)
            self._timers.schedule(session_key(group.group_id, new_id), self._now_ms + req.session_timeout_ms)
            self._deliver(key, JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member_and_rebalance(key, group, req, new_id)

    def _join_new_static_member(self, key: Hashable, group: Group, req: JoinGroupRequest,
                                new_id: str) -> None:
        """Kafka's updateStaticMemberThenRebalanceOrCompleteJoin (KIP-345, KIP-814)."""
        instance_id = req.group_instance_id
        old_id = group.static_members.get(instance_id)
        if old_id is None:
            self._add_member_and_rebalance(key, group, req, new_id)
            return
        old = group.members[old_id]
        previous_leader_id = group.leader_id
        new = Member(group.group_id, new_id, instance_id, old.client_id, old.client_host,
                     req.session_timeout_ms, req.rebalance_timeout_ms, req.protocols)
        group.replace_static_member(instance_id, old_id, new)
        self._cancel(old.session_key)
        # The old incarnation is fenced: its parked requests are answered so.
        if old.join_key is not None:
            self._deliver(old.join_key, JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=old_id))
            old.join_key = None
        if old.sync_key is not None:
            self._deliver(old.sync_key, SyncGroupResponse(E.FENCED_INSTANCE_ID))
            old.sync_key = None
        self._schedule_session(new)
        if group.is_(S.Stable) and group.select_protocol() == group.protocol_name:
            # A restarted process cannot reproduce its subscription bytes (owned partitions,
            # generation), so only a change of the selected protocol forces a rebalance; the
            # member gets its stored assignment back through SyncGroup.
            if req.api_version >= 9:
                # KIP-814: a replaced leader gets the members but must not reassign.
                is_leader = group.leader_id == new_id
                self._deliver(key, self._join_response(group, new, is_leader, skip_assignment=is_leader))
            else:
                # Before v9 the client cannot skip the assignment: it is told the old leader
                # id, so it acts as a follower.
                self._deliver(key, JoinGroupResponse(
                    E.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name, leader=previous_leader_id or "", member_id=new_id))
            return
        group.set_join_key(new, key)
        if group.is_(S.Stable) or group.is_(S.CompletingRebalance):
            # In CompletingRebalance the leader may already be assigning with the old member id.
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join(group)

    def _join_existing_member(self, key: Hashable, group: Group, req: JoinGroupRequest) -> None:
        mid = req.member_id
        if mid in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka: "pending member cannot be a static member" (an IllegalStateException, which
                # the broker answers UNKNOWN_SERVER_ERROR); joining would map one instance id to two
                # members.
                self._deliver(key, JoinGroupResponse(E.UNKNOWN_SERVER_ERROR, member_id=mid))
                return
            group.pending_members.discard(mid)
            self._cancel(session_key(group.group_id, mid))
            self._add_member_and_rebalance(key, group, req, mid)
            return
        code = group.validate_member(mid, req.group_instance_id)
        if code is not E.NONE:
            self._deliver(key, JoinGroupResponse(code, member_id=mid))
            return
        member = group.members[mid]
        state = group.state
        if state is S.PreparingRebalance:
            self._update_member_and_rebalance(key, group, member, req)
        elif state is S.CompletingRebalance:
            if member.matches(req.protocols):
                # The member missed its JoinGroup response: send it again.
                self._schedule_session(member)
                self._deliver(key, self._join_response(group, member, mid == group.leader_id))
            else:
                self._update_member_and_rebalance(key, group, member, req)
        elif state is S.Stable:
            if mid == group.leader_id or not member.matches(req.protocols):
                # A leader's rejoin means it wants a new assignment (e.g. metadata changed).
                self._update_member_and_rebalance(key, group, member, req)
            else:
                self._schedule_session(member)
                self._deliver(key, self._join_response(group, member, False))
        else:
            self._deliver(key, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=mid))

    def _join_response(self, group: Group, member: Member, is_leader: bool,
                       skip_assignment: bool = False) -> JoinGroupResponse:
        members = ()
        if is_leader:
            protocol = group.protocol_name
            members = tuple(JoinGroupMember(m.member_id, m.group_instance_id, m.metadata_for(protocol))
                            for m in group.members.values())
        return JoinGroupResponse(
            E.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
            protocol_name=group.protocol_name, leader=group.leader_id or "", member_id=member.member_id,
            members=members, skip_assignment=skip_assignment,
        )

    def _add_member_and_rebalance(self, key: Hashable, group: Group, req: JoinGroupRequest,
                                  member_id: str) -> None:
        member = Member(group.group_id, member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.session_timeout_ms, req.rebalance_timeout_ms, req.protocols)
        if not group.members:
            group.protocol_type = req.protocol_type
        group.add(member, key)
        if group.is_(S.PreparingRebalance) and group.previous_state is S.Empty:
            group.new_member_added = True
        # A client that gave up on its parked first JoinGroup retries with a new member id; the
        # abandoned member would hold the rebalance forever, so a new member's join times out
        # (Kafka's addMemberThenRebalanceOrCompleteJoin, new member join timeout).
        member.is_new = True
        self._timers.schedule(member.session_key, self._now_ms + self.config.group_new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_member_and_rebalance(self, key: Hashable, group: Group, member: Member,
                                     req: JoinGroupRequest) -> None:
        if member.join_key is not None and member.join_key != key:
            # Kafka drops the superseded callback; we answer it so no caller waits forever.
            superseded = JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=member.member_id)
            self._deliver(member.join_key, superseded)
        if not member.matches(req.protocols):
            group.update_protocols(member, req.protocols)
        timeouts = (req.session_timeout_ms, req.rebalance_timeout_ms)
        if (member.session_timeout_ms, member.rebalance_timeout_ms) != timeouts:
            member.session_timeout_ms = req.session_timeout_ms
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
            group.dirty_members.add(member.member_id)
        group.set_join_key(member, key)
        if not member.is_new:
            # A new member keeps its join timeout (Kafka does not reschedule it here either).
            self._schedule_session(member)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _maybe_prepare_rebalance_or_complete_join(self, group: Group) -> None:
        if group.fsm.can_transition_to(S.PreparingRebalance):
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join(group)

    def _prepare_rebalance(self, group: Group) -> None:
        if group.is_(S.CompletingRebalance):
            self._reset_assignments(group, E.REBALANCE_IN_PROGRESS)
        group.pending_sync_members.clear()
        self._cancel(group.sync_key)
        initial = group.is_(S.Empty)
        if initial:
            rebalance_timeout_ms = group.rebalance_timeout_ms()
            # Kafka's prepareRebalance: the first wait is the whole configured delay; only the
            # extensions while members keep arriving are capped by the rebalance timeout.
            delay_ms = self.config.group_initial_rebalance_delay_ms
            group.new_member_added = False
            group.initial_delay_ms = delay_ms
            group.initial_remaining_ms = max(rebalance_timeout_ms - delay_ms, 0)
            self._schedule_join(group, self._now_ms + delay_ms, initial=True)
        group.transition_to(S.PreparingRebalance)
        self._touched.add(group.group_id)
        if not initial:
            self._schedule_join(group, self._now_ms + group.rebalance_timeout_ms(), initial=False)
            self._maybe_complete_join(group)

    def _reset_assignments(self, group: Group, code: ErrorCode) -> None:
        """The generation being synced is abandoned: drop its assignment, fail parked syncs."""
        for member in group.members.values():
            if member.assignment:
                member.assignment = b""
                group.dirty_members.add(member.member_id)
            if member.sync_key is not None:
                self._deliver(member.sync_key, SyncGroupResponse(code))
                member.sync_key = None
                # Kafka's propagateAssignment: answering a sync (with an error too) restarts the
                # session, so a follower does not expire together with a leader that never synced.
                self._schedule_session(member)

    def _maybe_complete_join(self, group: Group) -> None:
        # The initial delay is never cut short (Kafka's InitialDelayedJoin).
        if (group.is_(S.PreparingRebalance) and group.has_all_members_joined()
                and group.previous_state is not S.Empty):
            self._cancel(group.join_key)
            self._complete_join(group)

    def _on_join_timer(self, group_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None or not group.is_(S.PreparingRebalance):
            return
        self._touched.add(group_id)
        if group.join_is_initial and group.new_member_added and group.initial_remaining_ms > 0:
            # New members arrived during the delay: wait once more, up to the rebalance timeout.
            group.new_member_added = False
            delay_ms = min(group.initial_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            self._schedule_join(group, self._now_ms + delay_ms, initial=True)
            return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.num_awaiting_join < len(group.members):
            not_rejoined = [m for m in group.members.values()
                            if m.join_key is None and m.group_instance_id is None]
            for member in not_rejoined:
                self._remove_member(group, member)
        if group.members and group.num_awaiting_join == 0:
            # Only static members that did not rejoin remain: wait for them (or their session expiry).
            self._schedule_join(group, self._now_ms + max(group.rebalance_timeout_ms(), 1), initial=False)
            return
        leader = group.members.get(group.leader_id) if group.leader_id is not None else None
        if leader is None or leader.join_key is None:
            rejoined = (m.member_id for m in group.members.values() if m.join_key is not None)
            group.leader_id = next(rejoined, None)
        group.generation_id += 1
        self._touched.add(group.group_id)
        if not group.members:
            group.protocol_name = None
            group.transition_to(S.Empty)
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(S.CompletingRebalance)
        leader_id = group.leader_id
        for member in group.members.values():
            if member.join_key is not None:
                is_leader = member.member_id == leader_id
                self._deliver(member.join_key, self._join_response(group, member, is_leader))
                group.set_join_key(member, None)
            member.is_new = False
            self._schedule_session(member)
        self._await_syncs(group)

    def _await_syncs(self, group: Group) -> None:
        """Every member must sync within the rebalance timeout (Kafka's schedulePendingSync)."""
        group.pending_sync_members = set(group.members)
        self._timers.schedule(group.sync_key, self._now_ms + group.rebalance_timeout_ms())

    def _on_sync_timer(self, group_id: str) -> None:
        """Kafka's expirePendingSync: members that never synced are removed and the group rebalances."""
        group = self._groups.get(group_id)
        if group is None or not (group.is_(S.CompletingRebalance) or group.is_(S.Stable)):
            return
        if not group.pending_sync_members:
            return
        self._touched.add(group_id)
        for member_id in list(group.pending_sync_members):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member(group, member)
        group.pending_sync_members.clear()
        self._prepare_rebalance(group)

    def _synced(self, group: Group, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel(group.sync_key)

    # -- membership removal ----------------------------------------------------

    def _drop_pending(self, group: Group, member_id: str) -> None:
        group.pending_members.discard(member_id)
        self._cancel(session_key(group.group_id, member_id))

    def _remove_member(self, group: Group, member: Member) -> None:
        group.remove(member.member_id)
        self._cancel(member.session_key)
        if member.join_key is not None:
            # Kafka's removeMemberAndUpdateClassicGroup answers with no member id: the client
            # must join again as a new member.
            self._deliver(member.join_key, JoinGroupResponse(E.UNKNOWN_MEMBER_ID))
            member.join_key = None
        if member.sync_key is not None:
            self._deliver(member.sync_key, SyncGroupResponse(E.UNKNOWN_MEMBER_ID))
            member.sync_key = None

    def _update_group_after_removal(self, group: Group) -> None:
        state = group.state
        if state is S.Stable or state is S.CompletingRebalance:
            self._prepare_rebalance(group)
        elif state is S.PreparingRebalance:
            self._maybe_complete_join(group)

    def _on_session_timer(self, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        self._touched.add(group_id)
        if member_id in group.pending_members:
            self._drop_pending(group, member_id)
            if group.is_(S.PreparingRebalance):
                self._maybe_complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.is_new and (member.join_key is not None or member.sync_key is not None):
            # Awaiting a response counts as alive (Kafka's ClassicGroupMember.hasSatisfiedHeartbeat),
            # except for a new member, whose join timeout this deadline is.
            # Re-armed strictly later so on_timers cannot spin on a zero timeout.
            self._timers.schedule(member.session_key, self._now_ms + max(member.session_timeout_ms, 1))
            return
        self._remove_member(group, member)
        self._update_group_after_removal(group)

    # -- SyncGroup -------------------------------------------------------------

    def _sync(self, key: Hashable, req: SyncGroupRequest) -> None:
        def fail(code: ErrorCode) -> None:
            self._deliver(key, SyncGroupResponse(code))

        if not req.group_id:
            return fail(E.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if group is None:
            return fail(E.UNKNOWN_MEMBER_ID)
        if group.is_(S.Dead):
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
        if state is S.PreparingRebalance:
            return fail(E.REBALANCE_IN_PROGRESS)
        if state is S.Stable:
            self._synced(group, member.member_id)
            self._schedule_session(member)
            self._deliver(key, SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name,
                                                 member.assignment))
            return
        if state is not S.CompletingRebalance:
            return fail(E.UNKNOWN_MEMBER_ID)
        if member.sync_key is not None and member.sync_key != key:
            self._deliver(member.sync_key, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
        member.sync_key = key
        self._synced(group, member.member_id)
        self._schedule_session(member)
        if req.member_id != group.leader_id:
            return
        self._touched.add(group.group_id)
        assignments = {a.member_id: a.assignment for a in req.assignments}
        for m in group.members.values():
            assignment = assignments.get(m.member_id, b"")
            if m.assignment != assignment:
                m.assignment = assignment
                group.dirty_members.add(m.member_id)
        group.transition_to(S.Stable)
        for m in group.members.values():
            if m.sync_key is not None:
                self._deliver(m.sync_key, SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name,
                                                            m.assignment))
                m.sync_key = None
                self._schedule_session(m)

    # -- Heartbeat -------------------------------------------------------------

    def _heartbeat(self, key: Hashable, req: HeartbeatRequest) -> None:
        self._deliver(key, _HEARTBEAT_RESPONSES[self._heartbeat_code(req)])

    def _heartbeat_code(self, req: HeartbeatRequest) -> ErrorCode:
        if not req.group_id:
            return E.INVALID_GROUP_ID
        group = self._groups.get(req.group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        state = group.fsm.state
        if state is S.Dead:
            return E.COORDINATOR_NOT_AVAILABLE
        code = group.validate_member(req.member_id, req.group_instance_id)
        if code is not E.NONE:
            return code
        member = group.members[req.member_id]
        if req.generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if state is S.Empty:
            return E.UNKNOWN_MEMBER_ID
        self._timers.schedule(member.session_key, self._now_ms + member.session_timeout_ms)
        return E.REBALANCE_IN_PROGRESS if state is S.PreparingRebalance else E.NONE

    # -- LeaveGroup ------------------------------------------------------------

    def _leave(self, key: Hashable, req: LeaveGroupRequest) -> None:
        if not req.group_id:
            return self._deliver(key, LeaveGroupResponse(E.INVALID_GROUP_ID))
        group = self._groups.get(req.group_id)
        if group is None:
            return self._deliver(key, LeaveGroupResponse(E.UNKNOWN_MEMBER_ID))
        if group.is_(S.Dead):
            return self._deliver(key, LeaveGroupResponse(E.COORDINATOR_NOT_AVAILABLE))
        self._touched.add(group.group_id)
        results = []
        members_before = len(group.members)
        for ident in req.members:
            code = self._leave_one(group, ident.member_id, ident.group_instance_id)
            results.append(LeaveGroupMemberResponse(ident.member_id, ident.group_instance_id, code))
        if len(group.members) < members_before:
            self._update_group_after_removal(group)
        elif group.is_(S.PreparingRebalance):
            # Only pending members left: that alone may complete the join, never start one.
            self._maybe_complete_join(group)
        self._deliver(key, LeaveGroupResponse(E.NONE, tuple(results)))

    def _leave_one(self, group: Group, member_id: str, instance_id: Optional[str]) -> ErrorCode:
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            if member_id != UNKNOWN_MEMBER_ID and member_id != current:
                return E.FENCED_INSTANCE_ID
            self._remove_member(group, group.members[current])
            return E.NONE
        if member_id in group.pending_members:
            self._drop_pending(group, member_id)
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        self._remove_member(group, member)
        return E.NONE
