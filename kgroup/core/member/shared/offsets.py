"""Offset commit / fetch bookkeeping: building requests and reading responses."""
from __future__ import annotations

from typing import Mapping, Optional, Union

from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.shared.events import Generation
from kgroup.core.messages import (
    OffsetAndMetadata,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchResponse,
    PartitionOffsetCommit,
)
from kgroup.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    GroupMemberError,
    KGroupError,
    RetriableCommitFailedError,
)
from kgroup.values import TopicPartition

#: Errors after which the same request may succeed if sent again.
RETRIABLE = frozenset({
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.UNSTABLE_OFFSET_COMMIT,
})
#: Errors meaning "the coordinator moved": rediscover it.
COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
#: Errors meaning the member's generation is gone.
GENERATION_GONE = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID})


def normalize_offsets(offsets: Mapping[TopicPartition, Union[int, OffsetAndMetadata]]) -> dict:
    """Accepts ints, kgroup's OffsetAndMetadata, or anything with ``.offset`` (kafka-python's tuple)."""
    out = {}
    for tp, value in offsets.items():
        tp = tp if isinstance(tp, TopicPartition) else TopicPartition(*tp)
        if type(value) is int:
            # The usual case (an application's positions), first: hasattr on an int raises inside.
            out[tp] = OffsetAndMetadata(value)
        elif isinstance(value, OffsetAndMetadata):
            out[tp] = value
        elif hasattr(value, "offset"):
            epoch = getattr(value, "leader_epoch", None)
            out[tp] = OffsetAndMetadata(int(value.offset), getattr(value, "metadata", None) or "",
                                        -1 if epoch is None else int(epoch))
        else:
            out[tp] = OffsetAndMetadata(int(value))
    return out


def commit_error_code(response: OffsetCommitResponse) -> ErrorCode:
    """The first partition error (Kafka answers per partition; one is enough to react)."""
    for partition in response.partitions:
        if partition.error_code.is_error:
            return partition.error_code
    return ErrorCode.NONE


def commit_error(code: ErrorCode) -> KGroupError:
    if code in GENERATION_GONE or code is ErrorCode.REBALANCE_IN_PROGRESS:
        return CommitFailedError(
            f"commit failed ({code.name}): the group rebalanced and the partitions may be "
            "owned by another member; the member rejoins", code)
    return other_commit_error(code)


def other_commit_error(code: ErrorCode) -> KGroupError:
    """A commit error that says nothing about the membership, as both protocols report it."""
    if code is ErrorCode.FENCED_INSTANCE_ID:
        return FencedInstanceIdError("commit fenced: another member uses this group_instance_id", code)
    if code in RETRIABLE:
        return RetriableCommitFailedError(f"commit failed ({code.name}); it may be retried", code)
    return GroupMemberError(f"commit failed ({code.name})", code)


def commit_request(group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                   generation: Generation, group_instance_id: Optional[str]) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id, tuple(PartitionOffsetCommit(tp, om) for tp, om in sorted(offsets.items())),
        generation.generation_id, generation.member_id, group_instance_id)


def commit_generation_error(made_in: Generation, current: Generation,
                            member_generation_id: int) -> Optional[CommitFailedError]:
    """Why a commit made in ``made_in`` may not be sent in ``current`` (None: it may).

    ``member_generation_id`` is the member's own generation id, for the message
    (``current`` is the generation at close while the member is closing).
    """
    if not made_in.is_valid:
        return CommitFailedError(
            "commit failed: the member has no generation (it is rebalancing or left the group)")
    if made_in != current:
        return CommitFailedError(
            f"commit failed: it was made in generation {made_in.generation_id}, which is gone "
            f"(the member is now in generation {member_generation_id}); its partitions "
            "may be owned by another member", ErrorCode.ILLEGAL_GENERATION)
    return None


def fetched_offsets(response: OffsetFetchResponse) -> tuple[ErrorCode, dict]:
    """(error, offsets): the top-level error, or the first partition error."""
    code = response.error_code
    offsets = {}
    for partition in response.partitions:
        if partition.error_code.is_error and not code.is_error:
            code = partition.error_code
        committed = partition.committed
        if committed is not None and committed.offset < 0:
            committed = None
        offsets[partition.topic_partition] = committed
    return code, offsets
