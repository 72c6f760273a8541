"""What a KIP-848 member does with each ConsumerGroupHeartbeat error (Kafka
``AbstractHeartbeatRequestManager.onErrorResponse`` and
``ConsumerHeartbeatRequestManager.handleSpecificError``), as one table.

Every error first forgets the fields the last heartbeat sent (the next one
is full) and counts as a failed attempt (backoff); then:

- REDISCOVER: the coordinator moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
  look it up again and heartbeat as soon as it is found (no backoff).
- RETRY: COORDINATOR_LOAD_IN_PROGRESS: heartbeat again after the backoff.
- FENCE: FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: the member is out of the
  group; release the partitions as lost and rejoin with epoch 0 (no backoff).
- FATAL: anything else, each with its typed error.
"""
from __future__ import annotations

import enum

from kgroup.core.error_codes import ErrorCode
from kgroup.errors import (
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    GroupMemberError,
    KGroupError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)


class HeartbeatReaction(enum.Enum):
    REDISCOVER = "rediscover the coordinator"
    RETRY = "retry after the backoff"
    FENCE = "release the assignment as lost and rejoin"
    FATAL = "fail the member"


_E = ErrorCode
_H = HeartbeatReaction

REACTIONS: dict[ErrorCode, HeartbeatReaction] = {
    _E.NOT_COORDINATOR: _H.REDISCOVER,
    _E.COORDINATOR_NOT_AVAILABLE: _H.REDISCOVER,
    _E.COORDINATOR_LOAD_IN_PROGRESS: _H.RETRY,
    _E.FENCED_MEMBER_EPOCH: _H.FENCE,
    _E.UNKNOWN_MEMBER_ID: _H.FENCE,
}


def reaction_to(code: ErrorCode) -> HeartbeatReaction:
    return REACTIONS.get(code, HeartbeatReaction.FATAL)


def fatal_error(code: ErrorCode, message: str | None, group_id: str, instance_id: str | None) -> KGroupError:
    """The typed error a fatal heartbeat answer ends the member with."""
    said = f": {message}" if message else ""
    if code is _E.UNSUPPORTED_ASSIGNOR:
        return UnsupportedAssignorError(
            f"group {group_id}: the coordinator does not support the requested server assignor{said}", code)
    if code is _E.GROUP_MAX_SIZE_REACHED:
        return GroupMaxSizeReachedError(f"group {group_id} has reached its maximum size{said}", code)
    if code is _E.UNRELEASED_INSTANCE_ID:
        return UnreleasedInstanceIdError(
            f"group {group_id}: instance id {instance_id!r} is still held by another member{said}", code)
    if code is _E.FENCED_INSTANCE_ID:
        return FencedInstanceIdError(
            f"group {group_id}: another member joined with instance id {instance_id!r}{said}", code)
    if code is _E.INVALID_REGULAR_EXPRESSION:
        return GroupMemberError(f"group {group_id}: the coordinator refused the subscription regex{said}",
                                code)
    if code is _E.UNSUPPORTED_VERSION:
        return GroupMemberError(
            f"group {group_id}: the cluster does not support the consumer group protocol (KIP-848); "
            f"use group_protocol='classic' until it does{said}", code)
    return GroupMemberError(f"group {group_id}: ConsumerGroupHeartbeat failed with {code.name}{said}", code)
