"""Heartbeat (API key 12), answered by the classic group coordinator."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import HeartbeatRequest, HeartbeatResponse

from kgroup.core import messages as m
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [m.HeartbeatRequest(req.group_id, req.generation_id, req.member_id, req.group_instance_id)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    return HeartbeatResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code))


API = group_api(ApiKey.Heartbeat, (0, 4), HeartbeatRequest, HeartbeatResponse, _to_core, _to_struct)
