"""Request handlers of the in-memory group coordinator (Kafka's classic and consumer group protocols).

Classic groups are handled here; KIP-848 consumer groups by
:class:`kgroup.core.consumer_group.manager.ConsumerGroupManager`, which this
coordinator owns.  A group id has one type at a time.

Sans-I/O: every call takes ``now_ms`` and returns a :class:`CoordinatorResult`
with the responses that became ready and the records that describe what
changed.  Parked JoinGroup / SyncGroup requests are answered from a later
call (another member's request or a timer).
"""
from __future__ import annotations

import uuid
from typing import Callable, Hashable, Iterable, Mapping, Optional, cast

import attrs

from kgroup.assignors.server_base import ServerAssignor
from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.core.consumer_group.manager import ConsumerGroupManager, TopicMetadata
from kgroup.core.consumer_group_messages import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from kgroup.core.coordinator.admin import AdminHandler
from kgroup.core.coordinator.config import GroupCoordinatorConfig
from kgroup.core.coordinator.group import (
    Group, GroupInvariantViolation, Member, TransitionObserver, session_key,
)
from kgroup.core.coordinator.offsets import OffsetHandler
from kgroup.core.coordinator.records import PersistedGroup, PersistedView, Record, replay
from kgroup.core.coordinator.results import CoordinatorResult, Delivery
from kgroup.core.coordinator.state import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    CONSUMER_PROTOCOL_TYPE, UNKNOWN_MEMBER_ID, DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember, JoinGroupRequest, JoinGroupResponse, LeaveGroupMemberResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
    SyncGroupRequest, SyncGroupResponse,
)
from kgroup.core.timers import KeyedTimers
from kgroup.errors import InvalidProtocolMetadata
from kgroup.wire.consumer_protocol import decode_assignment, decode_subscription

E = ErrorCode
S = GroupState
_DEFAULT_CONFIG = GroupCoordinatorConfig()
#: What a timer round with nothing due and nothing pending returns (a frozen value, so shared).
_NOTHING = CoordinatorResult()


def _no_topics(topic: str) -> Optional[int]:
    return None


#: Responses are immutable values, so one per error code is shared.
_HEARTBEAT_RESPONSES = {code: HeartbeatResponse(code) for code in ErrorCode}


def _uuid_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


@attrs.frozen
class _InitialDelay:
    """The armed join timer is a new group's initial delay (Kafka's InitialDelayedJoin)."""

    delay_ms: int
    #: How much longer later arrivals may extend it (the rebalance timeout caps the whole wait).
    remaining_ms: int


class GroupCoordinator:
    def __init__(self, config: GroupCoordinatorConfig = _DEFAULT_CONFIG, *,
                 member_id_factory: Optional[Callable[[str], str]] = None,
                 on_transition: Optional[TransitionObserver] = None,
                 topic_metadata: TopicMetadata = _no_topics,
                 server_assignors: Optional[Mapping[str, ServerAssignor]] = None) -> None:
        """``topic_metadata`` maps a topic name to its partition count (None: no such topic); only
        KIP-848 consumer groups need it, because their coordinator computes the assignment.
        ``server_assignors`` are assignor instances by name used before the registry's."""
        self.config = config
        self._topic_metadata = topic_metadata
        self._new_member_id = member_id_factory or _uuid_member_id
        self._observer = on_transition
        # Never rebound: the offset and admin handlers hold this mapping.
        self._groups: dict[str, Group] = {}
        # ("join", group_id), ("sync", group_id) and ("session", group_id, member_id) deadlines.
        self._timers = KeyedTimers()
        #: Groups whose armed join timer is the initial delay, with its bookkeeping.
        self._initial_delays: dict[str, _InitialDelay] = {}
        self._deliveries: list[Delivery] = []
        self._records: list[Record] = []
        #: Ids of groups with changes not yet written as records (insertion-ordered), filled by the
        #: groups themselves (Group's on_change).
        self._changed_groups: dict[str, None] = {}
        #: KIP-848 consumer groups (never rebound either: the manager and handlers hold it).
        self._consumer_groups: dict[str, ConsumerGroup] = {}
        self._consumer = ConsumerGroupManager(
            config, self._consumer_groups, classic_group_state=self._classic_group_state,
            release_empty_classic_group=self._release_empty_classic_group, topic_metadata=topic_metadata,
            schedule=lambda key, deadline_ms: self._timers.schedule(key, deadline_ms),
            cancel=lambda key: self._timers.cancel(key), emit=self._emit, observer=on_transition,
            server_assignors=server_assignors)
        self._offsets = OffsetHandler(self._groups, self._create_group, self._schedule_session, self._emit,
                                      self._consumer_groups, config.offset_metadata_max_bytes)
        self._admin = AdminHandler(self._groups, self._cancel_group_timers, self._emit, self._consumer_groups,
                                   config.consumer_group_assignors[0])
        self._handlers: dict[type, Callable[..., None]] = {
            JoinGroupRequest: self._join,
            SyncGroupRequest: self._sync,
            HeartbeatRequest: self._heartbeat,
            LeaveGroupRequest: self._leave,
            OffsetCommitRequest: self._offset_commit,
            OffsetFetchRequest: self._offset_fetch,
            OffsetDeleteRequest: self._offset_delete,
            DescribeGroupsRequest: self._describe,
            ListGroupsRequest: self._list,
            DeleteGroupsRequest: self._delete,
            ConsumerGroupHeartbeatRequest: self._consumer_group_heartbeat,
            ConsumerGroupDescribeRequest: self._consumer_group_describe,
        }

    # -- public API ------------------------------------------------------------

    def handle(self, request_key: Hashable, request: object, now_ms: int) -> CoordinatorResult:
        if type(request) is HeartbeatRequest:
            # Hot path: a heartbeat changes no persisted state, so it skips the record flush.
            response = _HEARTBEAT_RESPONSES[self._heartbeat_code(request, now_ms)]
            return CoordinatorResult((Delivery(request_key, response),))
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"GroupCoordinator cannot handle {type(request).__name__}")
        try:
            handler(request_key, request, now_ms)
        except Exception:
            # The host answers a request that raised (an InProcessHub with UNKNOWN_SERVER_ERROR):
            # nothing queued for it may be released later as a second answer.
            self._deliveries = [d for d in self._deliveries if d.request_key != request_key]
            raise
        return self._flush()

    def on_timers(self, now_ms: int) -> CoordinatorResult:
        deadline = self._timers.next_deadline_ms()
        if (deadline is None or deadline > now_ms) and not (
                self._records or self._deliveries or self._changed_groups):
            return _NOTHING  # nothing due and nothing to flush: what the loop and _flush would return
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
                    self._on_join_timer(key[1], now_ms)
                elif key[0] == "sync":
                    self._on_sync_timer(key[1], now_ms)
                elif key[0] == "consumer-session":
                    self._consumer.on_session_timeout(key[1], key[2])
                elif key[0] == "consumer-rebalance":
                    self._consumer.on_rebalance_timeout(key[1], key[2])
                else:
                    self._on_session_timer(key[1], key[2], now_ms)
        return self._flush()

    def next_deadline_ms(self) -> Optional[int]:
        return self._timers.next_deadline_ms()

    def group_state(self, group_id: str) -> Optional[GroupState]:
        group = self._groups.get(group_id)
        return None if group is None else group.state

    def consumer_group(self, group_id: str) -> Optional[ConsumerGroup]:
        """The KIP-848 consumer group under ``group_id`` (None if there is none); read, never change it."""
        group = self._consumer_groups.get(group_id)
        return None if group is None or group.is_(ConsumerGroupState.DEAD) else group

    def session_deadline_ms(self, group_id: str, member_id: str) -> Optional[int]:
        """When the member (or pending member) expires unless it is heard from."""
        return self._timers.deadline_of(session_key(group_id, member_id))

    def group_ids(self) -> list[str]:
        classic = [gid for gid, group in self._groups.items() if not group.is_(S.DEAD)]
        consumer = [gid for gid, cg in self._consumer_groups.items() if not cg.is_(ConsumerGroupState.DEAD)]
        return classic + consumer

    def persisted_view(self) -> PersistedView:
        groups = {}
        offsets = {}
        for gid, group in self._groups.items():
            if group.is_(S.DEAD):
                continue
            members = {mid: m.record(gid) for mid, m in group.members.items()}
            groups[gid] = PersistedGroup(group.header_record(), members)
            if group.offsets:
                offsets[gid] = dict(group.offsets)
        consumer_groups = {}
        for gid, cg in self._consumer_groups.items():
            if cg.is_(ConsumerGroupState.DEAD):
                continue
            consumer_groups[gid] = cg.persisted()
            if cg.offsets:
                offsets[gid] = dict(cg.offsets)
        return PersistedView(groups=groups, offsets=offsets, consumer_groups=consumer_groups)

    def assert_invariants(self) -> None:
        """Check every group's own invariants and the timers the coordinator keeps for them.

        Raises GroupInvariantViolation naming the first violation; O(members), for tests.
        """
        timers = self._timers
        for gid, group in self._groups.items():
            group.assert_invariants()
            if group.is_(S.DEAD):
                continue
            rules = [(session_key(gid, member_id) in timers, f"member {member_id!r} can never expire")
                     for member_id in (*group.members, *group.pending_members)]
            rules += [
                (not group.is_(S.PREPARING_REBALANCE) or group.join_key in timers,
                 "a rebalance without a join deadline"),
                (group.has_received_sync_from_all_members() or group.sync_key in timers,
                 "members owe a SyncGroup but no sync deadline is armed"),
                (gid not in self._initial_delays or group.is_(S.PREPARING_REBALANCE),
                 f"an initial delay in {group.state.value}"),
            ]
            for holds, violation in rules:
                if not holds:
                    raise GroupInvariantViolation(gid, violation)
        for gid, cg in self._consumer_groups.items():
            cg.assert_invariants()
            classic = self._groups.get(gid)
            if classic is not None and not classic.is_(S.DEAD) and not cg.is_(ConsumerGroupState.DEAD):
                raise GroupInvariantViolation(gid, "the id names a classic and a consumer group")
            for member_id in cg.members:
                if ("consumer-session", gid, member_id) not in timers:
                    raise GroupInvariantViolation(gid, f"consumer group member {member_id!r} never expires")

    @classmethod
    def load(cls, records: Iterable[Record], now_ms: int, config: GroupCoordinatorConfig = _DEFAULT_CONFIG, *,
             member_id_factory: Optional[Callable[[str], str]] = None,
             on_transition: Optional[TransitionObserver] = None,
             topic_metadata: TopicMetadata = _no_topics,
             server_assignors: Optional[Mapping[str, ServerAssignor]] = None) -> "GroupCoordinator":
        """Rebuild from records, e.g. when this coordinator takes over a partition.

        Groups are replayed through the same Group methods as live requests (``Group.add``,
        then ``Group.restore`` for the header), as Kafka's GroupMetadataManager.replay adds
        loaded members with ClassicGroup.add.  Parked requests are not in the records: members
        simply retry.  Every loaded member gets a fresh session deadline, as Kafka does on load.
        """
        coordinator = cls(config, member_id_factory=member_id_factory, on_transition=on_transition,
                          topic_metadata=topic_metadata, server_assignors=server_assignors)
        view = replay(records)
        for gid, persisted_cg in view.consumer_groups.items():
            cg = ConsumerGroup(gid, coordinator._emit, on_transition)
            cg.restore(persisted_cg, view.offsets.get(gid, {}))
            coordinator._consumer_groups[gid] = cg
            coordinator._consumer.schedule_loaded(cg, now_ms)
        for gid, persisted in view.groups.items():
            header = persisted.header
            group = coordinator._create_group(gid, GroupState(header.state))
            for record in persisted.members.values():
                member = Member.from_record(record)
                group.add(member, protocol_type=header.protocol_type)
                coordinator._schedule_session(member, now_ms)
            group.restore(header, persisted.members, view.offsets.get(gid, {}))
            if group.is_(S.PREPARING_REBALANCE):
                # Nobody's join is parked any more: give members a rebalance timeout to rejoin.
                coordinator._schedule_join(group, now_ms + group.rebalance_timeout_ms(), None)
            elif group.is_(S.COMPLETING_REBALANCE):
                # Nobody has synced with this coordinator yet.
                coordinator._await_syncs(group, now_ms)
            over_capacity = len(group.members) > config.group_max_size
            if over_capacity and (group.is_(S.STABLE) or group.is_(S.COMPLETING_REBALANCE)):
                # The limit was lowered: rebalance so the last rejoiners are kicked out (Kafka's
                # GroupMetadataManager replay: "Freshly-loaded group ... is over capacity").
                coordinator._prepare_rebalance(group, now_ms)
        # A group that changed state while loading has its new header written by the next call's flush.
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
                join_key = group.take_join_key(member)
                if join_key is not None:
                    deliveries.append(Delivery(join_key, JoinGroupResponse(code, member_id=member.member_id)))
                sync_key = group.take_sync_key(member)
                if sync_key is not None:
                    deliveries.append(Delivery(sync_key, SyncGroupResponse(code)))
        self._groups.clear()
        self._consumer_groups.clear()
        self._timers = KeyedTimers()
        self._initial_delays.clear()
        self._deliveries = []
        self._records.clear()
        self._changed_groups.clear()
        return CoordinatorResult(tuple(deliveries))

    # -- plumbing --------------------------------------------------------------

    def _deliver(self, key: Hashable, response: object) -> None:
        self._deliveries.append(Delivery(key, response))

    def _emit(self, record: Record) -> None:
        self._records.append(record)

    def _note_changed(self, group_id: str) -> None:
        self._changed_groups[group_id] = None

    def _flush(self) -> CoordinatorResult:
        records = list(self._records)
        self._records.clear()
        for gid in self._changed_groups:
            group = self._groups.get(gid)
            if group is not None:
                records.extend(group.take_records())
        self._changed_groups.clear()
        result = CoordinatorResult(tuple(self._deliveries), tuple(records))
        self._deliveries = []
        return result

    def _schedule_session(self, member: Member, now_ms: int) -> None:
        self._timers.schedule(member.session_key, now_ms + member.session_timeout_ms)

    def _schedule_join(self, group: Group, deadline_ms: int, initial_delay: Optional[_InitialDelay]) -> None:
        if initial_delay is None:
            self._initial_delays.pop(group.group_id, None)
        else:
            self._initial_delays[group.group_id] = initial_delay
        self._timers.schedule(group.join_key, deadline_ms)

    def _cancel(self, key: tuple) -> None:
        self._timers.cancel(key)

    def _cancel_group_timers(self, group: Group) -> None:
        """Before a group is deleted: its join deadline and its pending members' deadlines go."""
        self._cancel(group.join_key)
        self._initial_delays.pop(group.group_id, None)
        for member_id in group.pending_members:
            self._cancel(session_key(group.group_id, member_id))

    def _create_group(self, group_id: str, initial: GroupState = GroupState.EMPTY) -> Group:
        group = Group(group_id, self._observer, initial, on_change=self._note_changed)
        self._groups[group_id] = group
        return group

    def _classic_group_state(self, group_id: str) -> Optional[str]:
        group = self._groups.get(group_id)
        return None if group is None or group.is_(S.DEAD) else group.state.value

    def _release_empty_classic_group(self, group_id: str) -> dict:
        """An empty classic group's id becomes a consumer group's (Kafka's maybeDeleteEmptyClassicGroup).

        Its offsets go with the id; the consumer group's header record supersedes the classic one.
        """
        group = self._groups.pop(group_id, None)
        if group is None:
            return {}
        self._cancel_group_timers(group)
        return {} if group.is_(S.DEAD) else dict(group.offsets)

    # -- KIP-848 consumer groups (owned manager) -----------------------------------

    def _consumer_group_heartbeat(self, key: Hashable, req: ConsumerGroupHeartbeatRequest,
                                  now_ms: int) -> None:
        self._deliver(key, self._consumer.heartbeat(req, now_ms))

    def _consumer_group_describe(self, key: Hashable, req: ConsumerGroupDescribeRequest, now_ms: int) -> None:
        self._deliver(key, self._consumer.describe(req))

    # -- OffsetCommit / OffsetFetch / OffsetDelete / admin (owned handlers) ------

    def _offset_commit(self, key: Hashable, req: OffsetCommitRequest, now_ms: int) -> None:
        self._deliver(key, self._offsets.commit(req, now_ms))

    def _offset_fetch(self, key: Hashable, req: OffsetFetchRequest, now_ms: int) -> None:
        self._deliver(key, self._offsets.fetch(req))

    def _offset_delete(self, key: Hashable, req: OffsetDeleteRequest, now_ms: int) -> None:
        self._deliver(key, self._offsets.delete(req))

    def _describe(self, key: Hashable, req: DescribeGroupsRequest, now_ms: int) -> None:
        self._deliver(key, self._admin.describe(req))

    def _list(self, key: Hashable, req: ListGroupsRequest, now_ms: int) -> None:
        self._deliver(key, self._admin.list(req))

    def _delete(self, key: Hashable, req: DeleteGroupsRequest, now_ms: int) -> None:
        self._deliver(key, self._admin.delete(req))

    # -- JoinGroup -------------------------------------------------------------

    def _join(self, key: Hashable, req: JoinGroupRequest, now_ms: int) -> None:
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
        consumer_group = self.consumer_group(req.group_id)
        if consumer_group is not None:
            if consumer_group.members:
                # Kafka 4 lets a classic member into a consumer group (classicGroupJoinToConsumerGroup);
                # kgroup does not implement that interoperability.
                return fail(E.INCONSISTENT_GROUP_PROTOCOL)
            # An empty consumer group's id becomes a classic group's, with its offsets.
            del self._consumer_groups[req.group_id]
            self._create_group(req.group_id).take_offsets(consumer_group.offsets)
        group = self._groups.get(req.group_id)
        if group is None or (group.is_(S.DEAD) and unknown):
            if not unknown:
                return fail(E.UNKNOWN_MEMBER_ID)
            # A deleted group's id is free again: a new member creates a new group.
            group = self._create_group(req.group_id)
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
            self._drop_pending(group, member_id)
        else:
            member = group.members.get(member_id)
            if member is None:
                return
            self._remove_member(group, member)
        if group.is_(S.PREPARING_REBALANCE):
            # The members left may all have joined already.
            self._maybe_complete_join(group, now_ms)

    def _join_new_member(self, key: Hashable, group: Group, req: JoinGroupRequest, now_ms: int) -> None:
        instance_id = req.group_instance_id
        new_id = self._new_member_id(instance_id if instance_id is not None else req.client_id)
        if instance_id is not None:
            # Static members skip the MEMBER_ID_REQUIRED round trip (KIP-345).
            self._join_new_static_member(key, group, req, instance_id, new_id, now_ms)
        elif req.api_version >= 4:
            group.add_pending_member(new_id)
            self._timers.schedule(session_key(group.group_id, new_id), now_ms + req.session_timeout_ms)
            self._deliver(key, JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member_and_rebalance(key, group, req, new_id, now_ms)

    def _join_new_static_member(self, key: Hashable, group: Group, req: JoinGroupRequest, instance_id: str,
                                new_id: str, now_ms: int) -> None:
        """Kafka's updateStaticMemberThenRebalanceOrCompleteJoin (KIP-345, KIP-814)."""
        old_id = group.static_members.get(instance_id)
        if old_id is None:
            self._add_member_and_rebalance(key, group, req, new_id, now_ms)
            return
        old_client = group.members[old_id]
        previous_leader_id = group.leader_id
        new = Member(group.group_id, new_id, instance_id, old_client.client_id, old_client.client_host,
                     req.session_timeout_ms, req.rebalance_timeout_ms, req.protocols)
        old = group.replace_static_member(instance_id, old_id, new)
        self._cancel(old.session_key)
        # The old incarnation is fenced: its parked requests are answered so.
        old_join_key = group.take_join_key(old)
        if old_join_key is not None:
            self._deliver(old_join_key, JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=old_id))
        old_sync_key = group.take_sync_key(old)
        if old_sync_key is not None:
            self._deliver(old_sync_key, SyncGroupResponse(E.FENCED_INSTANCE_ID))
        self._schedule_session(new, now_ms)
        if (group.is_(S.STABLE) and group.select_protocol() == group.protocol_name
                and not _owes_follow_up_rejoin(group, old)):
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
        group.park_join(new, key)
        if group.is_(S.STABLE) or group.is_(S.COMPLETING_REBALANCE):
            # In CompletingRebalance the leader may already be assigning with the old member id.
            self._prepare_rebalance(group, now_ms)
        else:
            self._maybe_complete_join(group, now_ms)

    def _join_existing_member(self, key: Hashable, group: Group, req: JoinGroupRequest, now_ms: int) -> None:
        mid = req.member_id
        if mid in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka: "pending member cannot be a static member" (an IllegalStateException, which
                # the broker answers UNKNOWN_SERVER_ERROR); joining would map one instance id to two
                # members.
                self._deliver(key, JoinGroupResponse(E.UNKNOWN_SERVER_ERROR, member_id=mid))
                return
            self._drop_pending(group, mid)
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
                self._schedule_session(member, now_ms)
                self._deliver(key, self._join_response(group, member, mid == group.leader_id))
            else:
                self._update_member_and_rebalance(key, group, member, req, now_ms)
        elif state is S.STABLE:
            if mid == group.leader_id or not member.matches(req.protocols):
                # A leader's rejoin means it wants a new assignment (e.g. metadata changed).
                self._update_member_and_rebalance(key, group, member, req, now_ms)
            else:
                self._schedule_session(member, now_ms)
                self._deliver(key, self._join_response(group, member, False))
        else:
            self._deliver(key, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=mid))

    def _join_response(self, group: Group, member: Member, is_leader: bool,
                       skip_assignment: bool = False) -> JoinGroupResponse:
        members: tuple[JoinGroupMember, ...] = ()
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
                                  member_id: str, now_ms: int) -> None:
        # A client that gave up on its parked first JoinGroup retries with a new member id; the
        # abandoned member would hold the rebalance forever, so a new member's join times out
        # (Kafka's addMemberThenRebalanceOrCompleteJoin, new member join timeout).
        member = Member(group.group_id, member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.session_timeout_ms, req.rebalance_timeout_ms, req.protocols, is_new=True)
        group.add(member, key, protocol_type=req.protocol_type)
        self._timers.schedule(member.session_key, now_ms + self.config.group_new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(group, now_ms)

    def _update_member_and_rebalance(self, key: Hashable, group: Group, member: Member,
                                     req: JoinGroupRequest, now_ms: int) -> None:
        superseded = group.update_member(member, req.protocols, req.session_timeout_ms,
                                         req.rebalance_timeout_ms, key)
        if superseded is not None:
            # Kafka drops the superseded callback; we answer it so no caller waits forever.
            self._deliver(superseded, JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        if not member.is_new:
            # A new member keeps its join timeout (Kafka does not reschedule it here either).
            self._schedule_session(member, now_ms)
        self._maybe_prepare_rebalance_or_complete_join(group, now_ms)

    def _maybe_prepare_rebalance_or_complete_join(self, group: Group, now_ms: int) -> None:
        if group.can_transition_to(S.PREPARING_REBALANCE):
            self._prepare_rebalance(group, now_ms)
        else:
            self._maybe_complete_join(group, now_ms)

    def _prepare_rebalance(self, group: Group, now_ms: int) -> None:
        if group.is_(S.COMPLETING_REBALANCE):
            self._reset_assignments(group, E.REBALANCE_IN_PROGRESS, now_ms)
        group.clear_pending_sync_members()
        self._cancel(group.sync_key)
        initial = group.is_(S.EMPTY)
        if initial:
            rebalance_timeout_ms = group.rebalance_timeout_ms()
            # Kafka's prepareRebalance: the first wait is the whole configured delay; only the
            # extensions while members keep arriving are capped by the rebalance timeout.
            delay_ms = self.config.group_initial_rebalance_delay_ms
            delay = _InitialDelay(delay_ms, max(rebalance_timeout_ms - delay_ms, 0))
            self._schedule_join(group, now_ms + delay_ms, delay)
        group.transition_to(S.PREPARING_REBALANCE)
        if not initial:
            self._schedule_join(group, now_ms + group.rebalance_timeout_ms(), None)
            self._maybe_complete_join(group, now_ms)

    def _reset_assignments(self, group: Group, code: ErrorCode, now_ms: int) -> None:
        """The generation being synced is abandoned: drop its assignment, fail parked syncs."""
        for member in group.members.values():
            group.clear_assignment(member)
            sync_key = group.take_sync_key(member)
            if sync_key is not None:
                self._deliver(sync_key, SyncGroupResponse(code))
                # Kafka's propagateAssignment: answering a sync (with an error too) restarts the
                # session, so a follower does not expire together with a leader that never synced.
                self._schedule_session(member, now_ms)

    def _maybe_complete_join(self, group: Group, now_ms: int) -> None:
        # The initial delay is never cut short (Kafka's InitialDelayedJoin).
        if (group.is_(S.PREPARING_REBALANCE) and group.has_all_members_joined()
                and group.previous_state is not S.EMPTY):
            self._cancel(group.join_key)
            self._complete_join(group, now_ms)

    def _on_join_timer(self, group_id: str, now_ms: int) -> None:
        group = self._groups.get(group_id)
        if group is None or not group.is_(S.PREPARING_REBALANCE):
            return
        delay = self._initial_delays.get(group_id)
        if delay is not None and delay.remaining_ms > 0 and group.take_new_member_added():
            # New members arrived during the delay: wait once more, up to the rebalance timeout.
            extension = _InitialDelay(delay.delay_ms, max(delay.remaining_ms - delay.delay_ms, 0))
            self._schedule_join(group, now_ms + min(delay.delay_ms, delay.remaining_ms), extension)
            return
        self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> None:
        if group.num_awaiting_join < len(group.members):
            not_rejoined = [m for m in group.members.values()
                            if m.join_key is None and m.group_instance_id is None]
            for member in not_rejoined:
                self._remove_member(group, member)
        if group.members and group.num_awaiting_join == 0:
            # Only static members that did not rejoin remain: wait for them (or their session expiry).
            self._schedule_join(group, now_ms + max(group.rebalance_timeout_ms(), 1), None)
            return
        self._initial_delays.pop(group.group_id, None)
        group.elect_joined_leader()
        group.init_next_generation()
        if group.is_(S.EMPTY):
            return
        leader_id = group.leader_id
        for member in group.members.values():
            if member.join_key is not None:
                is_leader = member.member_id == leader_id
                self._deliver(member.join_key, self._join_response(group, member, is_leader))
                group.take_join_key(member)
            self._schedule_session(member, now_ms)
        self._await_syncs(group, now_ms)

    def _await_syncs(self, group: Group, now_ms: int) -> None:
        """Every member must sync within the rebalance timeout (Kafka's schedulePendingSync)."""
        group.await_syncs()
        self._timers.schedule(group.sync_key, now_ms + group.rebalance_timeout_ms())

    def _on_sync_timer(self, group_id: str, now_ms: int) -> None:
        """Kafka's expirePendingSync: members that never synced are removed and the group rebalances."""
        group = self._groups.get(group_id)
        if group is None or not (group.is_(S.COMPLETING_REBALANCE) or group.is_(S.STABLE)):
            return
        if group.has_received_sync_from_all_members():
            return
        for member_id in list(group.pending_sync_members):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member(group, member)
        group.clear_pending_sync_members()
        self._prepare_rebalance(group, now_ms)

    def _synced(self, group: Group, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        if group.has_received_sync_from_all_members():
            self._cancel(group.sync_key)

    # -- membership removal ----------------------------------------------------

    def _drop_pending(self, group: Group, member_id: str) -> None:
        group.remove_pending_member(member_id)
        self._cancel(session_key(group.group_id, member_id))

    def _remove_member(self, group: Group, member: Member) -> None:
        group.remove(member.member_id)
        self._cancel(member.session_key)
        join_key = group.take_join_key(member)
        if join_key is not None:
            # Kafka's removeMemberAndUpdateClassicGroup answers with no member id: the client
            # must join again as a new member.
            self._deliver(join_key, JoinGroupResponse(E.UNKNOWN_MEMBER_ID))
        sync_key = group.take_sync_key(member)
        if sync_key is not None:
            self._deliver(sync_key, SyncGroupResponse(E.UNKNOWN_MEMBER_ID))

    def _update_group_after_removal(self, group: Group, now_ms: int) -> None:
        state = group.state
        if state is S.STABLE or state is S.COMPLETING_REBALANCE:
            self._prepare_rebalance(group, now_ms)
        elif state is S.PREPARING_REBALANCE:
            self._maybe_complete_join(group, now_ms)

    def _on_session_timer(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        if member_id in group.pending_members:
            self._drop_pending(group, member_id)
            if group.is_(S.PREPARING_REBALANCE):
                self._maybe_complete_join(group, now_ms)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.is_new and (member.join_key is not None or member.sync_key is not None):
            # Awaiting a response counts as alive (Kafka's ClassicGroupMember.hasSatisfiedHeartbeat),
            # except for a new member, whose join timeout this deadline is.
            # Re-armed strictly later so on_timers cannot spin on a zero timeout.
            self._timers.schedule(member.session_key, now_ms + max(member.session_timeout_ms, 1))
            return
        self._remove_member(group, member)
        self._update_group_after_removal(group, now_ms)

    # -- SyncGroup -------------------------------------------------------------

    def _sync(self, key: Hashable, req: SyncGroupRequest, now_ms: int) -> None:
        def fail(code: ErrorCode) -> None:
            self._deliver(key, SyncGroupResponse(code))

        if not req.group_id:
            return fail(E.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if group is None:
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
        if state is S.STABLE:
            self._synced(group, member.member_id)
            self._schedule_session(member, now_ms)
            self._deliver(key, SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name,
                                                 member.assignment))
            return
        if state is not S.COMPLETING_REBALANCE:
            return fail(E.UNKNOWN_MEMBER_ID)
        superseded = group.park_sync(member, key)
        if superseded is not None:
            self._deliver(superseded, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
        self._synced(group, member.member_id)
        self._schedule_session(member, now_ms)
        if req.member_id != group.leader_id:
            return
        group.assign({a.member_id: a.assignment for a in req.assignments})
        group.transition_to(S.STABLE)
        for m in group.members.values():
            sync_key = group.take_sync_key(m)
            if sync_key is not None:
                self._deliver(sync_key, SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name,
                                                          m.assignment))
                self._schedule_session(m, now_ms)

    # -- Heartbeat -------------------------------------------------------------

    def _heartbeat(self, key: Hashable, req: HeartbeatRequest, now_ms: int) -> None:
        self._deliver(key, _HEARTBEAT_RESPONSES[self._heartbeat_code(req, now_ms)])

    def _heartbeat_code(self, req: HeartbeatRequest, now_ms: int) -> ErrorCode:
        if not req.group_id:
            return E.INVALID_GROUP_ID
        group = self._groups.get(req.group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        code, member = group.heartbeat(req.member_id, req.group_instance_id, req.generation_id)
        if member is not None:
            self._timers.schedule(member.session_key, now_ms + member.session_timeout_ms)
        return code

    # -- LeaveGroup ------------------------------------------------------------

    def _leave(self, key: Hashable, req: LeaveGroupRequest, now_ms: int) -> None:
        if not req.group_id:
            return self._deliver(key, LeaveGroupResponse(E.INVALID_GROUP_ID))
        group = self._groups.get(req.group_id)
        if group is None:
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
            self._update_group_after_removal(group, now_ms)
        elif group.is_(S.PREPARING_REBALANCE):
            # Only pending members left: that alone may complete the join, never start one.
            self._maybe_complete_join(group, now_ms)
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
