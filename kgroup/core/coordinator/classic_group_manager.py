"""Classic groups, their rebalances and their timers (the classic part of Kafka's GroupMetadataManager).

The manager owns the classic groups and drives a rebalance through its steps: prepare it, complete
the join (answer the parked JoinGroups), wait for every SyncGroup, and remove the members that miss
a deadline.  Each deadline is scheduled with the operation it runs (Kafka's CoordinatorTimer), so
firing needs no dispatch: the session of a member, the join of a group (the initial delay or the
rebalance timeout) and the sync of a generation.  The request handlers
(:mod:`kgroup.core.coordinator.classic_handlers`) call into it.
"""
from __future__ import annotations

import functools
from typing import Callable, Mapping, Optional

import attrs

from kgroup.core.broker import Delivery
from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.records import PersistedConsumerGroup
from kgroup.core.coordinator.context import GroupCoordinatorContext
from kgroup.core.coordinator.group import Group, GroupRecord, Member, TransitionObserver, session_key
from kgroup.core.coordinator.migration import PartitionCount, classic_group_from_consumer, \
    consumer_group_from_classic
from kgroup.core.coordinator.records import PersistedGroup
from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    JoinGroupMember, JoinGroupResponse, OffsetAndMetadata, SyncGroupResponse,
)
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState


@attrs.frozen
class _InitialDelay:
    """The armed join timer is a new group's initial delay (Kafka's InitialDelayedJoin)."""

    delay_ms: int
    #: How much longer later arrivals may extend it (the rebalance timeout caps the whole wait).
    remaining_ms: int


class ClassicGroupManager:
    def __init__(self, config: GroupCoordinatorConfig, context: GroupCoordinatorContext, *,
                 member_id_factory: Callable[[str], str],
                 observer: Optional[TransitionObserver] = None) -> None:
        self.config = config
        self._context = context
        self._deliver = context.deliver
        self._timer = context.timer
        self.new_member_id = member_id_factory
        self._observer = observer
        # Never rebound: the offset and admin handlers hold this mapping.
        self._groups: dict[str, Group] = {}
        #: Groups whose armed join timer is the initial delay, with its bookkeeping.
        self._initial_delays: dict[str, _InitialDelay] = {}
        #: Ids of groups with changes not yet written as records (insertion-ordered), filled by the
        #: groups themselves (Group's on_change).
        self._changed_groups: dict[str, None] = {}

    # -- the groups ------------------------------------------------------------------

    @property
    def groups(self) -> Mapping[str, Group]:
        """Every classic group by id, deleted (Dead) ones included until their id is reused."""
        return self._groups

    def create_group(self, group_id: str, initial: GroupState = GroupState.EMPTY) -> Group:
        group = Group(group_id, self._observer, initial, on_change=self._note_changed)
        self._groups[group_id] = group
        return group

    def group_state_name(self, group_id: str) -> Optional[str]:
        group = self._groups.get(group_id)
        return None if group is None or group.is_(S.DEAD) else group.state.value

    def release_group(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """The classic group's id becomes a consumer group's: an empty group goes (Kafka's
        maybeDeleteEmptyClassicGroup), a non-empty one was converted (convertToConsumerGroup, which
        answers its parked JoinGroups and SyncGroups REBALANCE_IN_PROGRESS so they rejoin).

        Its offsets go with the id; the consumer group's header record supersedes the classic one.
        """
        group = self._groups.pop(group_id, None)
        self._changed_groups.pop(group_id, None)
        if group is None:
            return {}
        self.cancel_group_timers(group)
        self._cancel(group.sync_key)
        for member in group.members.values():
            self._cancel(member.session_key)
            join_key = group.take_join_key(member)
            if join_key is not None:
                self._deliver(join_key,
                              JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=member.member_id))
            sync_key = group.take_sync_key(member)
            if sync_key is not None:
                self._deliver(sync_key, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
        return {} if group.is_(S.DEAD) else dict(group.offsets)

    def upgraded_group(self, group_id: str, partition_count: PartitionCount) -> PersistedConsumerGroup:
        """The non-empty classic group as a consumer group
        (:func:`~kgroup.core.coordinator.migration.consumer_group_from_classic`)."""
        return consumer_group_from_classic(self._groups[group_id], self.config, partition_count)

    def adopt_consumer_group(self, consumer_group: ConsumerGroup, leaving_member_id: Optional[str],
                             now_ms: int, *, rebalance: bool = True) -> None:
        """Kafka's convertToClassicGroup: the classic group that replaces a consumer group whose last
        consumer-protocol member left; every member gets a session, and the group rebalances so the
        members rejoin through the classic protocol (not when a static member's replacement converted
        it: it stays Stable at the group epoch)."""
        header, member_records = classic_group_from_consumer(consumer_group, leaving_member_id)
        group = self.create_group(consumer_group.group_id, S.STABLE)
        for record in member_records:
            group.add(Member.from_record(record), protocol_type=header.protocol_type)
        group.restore(header, {r.member_id: r for r in member_records}, consumer_group.offsets, written=False)
        for member in group.members.values():
            self.schedule_session(member, now_ms)
        if rebalance:
            self.prepare_rebalance(group, now_ms)

    def _note_changed(self, group_id: str) -> None:
        self._changed_groups[group_id] = None

    @property
    def has_unwritten_changes(self) -> bool:
        return bool(self._changed_groups)

    def take_records(self) -> list[GroupRecord]:
        """The records of every change made since the last call, group by group."""
        records: list[GroupRecord] = []
        for gid in self._changed_groups:
            group = self._groups.get(gid)
            if group is not None:
                records.extend(group.take_records())
        self._changed_groups.clear()
        return records

    def load_group(self, group_id: str, persisted: PersistedGroup,
                   offsets: Mapping[TopicPartition, OffsetAndMetadata], now_ms: int) -> None:
        """Rebuild a group from its records (see GroupCoordinator.load)."""
        header = persisted.header
        group = self.create_group(group_id, GroupState(header.state))
        for record in persisted.members.values():
            member = Member.from_record(record)
            group.add(member, protocol_type=header.protocol_type)
            self.schedule_session(member, now_ms)
        group.restore(header, persisted.members, offsets)
        if group.is_(S.PREPARING_REBALANCE):
            # Nobody's join is parked any more: give members a rebalance timeout to rejoin.
            self._schedule_join(group, now_ms + group.rebalance_timeout_ms(), None)
        elif group.is_(S.COMPLETING_REBALANCE):
            # Nobody has synced with this coordinator yet.
            self._await_syncs(group, now_ms)
        over_capacity = len(group.members) > self.config.group_max_size
        if over_capacity and (group.is_(S.STABLE) or group.is_(S.COMPLETING_REBALANCE)):
            # The limit was lowered: rebalance so the last rejoiners are kicked out (Kafka's
            # GroupMetadataManager replay: "Freshly-loaded group ... is over capacity").
            self.prepare_rebalance(group, now_ms)

    def resign(self, code: ErrorCode) -> list[Delivery]:
        """Answer every parked JoinGroup / SyncGroup with ``code``, then forget every group."""
        answers = []
        for group in self._groups.values():
            for member in group.members.values():
                join_key = group.take_join_key(member)
                if join_key is not None:
                    answers.append(Delivery(join_key, JoinGroupResponse(code, member_id=member.member_id)))
                sync_key = group.take_sync_key(member)
                if sync_key is not None:
                    answers.append(Delivery(sync_key, SyncGroupResponse(code)))
        self._groups.clear()
        self._initial_delays.clear()
        self._changed_groups.clear()
        return answers

    def assert_invariants(self) -> None:
        """Every group's own invariants and the timers kept for it (GroupCoordinator.assert_invariants)."""
        timer = self._context.timer
        for gid, group in self._groups.items():
            group.assert_invariants()
            if group.is_(S.DEAD):
                continue
            rules = [(session_key(gid, member_id) in timer, f"member {member_id!r} can never expire")
                     for member_id in (*group.members, *group.pending_members)]
            rules += [
                (not group.is_(S.PREPARING_REBALANCE) or group.join_key in timer,
                 "a rebalance without a join deadline"),
                (group.has_received_sync_from_all_members() or group.sync_key in timer,
                 "members owe a SyncGroup but no sync deadline is armed"),
                (gid not in self._initial_delays or group.is_(S.PREPARING_REBALANCE),
                 f"an initial delay in {group.state.value}"),
            ]
            for holds, violation in rules:
                if not holds:
                    raise GroupInvariantViolation(gid, violation)

    # -- timers --------------------------------------------------------------------------

    def schedule_session(self, member: Member, now_ms: int) -> None:
        """The member expires after its session timeout (the heartbeat path: no call in between)."""
        key = member.session_key
        deadline_ms = now_ms + member.session_timeout_ms
        if not self._timer.reschedule(key, deadline_ms):
            self._timer.schedule(key, deadline_ms, functools.partial(self._on_session_timer, key[1], key[2]))

    def schedule_session_deadline(self, key: tuple[str, str, str], deadline_ms: int) -> None:
        """The member (or pending member) under session ``key`` expires at ``deadline_ms``."""
        # A session key always runs the same operation: an armed one only moves (the heartbeat path).
        if not self._timer.reschedule(key, deadline_ms):
            self._timer.schedule(key, deadline_ms, functools.partial(self._on_session_timer, key[1], key[2]))

    def _schedule_join(self, group: Group, deadline_ms: int, initial_delay: Optional[_InitialDelay]) -> None:
        if initial_delay is None:
            self._initial_delays.pop(group.group_id, None)
        else:
            self._initial_delays[group.group_id] = initial_delay
        self._timer.schedule(group.join_key, deadline_ms,
                             functools.partial(self._on_join_timer, group.group_id))

    def _cancel(self, key: tuple) -> None:
        self._timer.cancel(key)

    def cancel_group_timers(self, group: Group) -> None:
        """Before a group is deleted: its join deadline and its pending members' deadlines go."""
        self._cancel(group.join_key)
        self._initial_delays.pop(group.group_id, None)
        for member_id in group.pending_members:
            self._cancel(session_key(group.group_id, member_id))

    def _on_session_timer(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        if member_id in group.pending_members:
            self.drop_pending(group, member_id)
            if group.is_(S.PREPARING_REBALANCE):
                self.maybe_complete_join(group, now_ms)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if member.has_satisfied_heartbeat():
            # Re-armed strictly later so handle_timer cannot spin on a zero timeout.
            self.schedule_session_deadline(member.session_key, now_ms + max(member.session_timeout_ms, 1))
            return
        self.remove_member(group, member)
        self.update_group_after_removal(group, now_ms)

    # -- rebalance -------------------------------------------------------------------

    def maybe_prepare_rebalance_or_complete_join(self, group: Group, now_ms: int) -> None:
        if group.can_transition_to(S.PREPARING_REBALANCE):
            self.prepare_rebalance(group, now_ms)
        else:
            self.maybe_complete_join(group, now_ms)

    def prepare_rebalance(self, group: Group, now_ms: int) -> None:
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
            self.maybe_complete_join(group, now_ms)

    def _reset_assignments(self, group: Group, code: ErrorCode, now_ms: int) -> None:
        """The generation being synced is abandoned: drop its assignment, fail parked syncs."""
        for member in group.members.values():
            group.clear_assignment(member)
            sync_key = group.take_sync_key(member)
            if sync_key is not None:
                self._deliver(sync_key, SyncGroupResponse(code))
                # Kafka's propagateAssignment: answering a sync (with an error too) restarts the
                # session, so a follower does not expire together with a leader that never synced.
                self.schedule_session(member, now_ms)

    def maybe_complete_join(self, group: Group, now_ms: int) -> None:
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
                self.remove_member(group, member)
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
                self._deliver(member.join_key, self.join_response(group, member, is_leader))
                group.take_join_key(member)
            self.schedule_session(member, now_ms)
        self._await_syncs(group, now_ms)

    def join_response(self, group: Group, member: Member, is_leader: bool,
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

    def _await_syncs(self, group: Group, now_ms: int) -> None:
        """Every member must sync within the rebalance timeout (Kafka's schedulePendingSync)."""
        group.await_syncs()
        self._timer.schedule(group.sync_key, now_ms + group.rebalance_timeout_ms(),
                             functools.partial(self._on_sync_timer, group.group_id))

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
                self.remove_member(group, member)
        group.clear_pending_sync_members()
        self.prepare_rebalance(group, now_ms)

    def synced(self, group: Group, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        if group.has_received_sync_from_all_members():
            self._cancel(group.sync_key)

    # -- membership removal ----------------------------------------------------------

    def drop_pending(self, group: Group, member_id: str) -> None:
        group.remove_pending_member(member_id)
        self._cancel(session_key(group.group_id, member_id))

    def remove_member(self, group: Group, member: Member) -> None:
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

    def update_group_after_removal(self, group: Group, now_ms: int) -> None:
        state = group.state
        if state is S.STABLE or state is S.COMPLETING_REBALANCE:
            self.prepare_rebalance(group, now_ms)
        elif state is S.PREPARING_REBALANCE:
            self.maybe_complete_join(group, now_ms)
