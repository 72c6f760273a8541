"""OffsetDelete (API key 47), answered by the group coordinators; Kafka 4 serves v0 only (non-flexible)."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import OffsetDeleteRequest, OffsetDeleteResponse

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.group_answers import partition_errors
from kgroup.values import TopicPartition


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    # KafkaApis.handleOffsetDeleteRequest asks the coordinator even when no partition is left, so
    # a missing group still answers GROUP_ID_NOT_FOUND.
    return [m.OffsetDeleteRequest(req.group_id, [
        TopicPartition(t.name, p.partition_index)
        for t in req.topics for p in t.partitions if topics.has_partition(t.name, p.partition_index)])]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
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
        for name, ps in partition_errors(request, answered, topics).items()])


API = group_api(ApiKey.OffsetDelete, (0, 0), OffsetDeleteRequest, OffsetDeleteResponse, _to_core, _to_struct)
