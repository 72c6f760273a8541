"""ConsumerGroupHeartbeat and ConsumerGroupDescribe, the session and rebalance timeouts (KIP-848).

The consumer-group part of Kafka's GroupMetadataManager (consumerGroupHeartbeat,
consumerGroupLeave, consumerGroupFenceMember, the two member timers) and of
ConsumerGroup's offset validation.  It owns the consumer groups; the coordinator
owns it and gives it one context object
(:class:`kgroup.core.consumer_group.context.ConsumerGroupContext`): a record sink,
timers that carry their operation, the topic metadata, and the classic group
under an id (a group id keeps its type).

A member subscribes by topic names, a regex (KIP-848's SubscribedTopicRegex, RE2/J
syntax: :mod:`kgroup.core.consumer_group.topic_regex`) or both (the union, as
Kafka's TargetAssignmentBuilder takes it); when the group's regexes are resolved
is :mod:`kgroup.core.consumer_group.regex_subscriptions`.

A heartbeat is all or nothing, as in Kafka (whose handler builds every record
first and applies them only when the whole heartbeat succeeded): the request is
validated, then everything that can still refuse it (the server assignor, a
fencing reconciliation) is computed from the unchanged group, and only then
does the group change.  An error answer never leaves half a change behind.
"""
from __future__ import annotations

import enum
import functools
import uuid
from typing import AbstractSet, Callable, Iterable, Mapping, Optional

import attrs

from kgroup.assignors.server_base import ServerAssignor
from kgroup.core.consumer_group.classic_members import ClassicMemberRequests, ClassicRequestRefused
from kgroup.core.consumer_group.context import ConsumerGroupContext, GroupConversionRefused
from kgroup.core.consumer_group.describe import describe_consumer_groups
from kgroup.core.consumer_group.heartbeat_checks import HeartbeatRefused as _Refused
from kgroup.core.consumer_group.heartbeat_checks import heartbeat_member, validate_heartbeat_request
from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.core.consumer_group.member import ConsumerGroupMember, check_transition
from kgroup.core.consumer_group.member_timers import (
    MemberTimers, classic_join_timer_key, classic_sync_timer_key, rebalance_timer_key, session_timer_key,
)
from kgroup.core.consumer_group.reconciliation import FencedMemberEpoch, reconcile
from kgroup.core.consumer_group.subscription_changes import subscribed_topics_with
from kgroup.core.consumer_group.target_assignment import TargetAssignmentBuilder, members_after
from kgroup.core.consumer_group_messages import (
    JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kgroup.core.consumer_group.records import PersistedConsumerGroup
from kgroup.core.consumer_group.regex_subscriptions import RegexSubscriptions
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import TransitionObserver
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition

__all__ = ["ConsumerGroupManager", "session_timer_key", "rebalance_timer_key", "classic_join_timer_key",
           "classic_sync_timer_key"]

E = ErrorCode


class _Creation(enum.Enum):
    """How a group that a heartbeat joins comes to be registered."""

    NEW = "new"
    #: A classic group converted online (Kafka's convertToConsumerGroup).
    UPGRADE = "upgrade"


class ConsumerGroupManager:
    def __init__(self, config: GroupCoordinatorConfig, context: ConsumerGroupContext, *,
                 observer: Optional[TransitionObserver] = None,
                 member_id_factory: Optional[Callable[[], str]] = None,
                 server_assignors: Optional[Mapping[str, ServerAssignor]] = None) -> None:
        self.config = config
        self._context = context
        #: Never rebound: the coordinator's offset and admin handlers hold it (read-only).
        self._groups: dict[str, ConsumerGroup] = {}
        self._observer = observer
        self._new_member_id = member_id_factory or (lambda: str(uuid.uuid4()))
        self._target_assignments = TargetAssignmentBuilder(config, context, server_assignors or {})
        self.timers = MemberTimers(config, context, self._fence_if_present, self._member_epoch)
        #: JoinGroup / SyncGroup / Heartbeat / LeaveGroup of classic members in consumer groups.
        self.classic_members = ClassicMemberRequests(self)
        self._regexes = RegexSubscriptions(config, context)

    def new_member_id(self) -> str:
        return self._new_member_id()

    # -- the groups ----------------------------------------------------------------------

    @property
    def groups(self) -> Mapping[str, ConsumerGroup]:
        """Every consumer group by id, deleted (Dead) ones included until their id is reused."""
        return self._groups

    def group(self, group_id: str) -> Optional[ConsumerGroup]:
        """The live consumer group under ``group_id``, None if there is none."""
        group = self._groups.get(group_id)
        return None if group is None or group.is_(ConsumerGroupState.DEAD) else group

    def remove_group(self, group_id: str) -> None:
        """The id becomes a classic group's (the caller takes the offsets first)."""
        del self._groups[group_id]

    def load_group(self, group_id: str, persisted: PersistedConsumerGroup,
                   offsets: Mapping[TopicPartition, OffsetAndMetadata], now_ms: int) -> None:
        """Rebuild a group from its records.  After a failover every member gets a fresh session,
        a revoking one a fresh rebalance timeout."""
        group = ConsumerGroup(group_id, self._context.emit, self._observer)
        group.restore(persisted, offsets)
        self._groups[group_id] = group
        for member in group.members.values():
            self.timers.schedule_session(group_id, member, now_ms)
            self.timers.after_reconciliation(group_id, member, now_ms)

    def clear(self) -> None:
        """Forget every group (the coordinator resigns; its timer is reset with it)."""
        self._groups.clear()
        self.timers.clear()
        self._regexes.clear()

    # -- ConsumerGroupHeartbeat ----------------------------------------------------------

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest, now_ms: int) -> ConsumerGroupHeartbeatResponse:
        try:
            validate_heartbeat_request(req, self.config)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(req, now_ms)
            return self._heartbeat(req, now_ms)
        except _Refused as refused:
            return ConsumerGroupHeartbeatResponse(refused.code, refused.message)

    def _existing_group(self, group_id: str) -> ConsumerGroup:
        group = self._groups.get(group_id)
        if group is None or group.is_(ConsumerGroupState.DEAD):
            if self._context.classic_group_state(group_id) is not None:
                raise _Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            raise _Refused(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return group

    def _group_for_join(self, group_id: str) -> tuple[ConsumerGroup, Optional[_Creation]]:
        """Kafka's getOrMaybeCreateConsumerGroup(createIfNotExists=true): the group, and how it comes
        to be when it is not registered yet (a new group, or the upgrade of a classic group)."""
        group = self._groups.get(group_id)
        if group is not None and not group.is_(ConsumerGroupState.DEAD):
            return group, None
        classic_state = self._context.classic_group_state(group_id)
        if classic_state is None or classic_state == "Empty":
            return ConsumerGroup(group_id, self._context.emit, self._observer), _Creation.NEW
        # Kafka's convertToConsumerGroup: the upgraded group is built from the classic one but only
        # registered once the whole heartbeat is accepted (here: the unregistered group is restored
        # from what the classic group holds, which emits nothing).
        try:
            persisted = self._context.upgraded_classic_group(group_id)
        except GroupConversionRefused as refused:
            raise _Refused(E.GROUP_ID_NOT_FOUND, str(refused)) from None
        group = ConsumerGroup(group_id, self._context.emit, self._observer)
        group.restore(persisted, {})
        return group, _Creation.UPGRADE

    def _heartbeat(self, req: ConsumerGroupHeartbeatRequest, now_ms: int) -> ConsumerGroupHeartbeatResponse:
        joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        owned = None if req.topic_partitions is None else frozenset(req.topic_partitions)
        if joining:
            group, creation = self._group_for_join(req.group_id)
        else:
            group, creation = self._existing_group(req.group_id), None
        member_id = req.member_id or self._new_member_id()
        if len(group.members) >= self.config.consumer_group_max_size and member_id not in group.members:
            raise _Refused(E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of "
                                                     f"{self.config.consumer_group_max_size} members.")
        member, replaced = heartbeat_member(group, req, member_id, owned)
        instance_id = req.instance_id

        # Everything that can still refuse the heartbeat runs on the unchanged group.
        updated = attrs.evolve(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=(req.server_assignor if req.server_assignor is not None
                             else member.server_assignor),
            subscribed_topic_names=(req.subscribed_topic_names if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            # An empty regex is "no regex" (the member's converter): how a member drops its regex.
            subscribed_topic_regex=(req.subscribed_topic_regex if req.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=req.client_id, client_host=req.client_host,
            # A ConsumerGroupHeartbeat member speaks the consumer protocol (Kafka's consumerGroupHeartbeat
            # clears ClassicMemberMetadata).
            classic_member_metadata=None,
        )
        reconciled = self._update_and_reconcile(group, creation, member, updated, replaced, owned, now_ms)
        self.timers.schedule_session(group.group_id, reconciled, now_ms)
        subscription_sent = req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None
        full_request = joining or (req.rebalance_timeout_ms != -1 and subscription_sent and owned is not None)
        assignment = None
        if full_request or reconciled.assigned_partitions != member.assigned_partitions:
            assignment = reconciled.assigned_partitions
        return ConsumerGroupHeartbeatResponse(
            E.NONE, member_id=member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.consumer_group_heartbeat_interval_ms, assignment=assignment)

    def _update_and_reconcile(self, group: ConsumerGroup, creation: Optional[_Creation],
                              member: ConsumerGroupMember, updated: ConsumerGroupMember,
                              replaced: Optional[str], owned: Optional[AbstractSet[TopicPartition]],
                              now_ms: int) -> ConsumerGroupMember:
        """Steps 1-3 of Kafka's consumerGroupHeartbeat and classicGroupJoinToConsumerGroup: store the
        updated member, bump the group epoch if its subscription or the topics changed, compute the
        target assignment, reconcile the member; returns the reconciled member.

        Everything that can refuse (the assignor, a fencing reconciliation) runs before the group
        changes, so a refusal leaves it untouched."""
        member_id = updated.member_id
        in_group = member.member_id in group.members or replaced is not None
        previous = member if in_group else None
        invalid_regex = self._regexes.check_new_regex(group, updated)
        if invalid_regex is not None:
            raise _Refused(E.INVALID_REGULAR_EXPRESSION, invalid_regex)
        # Kafka's hasMemberSubscriptionChanged: a joining member bumps the epoch through its topic names
        # (a new member has none) or a regex already resolved; one that joins with only a regex the
        # group has not resolved yet waits at the current epoch (Kafka 4.4 answers it epoch 1 in a new
        # group) until the resolution bumps it.
        bump_group_epoch = (updated.subscribed_topic_names != member.subscribed_topic_names
                            or self._regexes.bumps_group_epoch(group, previous, updated))
        # Kafka refreshes the subscription metadata when a subscription changes or its refresh
        # deadline passes; here it is recomputed on every heartbeat, so a topic created, deleted or
        # grown bumps the group epoch at the next heartbeat of any member.
        metadata = self._metadata_of(subscribed_topics_with(group, previous, updated, group.resolved_regexes))
        group_epoch = group.group_epoch
        if bump_group_epoch or metadata != group.subscription_metadata:
            group_epoch += 1

        def current_target(mid: str) -> frozenset[TopicPartition]:
            # A new incarnation of a static member takes over the replaced one's target.
            return group.target_of(replaced if mid == member_id and replaced is not None else mid)

        new_target: Optional[dict[str, frozenset[TopicPartition]]] = None
        if group_epoch > group.assignment_epoch:
            new_target = self._target_assignments.build(group, members_after(group, updated, replaced),
                                                        current_target, metadata, group_epoch)
            target_epoch, target = group_epoch, new_target[member_id]
        else:
            target_epoch, target = group.assignment_epoch, current_target(member_id)
        try:
            reconciled = updated if updated.is_reconciled_to(target_epoch) else reconcile(
                updated, target_epoch, target, group.partition_epoch, owned, report=False)
        except FencedMemberEpoch as fenced:
            # Kafka's CurrentAssignmentBuilder throws: the heartbeat fails and nothing changes.
            raise _Refused(E.FENCED_MEMBER_EPOCH, str(fenced)) from None

        # Kafka decides before the heartbeat's records are applied (the last resolution time still
        # counts a regex this heartbeat drops).
        refresh_regexes = self._regexes.refresh_needed(group, previous, updated, now_ms)

        # Accepted: from here on the group changes.
        if creation is not None:
            self._register(group, creation, now_ms)
        if replaced is not None:
            self.timers.cancel(group.group_id, replaced)
            group.replace_static_member(replaced, member)
        group.update_member(updated)
        if group_epoch != group.group_epoch:
            group.set_epochs(group_epoch, metadata)
        if new_target is not None:
            group.set_target_assignment(group_epoch, new_target)
        if reconciled != updated:
            check_transition(member_id, updated.state, reconciled.state)  # reported now that it happens
            group.update_member(reconciled)
            self.timers.after_reconciliation(group.group_id, reconciled, now_ms)
        if refresh_regexes:
            self._regexes.schedule(group.group_id, now_ms,
                                   functools.partial(self._refresh_regexes, group.group_id))
        return reconciled

    def update_and_reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                             updated: ConsumerGroupMember, replaced: Optional[str],
                             owned: Optional[AbstractSet[TopicPartition]],
                             now_ms: int) -> ConsumerGroupMember:
        """:meth:`_update_and_reconcile` for a classic member's JoinGroup (the group is registered);
        a refusal raises ClassicRequestRefused, which the caller turns into its answer."""
        try:
            return self._update_and_reconcile(group, None, member, updated, replaced, owned, now_ms)
        except _Refused as refused:
            raise ClassicRequestRefused(refused.code) from None

    def remove_member(self, group: ConsumerGroup, member_id: str) -> None:
        """A classic member leaves (the caller bumps the group epoch once for the batch)."""
        group.remove_member(member_id)
        self.timers.cancel(group.group_id, member_id)

    def bump_group_epoch(self, group: ConsumerGroup) -> None:
        """Members left: the group epoch is bumped, and an emptied group's target assignment epoch
        catches up with it (KAFKA-20442, Kafka 4.4: an empty group has matching epochs, so it is
        Empty and the next member's assignment is computed for the epoch after)."""
        group.set_epochs(group.group_epoch + 1, self._subscription_metadata(group))
        if not group.members:
            group.set_target_assignment(group.group_epoch, {})

    def _register(self, group: ConsumerGroup, creation: _Creation, now_ms: int) -> None:
        """A heartbeat that creates or upgrades the group is accepted: the id becomes this group's."""
        offsets = self._context.release_classic_group(group.group_id)
        self._groups[group.group_id] = group
        group.take_offsets(offsets)
        if creation is _Creation.NEW:
            # The header of the new group (Kafka 4.4 creates it at INITIAL_GROUP_EPOCH, KAFKA-20268),
            # written even when this heartbeat does not bump the epoch (a regex not resolved yet).
            group.set_epochs(group.group_epoch, {})
            return
        # Kafka's convertToConsumerGroup: the records that create the group as converted, and a session
        # for every classic member (their JoinGroup / Heartbeat keep it alive from now on).
        for record in group.creation_records():
            self._context.emit(record)
        for member in group.members.values():
            self.timers.schedule_session(group.group_id, member, now_ms)

    def _refresh_regexes(self, group_id: str, now_ms: int) -> None:
        """The resolution timer (Kafka's executor task and handleRegularExpressionsResult): the group's
        regexes resolved and written; the group epoch bumped if a resolution or the subscribed topics'
        metadata changed, so the next heartbeats compute and hand out the new target."""
        group = self.group(group_id)
        if group is None:
            self._regexes.forget(group_id)
            return
        changed = self._regexes.resolve(group, now_ms)
        metadata = self._subscription_metadata(group)
        if changed or metadata != group.subscription_metadata:
            group.set_epochs(group.group_epoch + 1, metadata)

    def _metadata_of(self, topics: Iterable[str]) -> dict[str, int]:
        """The partition count of each of ``topics`` that exists (the group's subscription metadata)."""
        metadata = {}
        for topic in topics:
            partitions = self._context.partition_count(topic)
            if partitions is not None:
                metadata[topic] = partitions
        return metadata

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, int]:
        return self._metadata_of(group.subscribed_topics())

    # -- leaving and fencing -------------------------------------------------------------

    def _leave(self, req: ConsumerGroupHeartbeatRequest, now_ms: int) -> ConsumerGroupHeartbeatResponse:
        """Kafka's consumerGroupLeave."""
        group = self._existing_group(req.group_id)
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise _Refused(E.UNKNOWN_MEMBER_ID,
                               f"Member {req.member_id} is not a member of group {req.group_id}.")
        else:
            member = group.static_member(req.instance_id)
            if member is None:
                raise _Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise _Refused(E.FENCED_INSTANCE_ID,
                               f"Static member {req.member_id} with instance id {req.instance_id} was "
                               f"fenced by member {member.member_id}.")
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # Kafka's consumerGroupStaticMemberGroupLeave: the member keeps its assignment for a
                # restart within the session timeout; what it was revoking is released now.
                away = attrs.evolve(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                    partitions_pending_revocation=frozenset())
                group.update_member(away)
                return ConsumerGroupHeartbeatResponse(E.NONE, member_id=member.member_id,
                                                      member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        self._fence(group, member, now_ms)
        return ConsumerGroupHeartbeatResponse(E.NONE, member_id=req.member_id, member_epoch=req.member_epoch)

    def _fence(self, group: ConsumerGroup, member: ConsumerGroupMember, now_ms: int) -> None:
        """Kafka's consumerGroupFenceMember: the member goes and the group epoch is bumped, or, when it
        was the last member of the consumer protocol, the group becomes classic (online downgrade)."""
        if self._downgrade_allowed(group, member.member_id):
            self.convert_to_classic_group(group, member.member_id, now_ms)
            return
        group.remove_member(member.member_id)
        self.bump_group_epoch(group)
        self.timers.cancel(group.group_id, member.member_id)

    def _downgrade_allowed(self, group: ConsumerGroup, leaving_member_id: str) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMember."""
        return (group.all_members_use_classic_protocol_except(leaving_member_id)
                and len(group.members) > 1
                and self.config.consumer_group_migration_policy.downgrade_enabled
                and len(group.members) - 1 <= self.config.group_max_size)

    def downgrade_allowed_on_replacement(self, group: ConsumerGroup, replaced_member_id: str) -> bool:
        """Kafka's validateOnlineDowngradeWithReplacedMemberId: a classic static member takes over the
        instance of the last consumer-protocol member (checked on the group before the replacement)."""
        return (group.all_members_use_classic_protocol_except(replaced_member_id)
                and self.config.consumer_group_migration_policy.downgrade_enabled
                and len(group.members) <= self.config.group_max_size)

    def convert_to_classic_group(self, group: ConsumerGroup, leaving_member_id: Optional[str], now_ms: int,
                                 *, rebalance: bool = True) -> None:
        """Kafka's convertToClassicGroup: tombstones for the consumer group's members, then the classic
        group that replaces it (its records follow, written by the classic side), which rebalances unless
        the conversion came from a static member's replacement (the joining member already has the
        leaving one's assignment)."""
        for record in group.tombstone_records():
            self._context.emit(record)
        for member_id in group.members:
            self.timers.cancel(group.group_id, member_id)
        del self._groups[group.group_id]
        self._context.downgrade_consumer_group(group, leaving_member_id, now_ms, rebalance=rebalance)

    def _fence_if_present(self, group_id: str, member_id: str, now_ms: int) -> None:
        """A member's deadline passed (Kafka's consumerGroupFenceMemberOperation): fenced if still there."""
        group = self._groups.get(group_id)
        if group is not None and member_id in group.members:
            self._fence(group, group.members[member_id], now_ms)

    def _member_epoch(self, group_id: str, member_id: str) -> Optional[int]:
        group = self._groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        return None if member is None else member.member_epoch

    # -- ConsumerGroupDescribe -----------------------------------------------------------

    def describe(self, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
        """:mod:`.describe`: a described group, or the error of an id that is no consumer group."""
        return describe_consumer_groups(req, self._existing_group, self.config.consumer_group_assignors[0],
                                        lambda topic: self._context.partition_count(topic) is not None)
