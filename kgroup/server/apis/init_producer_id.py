"""InitProducerId (API key 22), answered by the data plane (idempotent producers; no transactions)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from kgroup.server.apis.definition import broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    return data.init_producer_id(request, version)


def _error_answer(request: Any, version: int, code: int) -> Any:
    return InitProducerIdResponse(version=version, throttle_time_ms=0, error_code=code, producer_id=-1,
                                  producer_epoch=-1)


API = broker_api(ApiKey.InitProducerId, (0, 4), InitProducerIdRequest, InitProducerIdResponse, _handle,
                 _error_answer)
