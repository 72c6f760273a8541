"""OffsetForLeaderEpoch (API key 23), answered from the leader-epoch cache by the data plane."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

from kgroup.server.apis.definition import broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    return data.offset_for_leader_epoch(node_id, request, version)


def _error_answer(request: Any, version: int, code: int) -> Any:
    topic_cls = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
    partition_cls = topic_cls.EpochEndOffset
    return OffsetForLeaderEpochResponse(version=version, throttle_time_ms=0, topics=[
        topic_cls(version=version, topic=t.topic, partitions=[
            partition_cls(version=version, partition=p.partition, error_code=code, leader_epoch=-1,
                          end_offset=-1)
            for p in t.partitions])
        for t in request.topics])


API = broker_api(ApiKey.OffsetForLeaderEpoch, (2, 4), OffsetForLeaderEpochRequest,
                 OffsetForLeaderEpochResponse, _handle, _error_answer)
