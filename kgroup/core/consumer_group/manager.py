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

import collections
import functools
import uuid
from typing import AbstractSet, Callable, Iterable, Mapping, Optional

import attrs

from kgroup.assignors import get_server_assignor
from kgroup.assignors.server_base import AssignmentMember, ServerAssignor
from kgroup.core.consumer_group.context import ConsumerGroupContext
from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState, check_transition
from kgroup.core.consumer_group.reconciliation import FencedMemberEpoch, reconcile
from kgroup.core.consumer_group_messages import (
    JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, DescribedConsumerGroup, DescribedConsumerGroupMember,
)
from kgroup.core.consumer_group.records import PersistedConsumerGroup
from kgroup.core.consumer_group.regex_subscriptions import RegexSubscriptions
from kgroup.core.consumer_group.request_validation import HeartbeatRefused as _Refused
from kgroup.core.consumer_group.request_validation import validate_heartbeat
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import TransitionObserver
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition

__all__ = ["ConsumerGroupManager", "session_timer_key", "rebalance_timer_key"]

E = ErrorCode


def session_timer_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def rebalance_timer_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-rebalance", group_id, member_id)


def _is_subset(owned: Optional[AbstractSet[TopicPartition]], assigned: AbstractSet[TopicPartition]) -> bool:
    return owned is not None and owned <= assigned


def _members_after(group: ConsumerGroup, updated: ConsumerGroupMember,
                   replaced: Optional[str]) -> list[ConsumerGroupMember]:
    """The group's members once ``updated`` is stored (replacing static member ``replaced``), in the order
    the group will hold them: a member whose value changes moves to the end, as the group's dict does."""
    if group.members.get(updated.member_id) == updated:
        return list(group.members.values())
    return [m for m in group.members.values() if m.member_id not in (updated.member_id, replaced)] + [updated]


def _preferred(assignor_names: list[str], default: str) -> str:
    """Kafka's preferredServerAssignor over these names (ConsumerGroup.preferred_assignor's rule)."""
    if not assignor_names:
        return default
    counts = collections.Counter(assignor_names)
    return max(sorted(counts), key=lambda name: counts[name])


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
        #: Assignor instances by name that take precedence over the registry (tests' prepared assignors).
        self._server_assignors: Mapping[str, ServerAssignor] = server_assignors or {}
        #: (group id, member id) -> the epoch whose revocation the armed rebalance timer waits on.
        self._rebalance_epochs: dict[tuple[str, str], int] = {}
        self._regexes = RegexSubscriptions(config, context)

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
            self._schedule_session(group.group_id, member.member_id, now_ms)
            self._after_reconciliation(group, member, now_ms)

    def clear(self) -> None:
        """Forget every group (the coordinator resigns; its timer is reset with it)."""
        self._groups.clear()
        self._rebalance_epochs.clear()
        self._regexes.clear()

    # -- ConsumerGroupHeartbeat ----------------------------------------------------------

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest, now_ms: int) -> ConsumerGroupHeartbeatResponse:
        try:
            validate_heartbeat(req, self.config.consumer_group_assignors)
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

    def _group_for_join(self, group_id: str) -> tuple[ConsumerGroup, bool]:
        """Kafka's getOrMaybeCreateConsumerGroup(createIfNotExists=true): (group, is it new)."""
        group = self._groups.get(group_id)
        if group is not None and not group.is_(ConsumerGroupState.DEAD):
            return group, False
        classic_state = self._context.classic_group_state(group_id)
        if classic_state is not None and classic_state != "Empty":
            # Kafka upgrades a non-empty classic group only under group.consumer.migration.policy,
            # which kgroup does not implement.
            raise _Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return ConsumerGroup(group_id, self._context.emit, self._observer), True

    def _check_epoch(self, member: ConsumerGroupMember, received: int,
                     owned: Optional[AbstractSet[TopicPartition]]) -> None:
        """Kafka's throwIfConsumerGroupMemberEpochIsInvalid."""
        def fenced(comparison: str) -> _Refused:
            return _Refused(E.FENCED_MEMBER_EPOCH,
                            f"The consumer group member has a {comparison} member epoch ({received}) than "
                            f"the one known by the group coordinator ({member.member_epoch}). The member "
                            "must abandon all its partitions and rejoin.")

        if received > member.member_epoch:
            raise fenced("greater")
        if received < member.member_epoch:
            # The response that bumped the epoch may have been lost: the previous epoch with a subset
            # of the current assignment is accepted.
            if received != member.previous_member_epoch or not _is_subset(owned, member.assigned_partitions):
                raise fenced("smaller")

    def _heartbeat(self, req: ConsumerGroupHeartbeatRequest, now_ms: int) -> ConsumerGroupHeartbeatResponse:
        joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        owned = None if req.topic_partitions is None else frozenset(req.topic_partitions)
        if joining:
            group, is_new_group = self._group_for_join(req.group_id)
        else:
            group, is_new_group = self._existing_group(req.group_id), False
        member_id = req.member_id or self._new_member_id()
        if len(group.members) >= self.config.consumer_group_max_size and member_id not in group.members:
            raise _Refused(E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of "
                                                     f"{self.config.consumer_group_max_size} members.")
        replaced: Optional[str] = None
        instance_id = req.instance_id
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise _Refused(E.UNKNOWN_MEMBER_ID,
                                   f"Member {member_id} is not a member of group {req.group_id}.")
                member = ConsumerGroupMember(member_id)
            self._check_epoch(member, req.member_epoch, owned)
        else:
            existing = group.static_member(instance_id)
            if joining:
                if existing is None:
                    member = ConsumerGroupMember(member_id)
                else:
                    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise _Refused(E.UNRELEASED_INSTANCE_ID,
                                       f"Static member {member_id} with instance id {instance_id} cannot "
                                       "join the group because the instance id is owned by "
                                       f"{existing.member_id} member.")
                    # The new incarnation keeps the old one's assignment and rejoins at epoch 0.
                    member = attrs.evolve(existing, member_id=member_id, member_epoch=0,
                                          previous_member_epoch=0)
                    replaced = existing.member_id
            else:
                if existing is None:
                    raise _Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                if existing.member_id != member_id:
                    raise _Refused(E.FENCED_INSTANCE_ID,
                                   f"Static member {member_id} with instance id {instance_id} was fenced by "
                                   f"member {existing.member_id}.")
                member = existing
                self._check_epoch(member, req.member_epoch, owned)

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
        )
        in_group = member.member_id in group.members or replaced is not None
        previous = member if in_group else None
        invalid_regex = self._regexes.check_new_regex(group, updated)
        if invalid_regex is not None:
            raise _Refused(E.INVALID_REGULAR_EXPRESSION, invalid_regex)
        bump_group_epoch = (not in_group or updated.subscribed_topic_names != member.subscribed_topic_names
                            or self._regexes.bumps_group_epoch(group, previous, updated))
        # Kafka refreshes the subscription metadata when a subscription changes or its refresh
        # deadline passes; here it is recomputed on every heartbeat, so a topic created, deleted or
        # grown bumps the group epoch at the next heartbeat of any member.
        metadata = self._metadata_of(group.subscribed_topics_with(previous, updated, group.resolved_regexes))
        group_epoch = group.group_epoch
        if bump_group_epoch or metadata != group.subscription_metadata:
            group_epoch += 1

        def current_target(mid: str) -> frozenset[TopicPartition]:
            # A new incarnation of a static member takes over the replaced one's target.
            return group.target_of(replaced if mid == member_id and replaced is not None else mid)

        new_target: Optional[dict[str, frozenset[TopicPartition]]] = None
        if group_epoch > group.assignment_epoch:
            new_target = self._target_assignment(group, _members_after(group, updated, replaced),
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
        if is_new_group:
            offsets = self._context.release_empty_classic_group(req.group_id)
            self._groups[req.group_id] = group
            group.take_offsets(offsets)
            group.set_epochs(0, {})
        if replaced is not None:
            self._cancel_timers(group.group_id, replaced)
            group.replace_static_member(replaced, member)
        group.update_member(updated)
        if group_epoch != group.group_epoch:
            group.set_epochs(group_epoch, metadata)
        if new_target is not None:
            group.set_target_assignment(group_epoch, new_target)
        if reconciled != updated:
            check_transition(member_id, updated.state, reconciled.state)  # reported now that it happens
            group.update_member(reconciled)
            self._after_reconciliation(group, reconciled, now_ms)
        self._schedule_session(group.group_id, member_id, now_ms)
        if refresh_regexes:
            self._regexes.schedule(group.group_id, now_ms,
                                   functools.partial(self._refresh_regexes, group.group_id))
        subscription_sent = req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None
        full_request = joining or (req.rebalance_timeout_ms != -1 and subscription_sent and owned is not None)
        assignment = None
        if full_request or reconciled.assigned_partitions != member.assigned_partitions:
            assignment = reconciled.assigned_partitions
        return ConsumerGroupHeartbeatResponse(
            E.NONE, member_id=member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.consumer_group_heartbeat_interval_ms, assignment=assignment)

    def _after_reconciliation(self, group: ConsumerGroup, member: ConsumerGroupMember, now_ms: int) -> None:
        """The member must revoke within its rebalance timeout, or it is fenced."""
        key = (group.group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            self._rebalance_epochs[key] = member.member_epoch
            self._context.schedule_timer(rebalance_timer_key(*key),
                                         now_ms + max(member.rebalance_timeout_ms, 0),
                                         functools.partial(self._expire_rebalance, *key))
        elif self._rebalance_epochs.pop(key, None) is not None:
            self._context.cancel_timer(rebalance_timer_key(*key))

    def _schedule_session(self, group_id: str, member_id: str, now_ms: int) -> None:
        self._context.schedule_timer(session_timer_key(group_id, member_id),
                                     now_ms + self.config.consumer_group_session_timeout_ms,
                                     functools.partial(self._expire_session, group_id, member_id))

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

    def _target_assignment(self, group: ConsumerGroup, members: list[ConsumerGroupMember],
                           current_target: Callable[[str], frozenset[TopicPartition]],
                           metadata: Mapping[str, int],
                           group_epoch: int) -> dict[str, frozenset[TopicPartition]]:
        """Kafka's TargetAssignmentBuilder: the assignor maps ``members``' subscriptions to the new target.

        An assignor that raises refuses the heartbeat with UNKNOWN_SERVER_ERROR
        (GroupMetadataManager.updateTargetAssignment turns PartitionAssignorException into
        UnknownServerException); nothing has changed yet.  A member's subscription is its topic
        names plus what its regex resolved to.
        """
        assignors = [m.server_assignor for m in members if m.server_assignor is not None]
        name = _preferred(assignors, self.config.consumer_group_assignors[0])
        specs = {
            m.member_id: AssignmentMember(m.member_id, group.member_topics(m),
                                          current_target(m.member_id), m.instance_id, m.rack_id)
            for m in members
        }
        try:
            assignor = self._server_assignors.get(name) or get_server_assignor(name)
            result = assignor.assign(specs, metadata)
        except Exception as error:  # any assignor failure, as Kafka's PartitionAssignorException
            raise _Refused(E.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for epoch "
                                                   f"{group_epoch}: {error}") from error
        return {mid: result.get(mid, frozenset()) for mid in specs}

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
        self._fence(group, member)
        return ConsumerGroupHeartbeatResponse(E.NONE, member_id=req.member_id, member_epoch=req.member_epoch)

    def _fence(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Kafka's consumerGroupFenceMember: the member goes and the group epoch is bumped."""
        group.remove_member(member.member_id)
        group.set_epochs(group.group_epoch + 1, self._subscription_metadata(group))
        self._cancel_timers(group.group_id, member.member_id)

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self._context.cancel_timer(session_timer_key(group_id, member_id))
        self._context.cancel_timer(rebalance_timer_key(group_id, member_id))
        self._rebalance_epochs.pop((group_id, member_id), None)

    def _expire_session(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        self._fence(group, group.members[member_id])

    def _expire_rebalance(self, group_id: str, member_id: str, now_ms: int) -> None:
        """The member did not revoke within its rebalance timeout.

        Kafka's scheduleConsumerGroupRebalanceTimeout: fenced if it is still at the epoch it had to leave.
        """
        epoch = self._rebalance_epochs.pop((group_id, member_id), None)
        group = self._groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        member = group.members[member_id]
        if member.member_epoch == epoch:
            self._fence(group, member)

    # -- ConsumerGroupDescribe -----------------------------------------------------------

    def describe(self, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
        return ConsumerGroupDescribeResponse(tuple(self._describe_one(gid) for gid in req.group_ids))

    def _describe_one(self, group_id: str) -> DescribedConsumerGroup:
        if not group_id:
            return DescribedConsumerGroup(E.INVALID_GROUP_ID, group_id, "Group id can't be empty.")
        try:
            group = self._existing_group(group_id)
        except _Refused as refused:
            return DescribedConsumerGroup(refused.code, group_id, refused.message, group_state="Dead")
        members = tuple(
            DescribedConsumerGroupMember(
                m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                m.subscribed_topic_names, m.subscribed_topic_regex, m.assigned_partitions,
                group.target_of(m.member_id))
            for m in group.members.values())
        return DescribedConsumerGroup(
            E.NONE, group_id, group_state=group.state.value, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=group.preferred_assignor(self.config.consumer_group_assignors[0]), members=members)
