"""The checks a ConsumerGroupHeartbeat passes before it may change anything (split from the manager).

Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, throwIfConsumerGroupMemberEpochIsInvalid and
getOrMaybeSubscribeDynamic/StaticConsumerGroupMember (which member a heartbeat is for); a failed check
raises :class:`HeartbeatRefused` with the code and message of the answer.
"""
from __future__ import annotations

from typing import AbstractSet, Optional

import attrs

from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.consumer_group_messages import (
    JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
)
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

__all__ = ["HeartbeatRefused", "validate_heartbeat_request", "check_member_epoch", "heartbeat_member"]

E = ErrorCode
#: The characters Java's String.trim() removes from both ends.
JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))


class HeartbeatRefused(Exception):
    """A heartbeat answered with an error; nothing has changed yet."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _is_subset(owned: Optional[AbstractSet[TopicPartition]], assigned: AbstractSet[TopicPartition]) -> bool:
    return owned is not None and owned <= assigned


def _is_blank(value: str) -> bool:
    """Java's ``value.trim().isEmpty()``: trim drops every character up to U+0020, nothing else."""
    return not value.strip(JAVA_TRIMMED)


def validate_heartbeat_request(req: ConsumerGroupHeartbeatRequest, config: GroupCoordinatorConfig) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid (4.x): ids are checked trimmed, so a
    blank one counts as empty."""
    def invalid(message: str) -> HeartbeatRefused:
        return HeartbeatRefused(E.INVALID_REQUEST, message)

    epoch = req.member_epoch
    member_id_required = req.api_version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH
    if member_id_required and _is_blank(req.member_id):
        # KIP-1082: from v1 the client generates its member id.
        raise invalid("MemberId can't be empty.")
    if _is_blank(req.group_id):
        raise invalid("GroupId can't be empty.")
    if req.instance_id is not None and _is_blank(req.instance_id):
        raise invalid("InstanceId can't be empty.")
    if req.rack_id is not None and _is_blank(req.rack_id):
        raise invalid("RackId can't be empty.")
    if epoch == JOIN_GROUP_MEMBER_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        # An empty list joins with no subscription (the member is in the group, assigned nothing).
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                          "(re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    assignors = config.consumer_group_assignors
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise HeartbeatRefused(E.UNSUPPORTED_ASSIGNOR,
                               f"ServerAssignor {req.server_assignor} is not supported. "
                               f"Supported assignors: {', '.join(assignors)}.")


def check_member_epoch(member: ConsumerGroupMember, received: int,
                       owned: Optional[AbstractSet[TopicPartition]]) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid."""
    def fenced(comparison: str) -> HeartbeatRefused:
        return HeartbeatRefused(E.FENCED_MEMBER_EPOCH,
                                f"The consumer group member has a {comparison} member epoch ({received}) "
                                f"than the one known by the group coordinator ({member.member_epoch}). The "
                                "member must abandon all its partitions and rejoin.")

    if received > member.member_epoch:
        raise fenced("greater")
    if received < member.member_epoch:
        # The response that bumped the epoch may have been lost: the previous epoch with a subset
        # of the current assignment is accepted.
        if received != member.previous_member_epoch or not _is_subset(owned, member.assigned_partitions):
            raise fenced("smaller")


def heartbeat_member(group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, member_id: str,
                     owned: Optional[AbstractSet[TopicPartition]],
                     ) -> tuple[ConsumerGroupMember, Optional[str]]:
    """Kafka's getOrMaybeSubscribeDynamicConsumerGroupMember / ...StaticConsumerGroupMember: the member
    a heartbeat that is not a leave is for (a new one when it joins), and the member id of the static
    member it replaces, if any.  The group does not change."""
    joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    instance_id = req.instance_id
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise HeartbeatRefused(E.UNKNOWN_MEMBER_ID,
                                       f"Member {member_id} is not a member of group {req.group_id}.")
            member = ConsumerGroupMember(member_id)
        check_member_epoch(member, req.member_epoch, owned)
        return member, None
    existing = group.static_member(instance_id)
    if joining:
        if existing is None:
            return ConsumerGroupMember(member_id), None
        # A classic static member may be replaced at once by one of the consumer protocol
        # (Kafka's getOrMaybeSubscribeStaticConsumerGroupMember, online upgrade).
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and not existing.uses_classic_protocol:
            raise HeartbeatRefused(E.UNRELEASED_INSTANCE_ID,
                                   f"Static member {member_id} with instance id {instance_id} cannot "
                                   "join the group because the instance id is owned by "
                                   f"{existing.member_id} member.")
        # The new incarnation keeps the old one's assignment and rejoins at epoch 0.
        replacement = attrs.evolve(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        return replacement, existing.member_id
    if existing is None:
        raise HeartbeatRefused(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise HeartbeatRefused(E.FENCED_INSTANCE_ID,
                               f"Static member {member_id} with instance id {instance_id} was fenced by "
                               f"member {existing.member_id}.")
    check_member_epoch(existing, req.member_epoch, owned)
    return existing, None
