"""ConsumerGroupHeartbeat (API key 68, KIP-848), answered by the consumer group coordinator.

The wire names topics by id, the coordinator by name: the data plane (:class:`TopicIds`) maps them.
"""
from __future__ import annotations

from typing import Any, Iterable, List

from kafka.protocol.api_key import ApiKey

from kgroup.core import consumer_group_messages as cg
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.group_answers import by_topic
from kgroup.values import TopicPartition
from kgroup.wire.kafka_python import ConsumerGroupHeartbeatRequestStruct, ConsumerGroupHeartbeatResponseStruct


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
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


def _assignment(partitions: Iterable[TopicPartition], version: int, topics: TopicIds) -> Any:
    assignment_cls = ConsumerGroupHeartbeatResponseStruct.Assignment
    topic_cls = assignment_cls.TopicPartitions
    return assignment_cls(version=version, topic_partitions=[
        topic_cls(version=version, topic_id=topics.topic_id(name), partitions=parts)
        for name, parts in by_topic(partitions).items()])


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    return ConsumerGroupHeartbeatResponseStruct(
        version=version, throttle_time_ms=0, error_code=int(resp.error_code),
        error_message=resp.error_message, member_id=resp.member_id, member_epoch=resp.member_epoch,
        heartbeat_interval_ms=resp.heartbeat_interval_ms,
        assignment=(None if resp.assignment is None else _assignment(resp.assignment, version, topics)))


# v1: KIP-1082 client-generated member ids.
API = group_api(ApiKey.ConsumerGroupHeartbeat, (0, 1), ConsumerGroupHeartbeatRequestStruct,
                ConsumerGroupHeartbeatResponseStruct, _to_core, _to_struct)
