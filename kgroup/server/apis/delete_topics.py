"""DeleteTopics (API key 20), answered by the data plane."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import DeleteTopicsRequest, DeleteTopicsResponse
from kafka.protocol.api_key import ApiKey

from kgroup.server.apis.definition import broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    return data.topics.delete_topics(request, version)


def _error_answer(request: Any, version: int, code: int) -> Any:
    result_cls = DeleteTopicsResponse.DeletableTopicResult
    names = [t.name for t in request.topics] if version >= 6 else list(request.topic_names)
    return DeleteTopicsResponse(version=version, throttle_time_ms=0, responses=[
        result_cls(version=version, name=name, error_code=code) for name in names])


API = broker_api(ApiKey.DeleteTopics, (1, 6), DeleteTopicsRequest, DeleteTopicsResponse, _handle,
                 _error_answer)
