"""ListOffsets (API key 2), answered by the data plane."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

from kgroup.server.apis.definition import broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    return data.list_offsets(node_id, request, version)


def _error_answer(request: Any, version: int, code: int) -> Any:
    topic_cls = ListOffsetsResponse.ListOffsetsTopicResponse
    partition_cls = topic_cls.ListOffsetsPartitionResponse
    return ListOffsetsResponse(version=version, throttle_time_ms=0, topics=[
        topic_cls(version=version, name=t.name, partitions=[
            partition_cls(version=version, partition_index=p.partition_index, error_code=code)
            for p in t.partitions])
        for t in request.topics])


API = broker_api(ApiKey.ListOffsets, (1, 7), ListOffsetsRequest, ListOffsetsResponse, _handle, _error_answer)
