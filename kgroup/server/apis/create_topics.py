"""CreateTopics (API key 19), answered by the data plane."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.api_key import ApiKey

from kgroup.server.apis.definition import broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    return data.topics.create_topics(request, version)


def _error_answer(request: Any, version: int, code: int) -> Any:
    result_cls = CreateTopicsResponse.CreatableTopicResult
    return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=[
        result_cls(version=version, name=t.name, error_code=code, error_message=None)
        for t in request.topics])


API = broker_api(ApiKey.CreateTopics, (2, 7), CreateTopicsRequest, CreateTopicsResponse, _handle,
                 _error_answer)
