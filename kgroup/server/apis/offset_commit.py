"""OffsetCommit (API key 8), answered by the group coordinators.

As Kafka's KafkaApis does before it calls the coordinator, a partition of a topic that does not exist
(or beyond its partition count) is answered UNKNOWN_TOPIC_OR_PARTITION by the broker and only the
others reach the coordinator.
"""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import OffsetCommitRequest, OffsetCommitResponse

from kgroup.core import messages as m
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.group_answers import metadata_text, partition_errors
from kgroup.values import TopicPartition


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    offsets = [
        m.PartitionOffsetCommit(
            TopicPartition(t.name, p.partition_index),
            m.OffsetAndMetadata(p.committed_offset, metadata_text(p.committed_metadata),
                                p.committed_leader_epoch if version >= 6 else -1))
        for t in req.topics for p in t.partitions if topics.has_partition(t.name, p.partition_index)
    ]
    if not offsets:
        # KafkaApis.handleOffsetCommitRequest: nothing left to commit, the coordinator is not asked.
        return []
    return [m.OffsetCommitRequest(req.group_id, offsets, req.generation_id_or_member_epoch, req.member_id,
                                  req.group_instance_id if version >= 7 else None, api_version=version)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    answered = {p.topic_partition: int(p.error_code) for resp in parts for p in resp.partitions}
    topic_cls = OffsetCommitResponse.OffsetCommitResponseTopic
    partition_cls = topic_cls.OffsetCommitResponsePartition
    return OffsetCommitResponse(version=version, throttle_time_ms=0, topics=[
        topic_cls(version=version, name=name, partitions=[
            partition_cls(version=version, partition_index=index, error_code=code) for index, code in ps])
        for name, ps in partition_errors(request, answered, topics).items()])


API = group_api(ApiKey.OffsetCommit, (2, 9), OffsetCommitRequest, OffsetCommitResponse, _to_core, _to_struct)
