"""Metadata (API key 3), answered by the data plane; a request naming thousands of topics is
answered in slices, other clients served in between."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from kgroup.server.apis.definition import InSlices, broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane

#: A Metadata request naming more topics than this is answered in slices of this many (~3 ms each).
METADATA_SLICE_TOPICS = 500


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    if request.topics and len(request.topics) > METADATA_SLICE_TOPICS:
        steps = data.metadata_answer.metadata_in_slices(node_id, request, version, METADATA_SLICE_TOPICS)
        return InSlices(steps)
    return data.metadata(node_id, request, version)


def _error_answer(request: Any, version: int, code: int) -> Any:
    topic_cls = MetadataResponse.MetadataResponseTopic
    topics = request.topics or []
    return MetadataResponse(version=version, throttle_time_ms=0, brokers=[], topics=[
        topic_cls(version=version, error_code=code, name=t.name, partitions=[]) for t in topics],
        error_code=code)


API = broker_api(ApiKey.Metadata, (0, 12), MetadataRequest, MetadataResponse, _handle, _error_answer)
