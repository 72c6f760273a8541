"""Group-protocol requests and responses as frozen values.

Fields follow Kafka's messages (JoinGroup v0-v9, SyncGroup v0-v5,
Heartbeat v0-v4, LeaveGroup v0-v5, OffsetCommit, OffsetFetch,
OffsetDelete, TxnOffsetCommit, FindCoordinator, DescribeGroups, ListGroups, DeleteGroups) with Kafka's
field names in snake_case.  Request-header data the coordinator needs
(``client_id``, ``client_host``, ``api_version``) travel on the request.
These values are what every transport (in-process, kafka-python's network
client, a future TCP server) converts to and from.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kgroup.core import consumer_group_messages as cg
from kgroup.core.error_codes import ErrorCode
from kgroup.values import NO_GENERATION, TopicPartition

UNKNOWN_MEMBER_ID = ""
CONSUMER_PROTOCOL_TYPE = "consumer"


def _tuple(value) -> tuple:
    return tuple(value)


# -- JoinGroup ---------------------------------------------------------------


@attrs.frozen
class JoinGroupProtocol:
    """One (assignor name, subscription bytes) pair a member supports."""

    name: str
    metadata: bytes


@attrs.frozen
class JoinGroupRequest:
    group_id: str
    member_id: str = UNKNOWN_MEMBER_ID
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000
    group_instance_id: Optional[str] = None
    protocol_type: str = CONSUMER_PROTOCOL_TYPE
    protocols: tuple[JoinGroupProtocol, ...] = attrs.field(default=(), converter=_tuple)
    reason: Optional[str] = None
    client_id: str = "kgroup"
    client_host: str = "/127.0.0.1"
    #: v4+ makes an unknown member take a round trip for MEMBER_ID_REQUIRED.
    api_version: int = 9


@attrs.frozen
class JoinGroupMember:
    member_id: str
    group_instance_id: Optional[str]
    metadata: bytes


@attrs.frozen
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    leader: str = ""
    member_id: str = UNKNOWN_MEMBER_ID
    #: All members' metadata; only the leader receives it.
    members: tuple[JoinGroupMember, ...] = attrs.field(default=(), converter=_tuple)
    skip_assignment: bool = False


# -- SyncGroup ---------------------------------------------------------------


@attrs.frozen
class SyncGroupAssignment:
    member_id: str
    assignment: bytes


@attrs.frozen
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str] = None
    protocol_type: Optional[str] = CONSUMER_PROTOCOL_TYPE
    protocol_name: Optional[str] = None
    #: Non-empty only from the leader.
    assignments: tuple[SyncGroupAssignment, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    assignment: bytes = b""


# -- Heartbeat ---------------------------------------------------------------


@attrs.frozen
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str] = None


@attrs.frozen
class HeartbeatResponse:
    error_code: ErrorCode


# -- LeaveGroup --------------------------------------------------------------


@attrs.frozen
class MemberIdentity:
    """One member leaving (LeaveGroup v3+ batches them; v0-v2 send one)."""

    member_id: str
    group_instance_id: Optional[str] = None
    reason: Optional[str] = None


@attrs.frozen
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: Optional[str]
    error_code: ErrorCode


@attrs.frozen
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupMemberResponse, ...] = attrs.field(default=(), converter=_tuple)


# -- Offsets -----------------------------------------------------------------


@attrs.frozen
class OffsetAndMetadata:
    offset: int
    metadata: str = ""
    leader_epoch: int = -1


@attrs.frozen
class PartitionOffsetCommit:
    topic_partition: TopicPartition
    committed: OffsetAndMetadata


@attrs.frozen
class OffsetCommitRequest:
    group_id: str
    offsets: tuple[PartitionOffsetCommit, ...] = attrs.field(converter=_tuple)
    #: -1 / "" for a simple (manually assigned) consumer.  For a KIP-848 consumer group this is
    #: the member epoch (OffsetCommit v9's GenerationIdOrMemberEpoch).
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: Optional[str] = None
    #: The OffsetCommit version on the wire, when known: a KIP-848 member must use v9+.
    api_version: Optional[int] = None


@attrs.frozen
class PartitionError:
    topic_partition: TopicPartition
    error_code: ErrorCode


@attrs.frozen
class OffsetCommitResponse:
    partitions: tuple[PartitionError, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class OffsetFetchRequest:
    group_id: str
    #: None asks for every committed partition of the group.
    partitions: Optional[tuple[TopicPartition, ...]] = attrs.field(
        default=None, converter=attrs.converters.optional(_tuple)
    )
    require_stable: bool = False
    #: OffsetFetch v9+ (KIP-848): the member asking, checked against a consumer group's member epoch.
    #: None (and epoch -1) for a classic-protocol or a simple consumer, which Kafka does not check.
    member_id: Optional[str] = None
    member_epoch: int = -1


@attrs.frozen
class PartitionOffset:
    topic_partition: TopicPartition
    #: None when nothing is committed for the partition (Kafka answers -1).
    committed: Optional[OffsetAndMetadata]
    error_code: ErrorCode = ErrorCode.NONE


@attrs.frozen
class OffsetFetchResponse:
    error_code: ErrorCode
    partitions: tuple[PartitionOffset, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen
class OffsetDeleteRequest:
    """OffsetDelete (api key 47): forget the group's committed offsets of these partitions."""

    group_id: str
    partitions: tuple[TopicPartition, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class OffsetDeleteResponse:
    """A group-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) answers no partitions."""

    error_code: ErrorCode
    partitions: tuple[PartitionError, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen
class TxnOffsetCommitRequest:
    """TxnOffsetCommit (api key 28, KIP-98): offsets committed inside a producer's transaction.

    They stay pending until the transaction's marker reaches the group's offsets partition.
    v3+ (KIP-447) carries the consumer's generation, member id and instance id, checked as an
    OffsetCommit's are; v0-v2 send -1 / "" / None, which Kafka accepts for any classic group."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    offsets: tuple[PartitionOffsetCommit, ...] = attrs.field(converter=_tuple)
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: Optional[str] = None


@attrs.frozen
class TxnOffsetCommitResponse:
    partitions: tuple[PartitionError, ...] = attrs.field(converter=_tuple)


# -- Coordinator discovery ---------------------------------------------------


@attrs.frozen
class FindCoordinatorRequest:
    key: str
    key_type: int = 0  # 0 = group, 1 = transaction


@attrs.frozen
class FindCoordinatorResponse:
    error_code: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1


# -- Admin -------------------------------------------------------------------


@attrs.frozen
class DescribeGroupsRequest:
    groups: tuple[str, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class DescribedMember:
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@attrs.frozen
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedMember, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class ListGroupsRequest:
    #: Empty means every state.
    states_filter: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    #: ListGroups v5 (KIP-848): "classic" / "consumer", case-insensitive; empty means every type.
    types_filter: tuple[str, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    #: "classic" or "consumer" (ListGroups v5's GroupType).
    group_type: str = "classic"


@attrs.frozen
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen
class DeleteGroupsRequest:
    groups: tuple[str, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class DeletedGroup:
    group_id: str
    error_code: ErrorCode


@attrs.frozen
class DeleteGroupsResponse:
    results: tuple[DeletedGroup, ...] = attrs.field(converter=_tuple)


# -- Error answers -----------------------------------------------------------


def error_response(request: object, code: ErrorCode) -> Optional[object]:
    """The response that answers ``request`` with ``code`` alone, or None for an unknown request type.

    Used by hosts that must answer a request they failed to handle (e.g. with
    UNKNOWN_SERVER_ERROR, as a Kafka broker does for an unexpected exception).
    """
    if isinstance(request, JoinGroupRequest):
        return JoinGroupResponse(code, member_id=request.member_id)
    if isinstance(request, SyncGroupRequest):
        return SyncGroupResponse(code)
    if isinstance(request, HeartbeatRequest):
        return HeartbeatResponse(code)
    if isinstance(request, LeaveGroupRequest):
        return LeaveGroupResponse(code)
    if isinstance(request, OffsetCommitRequest):
        return OffsetCommitResponse(tuple(PartitionError(c.topic_partition, code) for c in request.offsets))
    if isinstance(request, TxnOffsetCommitRequest):
        return TxnOffsetCommitResponse(
            tuple(PartitionError(c.topic_partition, code) for c in request.offsets))
    if isinstance(request, OffsetFetchRequest):
        return OffsetFetchResponse(code)
    if isinstance(request, OffsetDeleteRequest):
        return OffsetDeleteResponse(code)
    if isinstance(request, FindCoordinatorRequest):
        return FindCoordinatorResponse(code)
    if isinstance(request, DescribeGroupsRequest):
        return DescribeGroupsResponse(tuple(DescribedGroup(code, gid, "") for gid in request.groups))
    if isinstance(request, ListGroupsRequest):
        return ListGroupsResponse(code)
    if isinstance(request, DeleteGroupsRequest):
        return DeleteGroupsResponse(tuple(DeletedGroup(gid, code) for gid in request.groups))
    if isinstance(request, cg.ConsumerGroupHeartbeatRequest):
        return cg.ConsumerGroupHeartbeatResponse(code)
    if isinstance(request, cg.ConsumerGroupDescribeRequest):
        return cg.ConsumerGroupDescribeResponse(
            tuple(cg.DescribedConsumerGroup(code, gid) for gid in request.group_ids))
    return None
