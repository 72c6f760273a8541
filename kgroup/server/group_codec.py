"""Group APIs on the broker side: kafka-python request structs -> kgroup's core values -> response structs.

The client side of the same mapping lives in :mod:`kgroup.io.kafka_python.convert`; this is
its mirror image.  Version-dependent layouts are handled here (JoinGroup v0's missing
rebalance timeout, LeaveGroup v0-v2's single member, OffsetFetch v8's group batches,
FindCoordinator v4's key batches), so the coordinator only ever sees one shape per API.

The KIP-848 APIs (ConsumerGroupHeartbeat, ConsumerGroupDescribe) carry topic ids; a
:class:`TopicIds` (the server's data plane) maps them to the names the coordinator uses and back.
It also says which partitions exist: as Kafka's KafkaApis does before it calls the coordinator,
OffsetCommit and OffsetDelete answer UNKNOWN_TOPIC_OR_PARTITION for a partition of a topic that does
not exist (or beyond its partition count) and hand the coordinator only the others.
"""
from __future__ import annotations

import collections
import uuid
from typing import Any, Callable, Dict, List, Optional, Protocol

from kafka.protocol.admin import DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import (
    HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, OffsetCommitResponse, OffsetDeleteResponse,
    OffsetFetchResponse, SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorResponse

from kgroup.core import consumer_group_messages as cg
from kgroup.core import messages as m
from kgroup.wire.kafka_python import ConsumerGroupDescribeResponseStruct, ConsumerGroupHeartbeatResponseStruct
from kgroup.core.error_codes import ErrorCode
from kgroup.server.acl_operations import GROUP_OPERATIONS, NOT_REQUESTED, bit_set
from kgroup.values import TopicPartition

__all__ = ["GROUP_APIS", "TopicIds", "NO_TOPIC_IDS", "to_core", "to_struct"]


class TopicIds(Protocol):
    """Topic name <-> topic id, and which partitions exist, as the cluster knows them."""

    def topic_id(self, name: str) -> uuid.UUID: ...

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]: ...

    def has_partition(self, topic: str, partition: int) -> bool: ...


class _NoTopicIds:
    """For error answers: every id is unknown, and every partition a request names is answered
    (with the error) as it stands."""

    def topic_id(self, name: str) -> uuid.UUID:
        return uuid.UUID(int=0)

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]:
        return None

    def has_partition(self, topic: str, partition: int) -> bool:
        return True


NO_TOPIC_IDS: TopicIds = _NoTopicIds()

#: The group APIs whose requests the in-memory coordinators answer (each yields one or more core requests).
GROUP_APIS = frozenset({
    ApiKey.FindCoordinator, ApiKey.JoinGroup, ApiKey.SyncGroup, ApiKey.Heartbeat, ApiKey.LeaveGroup,
    ApiKey.OffsetCommit, ApiKey.OffsetFetch, ApiKey.OffsetDelete, ApiKey.DescribeGroups, ApiKey.ListGroups,
    ApiKey.DeleteGroups, ApiKey.ConsumerGroupHeartbeat, ApiKey.ConsumerGroupDescribe,
})


def _metadata(value: Optional[str]) -> str:
    return value if value is not None else ""


# -- requests ------------------------------------------------------------------------------


def _join(req, version: int) -> List[object]:
    # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout for both.
    rebalance_ms = req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms
    return [m.JoinGroupRequest(
        group_id=req.group_id, member_id=req.member_id, session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=rebalance_ms, group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type,
        protocols=[m.JoinGroupProtocol(p.name, bytes(p.metadata)) for p in req.protocols],
        reason=req.reason if version >= 8 else None, api_version=version)]


def _sync(req, version: int) -> List[object]:
    return [m.SyncGroupRequest(
        group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type if version >= 5 else None,
        protocol_name=req.protocol_name if version >= 5 else None,
        assignments=[m.SyncGroupAssignment(a.member_id, bytes(a.assignment)) for a in req.assignments])]


def _heartbeat(req, version: int) -> List[object]:
    return [m.HeartbeatRequest(req.group_id, req.generation_id, req.member_id, req.group_instance_id)]


def _leave(req, version: int) -> List[object]:
    if version <= 2:
        members = [m.MemberIdentity(req.member_id)]
    else:
        members = [m.MemberIdentity(x.member_id, x.group_instance_id, x.reason if version >= 5 else None)
                   for x in req.members]
    return [m.LeaveGroupRequest(req.group_id, members)]


def _offset_commit(req, version: int, topics: TopicIds) -> List[object]:
    offsets = [
        m.PartitionOffsetCommit(
            TopicPartition(t.name, p.partition_index),
            m.OffsetAndMetadata(p.committed_offset, _metadata(p.committed_metadata),
                                p.committed_leader_epoch if version >= 6 else -1))
        for t in req.topics for p in t.partitions if topics.has_partition(t.name, p.partition_index)
    ]
    if not offsets:
        # KafkaApis.handleOffsetCommitRequest: nothing left to commit, the coordinator is not asked.
        return []
    return [m.OffsetCommitRequest(req.group_id, offsets, req.generation_id_or_member_epoch, req.member_id,
                                  req.group_instance_id if version >= 7 else None, api_version=version)]


def _offset_delete(req, version: int, topics: TopicIds) -> List[object]:
    # KafkaApis.handleOffsetDeleteRequest asks the coordinator even when no partition is left, so
    # a missing group still answers GROUP_ID_NOT_FOUND.
    return [m.OffsetDeleteRequest(req.group_id, [
        TopicPartition(t.name, p.partition_index)
        for t in req.topics for p in t.partitions if topics.has_partition(t.name, p.partition_index)])]


def _offset_fetch(req, version: int) -> List[object]:
    if version >= 9:
        # v9 (KIP-848): each group names the member asking and its epoch.
        wanted = [(g.group_id, g.topics, g.member_id, g.member_epoch) for g in req.groups]
    elif version >= 8:
        wanted = [(g.group_id, g.topics, None, -1) for g in req.groups]
    else:
        wanted = [(req.group_id, req.topics, None, -1)]
    out: List[object] = []
    for group_id, topics, member_id, member_epoch in wanted:
        partitions = None if topics is None else tuple(
            TopicPartition(t.name, i) for t in topics for i in t.partition_indexes)
        require_stable = bool(req.require_stable) if version >= 7 else False
        out.append(m.OffsetFetchRequest(group_id, partitions, require_stable, member_id, member_epoch))
    return out


def _find_coordinator(req, version: int) -> List[object]:
    keys = list(req.coordinator_keys) if version >= 4 else [req.key]
    key_type = req.key_type if version >= 1 else 0
    return [m.FindCoordinatorRequest(key, key_type) for key in keys]


_TO_CORE: Dict[ApiKey, Callable[[Any, int], List[object]]] = {
    ApiKey.JoinGroup: _join,
    ApiKey.SyncGroup: _sync,
    ApiKey.Heartbeat: _heartbeat,
    ApiKey.LeaveGroup: _leave,
    ApiKey.OffsetFetch: _offset_fetch,
    ApiKey.FindCoordinator: _find_coordinator,
    ApiKey.DescribeGroups: lambda req, version: [m.DescribeGroupsRequest(tuple(req.groups))],
    ApiKey.ListGroups: lambda req, version: [
        m.ListGroupsRequest(tuple(req.states_filter or ()) if version >= 4 else (),
                            tuple(req.types_filter or ()) if version >= 5 else ())],
    ApiKey.ConsumerGroupDescribe: lambda req, version: [
        cg.ConsumerGroupDescribeRequest(tuple(req.group_ids), bool(req.include_authorized_operations))],
    ApiKey.DeleteGroups: lambda req, version: [m.DeleteGroupsRequest(tuple(req.groups_names))],
}


def _consumer_group_heartbeat(req, version: int, topics: TopicIds) -> List[object]:
    owned = None
    if req.topic_partitions is not None:
        # An id the cluster does not know (a deleted topic) cannot be in any assignment: dropped.
        named = [(topics.topic_name(t.topic_id), t.partitions) for t in req.topic_partitions]
        owned = tuple(TopicPartition(name, p) for name, parts in named if name is not None for p in parts)
    return [cg.ConsumerGroupHeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=(None if req.subscribed_topic_names is None
                                else tuple(req.subscribed_topic_names)),
        subscribed_topic_regex=req.subscribed_topic_regex if version >= 1 else None,
        server_assignor=req.server_assignor, topic_partitions=owned, api_version=version)]


_TO_CORE_WITH_TOPICS: Dict[ApiKey, Callable[[Any, int, TopicIds], List[object]]] = {
    ApiKey.ConsumerGroupHeartbeat: _consumer_group_heartbeat,
    ApiKey.OffsetCommit: _offset_commit,
    ApiKey.OffsetDelete: _offset_delete,
}


def to_core(api_key: ApiKey, request, version: int, topics: TopicIds = NO_TOPIC_IDS) -> List[object]:
    """The core request values a group API request stands for (several for batched versions; none
    when the broker answers it alone, as an OffsetCommit of partitions that do not exist)."""
    with_topics = _TO_CORE_WITH_TOPICS.get(api_key)
    if with_topics is not None:
        return with_topics(request, version, topics)
    return _TO_CORE[api_key](request, version)


# -- responses ------------------------------------------------------------------------------


def _join_response(parts: List[Any], version: int, request) -> Any:
    (resp,) = parts
    protocol_name = resp.protocol_name if resp.protocol_name is not None or version >= 7 else ""
    member = JoinGroupResponse.JoinGroupResponseMember
    return JoinGroupResponse(
        version=version, throttle_time_ms=0, error_code=int(resp.error_code),
        generation_id=resp.generation_id,
        protocol_type=resp.protocol_type, protocol_name=protocol_name, leader=resp.leader,
        skip_assignment=resp.skip_assignment, member_id=resp.member_id,
        members=[member(version=version, member_id=x.member_id, group_instance_id=x.group_instance_id,
                        metadata=x.metadata) for x in resp.members])


def _sync_response(parts: List[Any], version: int, request) -> Any:
    (resp,) = parts
    return SyncGroupResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code),
                             protocol_type=resp.protocol_type, protocol_name=resp.protocol_name,
                             assignment=resp.assignment)


def _heartbeat_response(parts: List[Any], version: int, request) -> Any:
    (resp,) = parts
    return HeartbeatResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code))


def _leave_response(parts: List[Any], version: int, request) -> Any:
    (resp,) = parts
    member = LeaveGroupResponse.MemberResponse
    code = resp.error_code
    if version <= 2 and code is ErrorCode.NONE and resp.members:
        # v0-v2 carry one member and no per-member errors: its error is the answer.
        code = resp.members[0].error_code
    return LeaveGroupResponse(
        version=version, throttle_time_ms=0, error_code=int(code),
        members=[member(version=version, member_id=x.member_id, group_instance_id=x.group_instance_id,
                        error_code=int(x.error_code)) for x in resp.members] if version >= 3 else [])


def _partition_errors(request, answered, topics: TopicIds) -> Dict[str, List[tuple]]:
    """(partition, error code) by topic, in request order: the coordinator's answers (``answered``,
    topic-partition -> code) and UNKNOWN_TOPIC_OR_PARTITION for what the broker kept from it."""
    grouped: Dict[str, List[tuple]] = collections.defaultdict(list)
    unknown = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    for t in request.topics:
        for p in t.partitions:
            code = answered.get(TopicPartition(t.name, p.partition_index))
            if code is None and not topics.has_partition(t.name, p.partition_index):
                code = unknown
            if code is not None:
                grouped[t.name].append((p.partition_index, code))
    return grouped


def _offset_commit_response(parts: List[Any], version: int, request, topics: TopicIds) -> Any:
    answered = {p.topic_partition: int(p.error_code) for resp in parts for p in resp.partitions}
    topic_cls = OffsetCommitResponse.OffsetCommitResponseTopic
    partition_cls = topic_cls.OffsetCommitResponsePartition
    return OffsetCommitResponse(version=version, throttle_time_ms=0, topics=[
        topic_cls(version=version, name=name, partitions=[
            partition_cls(version=version, partition_index=index, error_code=code) for index, code in ps])
        for name, ps in _partition_errors(request, answered, topics).items()])


def _offset_delete_response(parts: List[Any], version: int, request, topics: TopicIds) -> Any:
    (resp,) = parts
    if resp.error_code is not ErrorCode.NONE:
        # OffsetDeleteResponse.Builder.merge: a group-level error replaces every partition's answer.
        return OffsetDeleteResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code),
                                    topics=[])
    topic_cls = OffsetDeleteResponse.OffsetDeleteResponseTopic
    partition_cls = topic_cls.OffsetDeleteResponsePartition
    answered = {p.topic_partition: int(p.error_code) for p in resp.partitions}
    return OffsetDeleteResponse(version=version, throttle_time_ms=0, error_code=0, topics=[
        topic_cls(version=version, name=name, partitions=[
            partition_cls(version=version, partition_index=index, error_code=code) for index, code in ps])
        for name, ps in _partition_errors(request, answered, topics).items()])


def _fetched_partitions(resp) -> Dict[str, list]:
    grouped: Dict[str, list] = collections.defaultdict(list)
    for p in resp.partitions:
        grouped[p.topic_partition.topic].append(p)
    return grouped


def _offset_fetch_response(parts: List[Any], version: int, request) -> Any:
    if version >= 8:
        group_cls = OffsetFetchResponse.OffsetFetchResponseGroup
        topics_cls = group_cls.OffsetFetchResponseTopics
        partitions_cls = topics_cls.OffsetFetchResponsePartitions
        groups = []
        for core_request, resp in zip(_offset_fetch(request, version), parts):
            assert isinstance(core_request, m.OffsetFetchRequest)
            topics = [
                topics_cls(version=version, name=name, partitions=[
                    partitions_cls(
                        version=version, partition_index=p.topic_partition.partition,
                        committed_offset=p.committed.offset if p.committed else -1,
                        committed_leader_epoch=p.committed.leader_epoch if p.committed else -1,
                        metadata=p.committed.metadata if p.committed else "", error_code=int(p.error_code))
                    for p in ps])
                for name, ps in _fetched_partitions(resp).items()
            ]
            groups.append(group_cls(version=version, group_id=core_request.group_id, topics=topics,
                                    error_code=int(resp.error_code)))
        return OffsetFetchResponse(version=version, throttle_time_ms=0, groups=groups)
    (resp,) = parts
    topic_cls = OffsetFetchResponse.OffsetFetchResponseTopic
    partition_cls = topic_cls.OffsetFetchResponsePartition
    code = resp.error_code
    topics = [
        topic_cls(version=version, name=name, partitions=[
            partition_cls(
                version=version, partition_index=p.topic_partition.partition,
                committed_offset=p.committed.offset if p.committed else -1,
                committed_leader_epoch=p.committed.leader_epoch if p.committed else -1,
                metadata=p.committed.metadata if p.committed else "",
                # v0-v1 have no top-level error: it goes on every partition.
                error_code=int(p.error_code if version >= 2 or not code else code))
            for p in ps])
        for name, ps in _fetched_partitions(resp).items()
    ]
    if version < 2 and code and not topics and request.topics:
        # v0-v1 have nowhere else to put a group error: every requested partition carries it
        # (Kafka's OffsetFetchRequest.getErrorResponse), or the client reads "no offsets".
        topics = [
            topic_cls(version=version, name=t.name, partitions=[
                partition_cls(version=version, partition_index=i, committed_offset=-1,
                              committed_leader_epoch=-1, metadata="", error_code=int(code))
                for i in t.partition_indexes])
            for t in request.topics
        ]
    return OffsetFetchResponse(version=version, throttle_time_ms=0, topics=topics, error_code=int(code))


def _find_coordinator_response(parts: List[Any], version: int, request) -> Any:
    if version >= 4:
        coordinator = FindCoordinatorResponse.Coordinator
        keys = list(request.coordinator_keys)
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=[
            coordinator(version=version, key=key, node_id=r.node_id, host=r.host, port=r.port,
                        error_code=int(r.error_code), error_message=None)
            for key, r in zip(keys, parts)])
    (resp,) = parts
    return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code),
                                   error_message=None, node_id=resp.node_id, host=resp.host, port=resp.port)


def _group_operations(request, error_code: ErrorCode, default: int = NOT_REQUESTED) -> int:
    """KafkaApis (describe groups): every group operation for a group described without error, when asked."""
    if getattr(request, "include_authorized_operations", False) and error_code is ErrorCode.NONE:
        return GROUP_OPERATIONS
    return default


def _describe_groups_response(parts: List[Any], version: int, request) -> Any:
    (resp,) = parts
    group_cls = DescribeGroupsResponse.DescribedGroup
    member_cls = group_cls.DescribedGroupMember
    return DescribeGroupsResponse(version=version, throttle_time_ms=0, groups=[
        group_cls(version=version, error_code=int(g.error_code), group_id=g.group_id,
                  authorized_operations=(bit_set(_group_operations(request, g.error_code))
                                         if version >= 3 else None),
                  group_state=g.group_state, protocol_type=g.protocol_type, protocol_data=g.protocol_data,
                  members=[
                      member_cls(version=version, member_id=x.member_id,
                                 group_instance_id=x.group_instance_id, client_id=x.client_id,
                                 client_host=x.client_host,
                                 member_metadata=x.member_metadata, member_assignment=x.member_assignment)
                      for x in g.members])
        for g in resp.groups])


def _list_groups_response(parts: List[Any], version: int, request) -> Any:
    (resp,) = parts
    group_cls = ListGroupsResponse.ListedGroup
    return ListGroupsResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code), groups=[
        group_cls(version=version, group_id=g.group_id, protocol_type=g.protocol_type,
                  group_state=g.group_state, group_type=g.group_type)
        for g in resp.groups])


def _delete_groups_response(parts: List[Any], version: int, request) -> Any:
    (resp,) = parts
    result_cls = DeleteGroupsResponse.DeletableGroupResult
    return DeleteGroupsResponse(version=version, throttle_time_ms=0, results=[
        result_cls(version=version, group_id=r.group_id, error_code=int(r.error_code)) for r in resp.results])


def _by_topic(partitions) -> Dict[str, List[int]]:
    grouped: Dict[str, List[int]] = collections.defaultdict(list)
    for tp in sorted(partitions):
        grouped[tp.topic].append(tp.partition)
    return grouped


def _heartbeat_assignment(partitions, version: int, topics: TopicIds) -> Any:
    assignment_cls = ConsumerGroupHeartbeatResponseStruct.Assignment
    topic_cls = assignment_cls.TopicPartitions
    return assignment_cls(version=version, topic_partitions=[
        topic_cls(version=version, topic_id=topics.topic_id(name), partitions=parts)
        for name, parts in _by_topic(partitions).items()])


def _consumer_group_heartbeat_response(parts: List[Any], version: int, request, topics: TopicIds) -> Any:
    (resp,) = parts
    return ConsumerGroupHeartbeatResponseStruct(
        version=version, throttle_time_ms=0, error_code=int(resp.error_code),
        error_message=resp.error_message, member_id=resp.member_id, member_epoch=resp.member_epoch,
        heartbeat_interval_ms=resp.heartbeat_interval_ms,
        assignment=(None if resp.assignment is None
                    else _heartbeat_assignment(resp.assignment, version, topics)))


def _consumer_group_describe_response(parts: List[Any], version: int, request, topics: TopicIds) -> Any:
    (resp,) = parts
    group_cls = ConsumerGroupDescribeResponseStruct.DescribedGroup
    member_cls = group_cls.Member
    assignment_cls = member_cls.Assignment
    topic_cls = assignment_cls.TopicPartitions

    def assignment(partitions) -> Any:
        return assignment_cls(version=version, topic_partitions=[
            topic_cls(version=version, topic_id=topics.topic_id(name), topic_name=name, partitions=ps)
            for name, ps in _by_topic(partitions).items()])

    return ConsumerGroupDescribeResponseStruct(version=version, throttle_time_ms=0, groups=[
        group_cls(version=version, error_code=int(g.error_code), error_message=g.error_message,
                  group_id=g.group_id, group_state=g.group_state, group_epoch=g.group_epoch,
                  assignment_epoch=g.assignment_epoch, assignor_name=g.assignor_name,
                  authorized_operations=_group_operations(request, g.error_code, g.authorized_operations),
                  members=[
                      member_cls(version=version, member_id=x.member_id, instance_id=x.instance_id,
                                 rack_id=x.rack_id, member_epoch=x.member_epoch, client_id=x.client_id,
                                 client_host=x.client_host,
                                 subscribed_topic_names=list(x.subscribed_topic_names),
                                 subscribed_topic_regex=x.subscribed_topic_regex,
                                 assignment=assignment(x.assignment),
                                 target_assignment=assignment(x.target_assignment),
                                 **({"member_type": x.member_type} if version >= 1 else {}))
                      for x in g.members])
        for g in resp.groups])


_TO_STRUCT_WITH_TOPICS: Dict[ApiKey, Callable[[List[Any], int, Any, TopicIds], Any]] = {
    ApiKey.ConsumerGroupHeartbeat: _consumer_group_heartbeat_response,
    ApiKey.ConsumerGroupDescribe: _consumer_group_describe_response,
    ApiKey.OffsetCommit: _offset_commit_response,
    ApiKey.OffsetDelete: _offset_delete_response,
}


_TO_STRUCT: Dict[ApiKey, Callable[[List[Any], int, Any], Any]] = {
    ApiKey.JoinGroup: _join_response,
    ApiKey.SyncGroup: _sync_response,
    ApiKey.Heartbeat: _heartbeat_response,
    ApiKey.LeaveGroup: _leave_response,
    ApiKey.OffsetFetch: _offset_fetch_response,
    ApiKey.FindCoordinator: _find_coordinator_response,
    ApiKey.DescribeGroups: _describe_groups_response,
    ApiKey.ListGroups: _list_groups_response,
    ApiKey.DeleteGroups: _delete_groups_response,
}


def to_struct(api_key: ApiKey, responses: List[Any], version: int, request,
              topics: TopicIds = NO_TOPIC_IDS) -> Any:
    """The response struct for ``request`` at ``version``, from the core answers to its core requests."""
    with_topics = _TO_STRUCT_WITH_TOPICS.get(api_key)
    if with_topics is not None:
        return with_topics(responses, version, request, topics)
    return _TO_STRUCT[api_key](responses, version, request)
