"""Conversions between kgroup's protocol values and kafka-python 3.0 structs.

Pure functions: ``to_struct`` builds the kafka-python request for a
:mod:`kgroup.core.messages` request (leaving the api version open so the
connection negotiates the highest one both sides support, capped where
kgroup does not speak a newer version's semantics), and ``from_struct``
turns the decoded response back into a kgroup value.  Version-dependent
layouts (FindCoordinator v4+ batches, LeaveGroup v3+ members, OffsetFetch
v8+ groups) are handled here so nothing above sees them.
"""
from __future__ import annotations

import collections
from typing import Callable

from kafka.protocol.consumer import (
    HeartbeatRequest as KHeartbeatRequest,
    JoinGroupRequest as KJoinGroupRequest,
    LeaveGroupRequest as KLeaveGroupRequest,
    OffsetCommitRequest as KOffsetCommitRequest,
    OffsetFetchRequest as KOffsetFetchRequest,
    SyncGroupRequest as KSyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest as KFindCoordinatorRequest

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

#: Highest versions kgroup maps for a classic-protocol member: OffsetCommit v9+ /
#: OffsetFetch v9+ belong to the KIP-848 consumer protocol (member epochs).  A
#: KIP-848 member's requests ask for v9 itself (``OffsetCommitRequest.api_version``,
#: ``OffsetFetchRequest.member_id``); v10 (topic ids) is not mapped.
MAX_OFFSET_COMMIT_VERSION = 8
MAX_OFFSET_FETCH_VERSION = 8
#: OffsetCommit / OffsetFetch v9: GenerationIdOrMemberEpoch, and the fetching member's id and epoch.
MEMBER_EPOCH_OFFSETS_VERSION = 9


def error_code(value: int) -> ErrorCode:
    """Kafka error code as kgroup's enum.  ``ErrorCode`` names every code the
    group APIs answer with (authorization failures included, so they reach
    the app as kafka-python's ``TopicAuthorizationFailedError`` /
    ``GroupAuthorizationFailedError``); anything else becomes
    UNKNOWN_SERVER_ERROR."""
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


# -- requests -----------------------------------------------------------------


def _join(req: m.JoinGroupRequest):
    proto = KJoinGroupRequest.JoinGroupRequestProtocol
    return KJoinGroupRequest(
        group_id=req.group_id,
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type,
        protocols=[proto(name=p.name, metadata=p.metadata) for p in req.protocols],
        reason=req.reason,
        max_version=req.api_version,
    )


def _sync(req: m.SyncGroupRequest):
    assignment = KSyncGroupRequest.SyncGroupRequestAssignment
    return KSyncGroupRequest(
        group_id=req.group_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type,
        protocol_name=req.protocol_name,
        assignments=[assignment(member_id=a.member_id, assignment=a.assignment) for a in req.assignments],
    )


def _heartbeat(req: m.HeartbeatRequest):
    return KHeartbeatRequest(
        group_id=req.group_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
    )


def _leave(req: m.LeaveGroupRequest):
    identity = KLeaveGroupRequest.MemberIdentity
    members = list(req.members)
    # v0-v2 carry exactly one member id at the top level; the connection
    # picks the version, so both layouts are filled in.
    return KLeaveGroupRequest(
        group_id=req.group_id,
        member_id=members[0].member_id if members else m.UNKNOWN_MEMBER_ID,
        members=[
            identity(member_id=x.member_id, group_instance_id=x.group_instance_id, reason=x.reason)
            for x in members
        ],
        min_version=0 if len(members) <= 1 else 3,
    )


def _by_topic(partitions) -> dict[str, list]:
    grouped: dict[str, list] = collections.defaultdict(list)
    for item in partitions:
        tp = item.topic_partition if hasattr(item, "topic_partition") else item
        grouped[tp.topic].append(item)
    return grouped


def _offset_commit(req: m.OffsetCommitRequest):
    topic_cls = KOffsetCommitRequest.OffsetCommitRequestTopic
    partition_cls = topic_cls.OffsetCommitRequestPartition
    topics = [
        topic_cls(
            name=topic,
            partitions=[
                partition_cls(
                    partition_index=p.topic_partition.partition,
                    committed_offset=p.committed.offset,
                    committed_leader_epoch=p.committed.leader_epoch,
                    committed_metadata=p.committed.metadata,
                )
                for p in parts
            ],
        )
        for topic, parts in _by_topic(req.offsets).items()
    ]
    with_epoch = req.api_version is not None and req.api_version >= MEMBER_EPOCH_OFFSETS_VERSION
    return KOffsetCommitRequest(
        group_id=req.group_id,
        generation_id_or_member_epoch=req.generation_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        topics=topics,
        min_version=MEMBER_EPOCH_OFFSETS_VERSION if with_epoch else 0,
        max_version=MEMBER_EPOCH_OFFSETS_VERSION if with_epoch else MAX_OFFSET_COMMIT_VERSION,
    )


def _offset_fetch(req: m.OffsetFetchRequest):
    topic_cls = KOffsetFetchRequest.OffsetFetchRequestTopic
    group_cls = KOffsetFetchRequest.OffsetFetchRequestGroup
    group_topic_cls = group_cls.OffsetFetchRequestTopics
    if req.partitions is None:
        topics = group_topics = None
        min_version = 2  # "all committed partitions" needs a nullable topic list
    else:
        grouped = {t: sorted(tp.partition for tp in tps) for t, tps in _by_topic(req.partitions).items()}
        topics = [topic_cls(name=t, partition_indexes=p) for t, p in grouped.items()]
        group_topics = [group_topic_cls(name=t, partition_indexes=p) for t, p in grouped.items()]
        min_version = 0
    if req.member_id is not None:
        # A KIP-848 member asks as itself: v9's MemberId / MemberEpoch (checked by the coordinator).
        group = group_cls(group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
                          topics=group_topics)
        min_version = max_version = MEMBER_EPOCH_OFFSETS_VERSION
    else:
        group = group_cls(group_id=req.group_id, topics=group_topics)
        max_version = MAX_OFFSET_FETCH_VERSION
    return KOffsetFetchRequest(
        group_id=req.group_id,
        topics=topics,
        groups=[group],
        require_stable=req.require_stable,
        min_version=min_version,
        max_version=max_version,
    )


def _find_coordinator(req: m.FindCoordinatorRequest):
    return KFindCoordinatorRequest(key=req.key, key_type=req.key_type, coordinator_keys=[req.key])


_TO_STRUCT: dict[type, Callable] = {
    m.JoinGroupRequest: _join,
    m.SyncGroupRequest: _sync,
    m.HeartbeatRequest: _heartbeat,
    m.LeaveGroupRequest: _leave,
    m.OffsetCommitRequest: _offset_commit,
    m.OffsetFetchRequest: _offset_fetch,
    m.FindCoordinatorRequest: _find_coordinator,
}

SUPPORTED_REQUESTS = tuple(_TO_STRUCT)


def to_struct(request: object):
    """The kafka-python request struct for a kgroup request value."""
    try:
        convert = _TO_STRUCT[type(request)]
    except KeyError:
        raise TypeError(
            f"{type(request).__name__} is not a request the kafka-python transport carries; "
            f"supported: {', '.join(t.__name__ for t in SUPPORTED_REQUESTS)}"
        ) from None
    return convert(request)


# -- responses ----------------------------------------------------------------


def _join_response(resp) -> m.JoinGroupResponse:
    return m.JoinGroupResponse(
        error_code=error_code(resp.error_code),
        generation_id=resp.generation_id,
        protocol_type=resp.protocol_type,
        protocol_name=resp.protocol_name,
        leader=resp.leader,
        member_id=resp.member_id,
        members=[
            m.JoinGroupMember(member_id=x.member_id, group_instance_id=x.group_instance_id,
                              metadata=bytes(x.metadata))
            for x in resp.members
        ],
        skip_assignment=bool(resp.skip_assignment),
    )


def _sync_response(resp) -> m.SyncGroupResponse:
    return m.SyncGroupResponse(
        error_code=error_code(resp.error_code),
        protocol_type=resp.protocol_type,
        protocol_name=resp.protocol_name,
        assignment=bytes(resp.assignment or b""),
    )


def _heartbeat_response(resp) -> m.HeartbeatResponse:
    return m.HeartbeatResponse(error_code=error_code(resp.error_code))


def _leave_response(resp) -> m.LeaveGroupResponse:
    return m.LeaveGroupResponse(
        error_code=error_code(resp.error_code),
        members=[
            m.LeaveGroupMemberResponse(x.member_id, x.group_instance_id, error_code(x.error_code))
            for x in (resp.members or ())
        ],
    )


def _offset_commit_response(resp) -> m.OffsetCommitResponse:
    return m.OffsetCommitResponse(
        partitions=[
            m.PartitionError(TopicPartition(t.name, p.partition_index), error_code(p.error_code))
            for t in resp.topics
            for p in t.partitions
        ]
    )


def _offset_fetch_response(resp) -> m.OffsetFetchResponse:
    if resp.API_VERSION >= 8:
        group = resp.groups[0]
        top_error, topics = group.error_code, group.topics
    else:
        top_error = resp.error_code if resp.API_VERSION >= 2 else 0
        topics = resp.topics
    partitions = []
    for t in topics:
        for p in t.partitions:
            # Kafka answers offset -1 for "nothing committed".
            committed = None
            if p.committed_offset >= 0:
                epoch = p.committed_leader_epoch if p.committed_leader_epoch is not None else -1
                committed = m.OffsetAndMetadata(p.committed_offset, p.metadata or "", epoch)
            partitions.append(
                m.PartitionOffset(TopicPartition(t.name, p.partition_index), committed,
                                  error_code(p.error_code))
            )
    return m.OffsetFetchResponse(error_code=error_code(top_error), partitions=partitions)


def _find_coordinator_response(resp) -> m.FindCoordinatorResponse:
    if resp.API_VERSION >= 4:
        c = resp.coordinators[0]
        return m.FindCoordinatorResponse(error_code(c.error_code), c.node_id, c.host, c.port)
    return m.FindCoordinatorResponse(error_code(resp.error_code), resp.node_id, resp.host, resp.port)


_FROM_STRUCT: dict[type, Callable] = {
    m.JoinGroupRequest: _join_response,
    m.SyncGroupRequest: _sync_response,
    m.HeartbeatRequest: _heartbeat_response,
    m.LeaveGroupRequest: _leave_response,
    m.OffsetCommitRequest: _offset_commit_response,
    m.OffsetFetchRequest: _offset_fetch_response,
    m.FindCoordinatorRequest: _find_coordinator_response,
}


def from_struct(request: object, response) -> object:
    """The kgroup response value for ``response``, the answer to ``request``."""
    return _FROM_STRUCT[type(request)](response)
