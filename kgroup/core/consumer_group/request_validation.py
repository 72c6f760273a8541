"""Whether a ConsumerGroupHeartbeat may be looked at all (before any group is).

Kafka checks a request in ``GroupCoordinatorService`` (throwIfConsumerGroupHeartbeatRequestIsInvalid)
before its shard's GroupMetadataManager sees it; kgroup's ConsumerGroupManager calls
:func:`validate_heartbeat` first.  A refusal is :class:`HeartbeatRefused`, which the manager also raises
for what it refuses later (a heartbeat is all or nothing: nothing has changed when it is raised).
"""
from __future__ import annotations

from typing import Sequence

from kgroup.core.consumer_group_messages import (
    JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
)
from kgroup.core.error_codes import ErrorCode

__all__ = ["HeartbeatRefused", "validate_heartbeat"]

E = ErrorCode
#: The characters Java's String.trim() removes from both ends.
_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))


class HeartbeatRefused(Exception):
    """A heartbeat answered with an error; nothing has changed yet."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _is_blank(value: str) -> bool:
    """Java's ``value.trim().isEmpty()``: trim drops every character up to U+0020, nothing else."""
    return not value.strip(_JAVA_TRIMMED)


def validate_heartbeat(req: ConsumerGroupHeartbeatRequest, assignors: Sequence[str]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid (4.x): ids are checked trimmed, so a
    blank one counts as empty; then the server assignor must be one of ``assignors``."""
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
    if req.server_assignor is not None and req.server_assignor not in assignors:
        supported = ", ".join(assignors)
        raise HeartbeatRefused(E.UNSUPPORTED_ASSIGNOR,
                               f"ServerAssignor {req.server_assignor} is not supported. "
                               f"Supported assignors: {supported}.")
