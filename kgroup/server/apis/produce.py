"""Produce (API key 0): appended by the data plane; acks=1/all answered once the appends resolve,
acks=0 not answered at all.  Served up to v11 (v13 names topics by id only)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kgroup.server.apis.definition import NO_RESPONSE, AwaitAppends, broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    response, waits = data.produce(node_id, request, version)
    if request.acks == 0:
        return NO_RESPONSE  # Kafka sends no response at all
    return AwaitAppends(response, waits, request.timeout_ms)


def _error_answer(request: Any, version: int, code: int) -> Any:
    topic_cls = ProduceResponse.TopicProduceResponse
    partition_cls = topic_cls.PartitionProduceResponse
    return ProduceResponse(version=version, throttle_time_ms=0, responses=[
        topic_cls(version=version, name=t.name, partition_responses=[
            partition_cls(version=version, index=p.index, error_code=code, base_offset=-1)
            for p in t.partition_data])
        for t in request.topic_data])


API = broker_api(ApiKey.Produce, (3, 11), ProduceRequest, ProduceResponse, _handle, _error_answer)
