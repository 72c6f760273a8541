"""Fetch (API key 1): read by the data plane, parked until min_bytes arrive or max_wait_ms passes.
Served up to v12 (v13 names topics by id only)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import FetchRequest, FetchResponse

from kgroup.server.apis.definition import AwaitData, broker_api
from kgroup.server.fetch_encoding import FetchAnswer, PartitionFetchAnswer, TopicFetchAnswer

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    return AwaitData(max_wait_ms=request.max_wait_ms, min_bytes=max(request.min_bytes, 1),
                     read=lambda: data.fetch(node_id, request, version),
                     state=lambda: data.fetch_state(node_id, request))


def _error_answer(request: Any, version: int, code: int) -> Any:
    # Null records and an empty (not null) aborted list: what kafka-python's struct defaults wrote.
    return FetchAnswer([
        TopicFetchAnswer(t.topic, [PartitionFetchAnswer(p.partition, code, aborted_transactions=[],
                                                        record_pieces=None)
                                   for p in t.partitions])
        for t in request.topics])


API = broker_api(ApiKey.Fetch, (4, 12), FetchRequest, FetchResponse, _handle, _error_answer)
