"""Members of the classic protocol inside a KIP-848 consumer group (online migration).

The part of Kafka's GroupMetadataManager that serves JoinGroup, SyncGroup, Heartbeat and LeaveGroup
from a consumer group: classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup.  A classic member is a
:class:`~kgroup.core.consumer_group.member.ConsumerGroupMember` with ``classic_member_metadata``
(its session timeout and JoinGroup protocols).  Its JoinGroup is one reconciliation step, answered at
once with the member epoch as the generation; its SyncGroup gets the assigned partitions encoded with
the ConsumerProtocol version of its subscription; its Heartbeat answers REBALANCE_IN_PROGRESS when
the member has to rejoin to move on (the group epoch moved, partitions to revoke, or released
partitions to collect).  Three timers keep it honest: its session, a join deadline once it is told to
rejoin, and a sync deadline after each JoinGroup (each the member's rebalance timeout); missing one
fences the member as a missed ConsumerGroupHeartbeat would.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import attrs

from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    CONSUMER_PROTOCOL_TYPE, UNKNOWN_MEMBER_ID, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupMemberResponse, LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
)
from kgroup.errors import InvalidProtocolMetadata
from kgroup.values import Assignment
from kgroup.wire.consumer_protocol import decode_subscription, encode_assignment, subscription_version

if TYPE_CHECKING:  # the manager owns this helper: imported for the type only
    from kgroup.core.consumer_group.manager import ConsumerGroupManager

__all__ = ["ClassicMemberRequests", "ClassicRequestRefused"]

E = ErrorCode


class ClassicRequestRefused(Exception):
    """A classic member's request to a consumer group is answered with ``code``; nothing changed."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


def _classic(member: ConsumerGroupMember) -> ClassicMemberMetadata:
    """Kafka's throwIfMemberDoesNotUseClassicProtocol."""
    if member.classic_member_metadata is None:
        raise ClassicRequestRefused(E.UNKNOWN_MEMBER_ID)
    return member.classic_member_metadata


def _validated_member(group: ConsumerGroup, member_id: str,
                      instance_id: Optional[str]) -> ConsumerGroupMember:
    """Kafka's validateConsumerGroupMember: the member, or UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID."""
    if instance_id is None:
        member = group.members.get(member_id)
    else:
        member = group.static_member(instance_id)
        if member is not None and member.member_id != member_id:
            raise ClassicRequestRefused(E.FENCED_INSTANCE_ID)
    if member is None:
        raise ClassicRequestRefused(E.UNKNOWN_MEMBER_ID)
    return member


def assignment_bytes(member: ConsumerGroupMember) -> bytes:
    """Kafka's prepareAssignment: the assigned partitions, encoded with the ConsumerProtocol version of
    the member's first protocol's subscription (a client reads the version it wrote)."""
    classic = _classic(member)
    version = subscription_version(classic.supported_protocols[0].metadata)
    return encode_assignment(Assignment(tuple(sorted(member.assigned_partitions))), version=min(version, 3))


class ClassicMemberRequests:
    """The classic APIs against a consumer group; the manager owns the groups, timers and assignor."""

    def __init__(self, manager: "ConsumerGroupManager") -> None:
        self._manager = manager

    # -- JoinGroup ---------------------------------------------------------------------

    def join(self, group: ConsumerGroup, req: JoinGroupRequest, now_ms: int) -> JoinGroupResponse:
        try:
            return self._join(group, req, now_ms)
        except ClassicRequestRefused as refused:
            return JoinGroupResponse(refused.code, member_id=req.member_id)

    def _join(self, group: ConsumerGroup, req: JoinGroupRequest, now_ms: int) -> JoinGroupResponse:
        manager = self._manager
        unknown = req.member_id == UNKNOWN_MEMBER_ID
        member_id = manager.new_member_id() if unknown else req.member_id
        max_size = manager.config.consumer_group_max_size
        if len(group.members) >= max_size and (unknown or member_id not in group.members):
            raise ClassicRequestRefused(E.GROUP_MAX_SIZE_REACHED)
        names = tuple(p.name for p in req.protocols)
        if not group.supports_classic_protocols(req.protocol_type, names):
            raise ClassicRequestRefused(E.INCONSISTENT_GROUP_PROTOCOL)
        instance_id = req.group_instance_id
        if unknown and instance_id is None and req.api_version >= 4:
            # KIP-394: a dynamic member first learns its id (no member is created yet).
            return JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=member_id)
        try:
            subscription = decode_subscription(req.protocols[0].metadata)
        except InvalidProtocolMetadata:
            # Kafka's deserializeSubscription throws IllegalStateException: an unknown server error.
            raise ClassicRequestRefused(E.UNKNOWN_SERVER_ERROR) from None
        replaced: Optional[str] = None
        if instance_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
        else:
            existing = group.static_member(instance_id)
            if unknown:
                if existing is None:
                    member = ConsumerGroupMember(member_id)
                else:
                    # Kafka's getOrMaybeSubscribeStaticConsumerGroupMember: a classic member may replace
                    # the instance at once; the new incarnation rejoins at epoch 0.
                    member = attrs.evolve(existing, member_id=member_id, member_epoch=0,
                                          previous_member_epoch=0)
                    replaced = existing.member_id
            else:
                if existing is None:
                    raise ClassicRequestRefused(E.UNKNOWN_MEMBER_ID)
                if existing.member_id != member_id:
                    raise ClassicRequestRefused(E.FENCED_INSTANCE_ID)
                member = existing
        updated = attrs.evolve(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            subscribed_topic_names=subscription.topics,
            client_id=req.client_id, client_host=req.client_host,
            classic_member_metadata=ClassicMemberMetadata(req.session_timeout_ms, req.protocols),
        )
        owned = frozenset(subscription.owned_partitions)
        downgrade = replaced is not None and manager.downgrade_allowed_on_replacement(group, replaced)
        reconciled = manager.update_and_reconcile(group, member, updated, replaced, owned, now_ms)
        response = JoinGroupResponse(E.NONE, generation_id=reconciled.member_epoch,
                                     protocol_type=CONSUMER_PROTOCOL_TYPE,
                                     protocol_name=req.protocols[0].name, member_id=member_id)
        if downgrade:
            # The last consumer-protocol member was the replaced static one: the group becomes classic
            # and Stable, the new incarnation holding the replaced one's assignment (Kafka's
            # classicGroupJoinToConsumerGroup step 4); the classic group keeps its timers from now on.
            manager.convert_to_classic_group(group, None, now_ms, rebalance=False)
            return response
        manager.timers.schedule_session(group.group_id, reconciled, now_ms)
        manager.timers.schedule_classic_sync(group.group_id, member_id, req.rebalance_timeout_ms, now_ms)
        return response

    # -- SyncGroup ---------------------------------------------------------------------

    def sync(self, group: ConsumerGroup, req: SyncGroupRequest, now_ms: int) -> SyncGroupResponse:
        try:
            member = _validated_member(group, req.member_id, req.group_instance_id)
            classic = _classic(member)
            if req.generation_id != member.member_epoch:
                raise ClassicRequestRefused(E.ILLEGAL_GENERATION)
            # Kafka's throwIfClassicProtocolUnmatched: the protocol named in the JoinGroup answer.
            if req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise ClassicRequestRefused(E.INCONSISTENT_GROUP_PROTOCOL)
            if req.protocol_name is not None and req.protocol_name != classic.supported_protocols[0].name:
                raise ClassicRequestRefused(E.INCONSISTENT_GROUP_PROTOCOL)
            self._refuse_if_rebalance_in_progress(group, member, now_ms)
        except ClassicRequestRefused as refused:
            return SyncGroupResponse(refused.code)
        timers = self._manager.timers
        timers.synced(group.group_id, member.member_id)
        timers.schedule_session(group.group_id, member, now_ms)
        return SyncGroupResponse(E.NONE, req.protocol_type, req.protocol_name, assignment_bytes(member))

    def _refuse_if_rebalance_in_progress(self, group: ConsumerGroup, member: ConsumerGroupMember,
                                         now_ms: int) -> None:
        """Kafka's throwIfRebalanceInProgress: a member behind the group epoch must rejoin first, unless
        it is still revoking (its next JoinGroup finishes that)."""
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._manager.timers.schedule_classic_join_if_absent(group.group_id, member, now_ms)
            raise ClassicRequestRefused(E.REBALANCE_IN_PROGRESS)

    # -- Heartbeat ---------------------------------------------------------------------

    def heartbeat(self, group: ConsumerGroup, req: HeartbeatRequest, now_ms: int) -> ErrorCode:
        try:
            member = _validated_member(group, req.member_id, req.group_instance_id)
            _classic(member)
            if req.generation_id != member.member_epoch:
                return E.ILLEGAL_GENERATION
        except ClassicRequestRefused as refused:
            return refused.code
        self._manager.timers.schedule_session(group.group_id, member, now_ms)
        state = member.state
        if (member.member_epoch < group.group_epoch or state is MemberState.UNREVOKED_PARTITIONS
                or (state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            # The member rejoins to catch up with the epoch, to revoke, or to collect released partitions.
            self._manager.timers.schedule_classic_join_if_absent(group.group_id, member, now_ms)
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # -- LeaveGroup --------------------------------------------------------------------

    def leave(self, group: ConsumerGroup, req: LeaveGroupRequest, now_ms: int) -> LeaveGroupResponse:
        results = []
        removed = False
        for ident in req.members:
            member_id, instance_id = ident.member_id, ident.group_instance_id
            try:
                if instance_id is None:
                    member = group.members.get(member_id)
                    if member is None:
                        raise ClassicRequestRefused(E.UNKNOWN_MEMBER_ID)
                else:
                    member = group.static_member(instance_id)
                    if member is None:
                        raise ClassicRequestRefused(E.UNKNOWN_MEMBER_ID)
                    # An admin removes a static member by instance id alone.
                    if member_id != UNKNOWN_MEMBER_ID and member_id != member.member_id:
                        raise ClassicRequestRefused(E.FENCED_INSTANCE_ID)
                    member_id = member.member_id
                _classic(member)
            except ClassicRequestRefused as refused:
                results.append(LeaveGroupMemberResponse(member_id, instance_id, refused.code))
                continue
            self._manager.remove_member(group, member_id)
            removed = True
            results.append(LeaveGroupMemberResponse(member_id, instance_id, E.NONE))
        if removed:
            # Kafka's classicGroupLeaveToConsumerGroup: one group epoch bump for the whole batch.
            self._manager.bump_group_epoch(group)
        return LeaveGroupResponse(E.NONE, tuple(results))
