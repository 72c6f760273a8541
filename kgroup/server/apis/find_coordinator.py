"""FindCoordinator (API key 10), answered by the group hosting (v4+: several keys per request)."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from kgroup.core import messages as m
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    keys = list(req.coordinator_keys) if version >= 4 else [req.key]
    key_type = req.key_type if version >= 1 else 0
    return [m.FindCoordinatorRequest(key, key_type) for key in keys]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    if version >= 4:
        coordinator = FindCoordinatorResponse.Coordinator
        keys = list(request.coordinator_keys)
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=[
            coordinator(version=version, key=key, node_id=r.node_id, host=r.host, port=r.port,
                        error_code=int(r.error_code), error_message=None)
            for key, r in zip(keys, parts)])
    (resp,) = parts
    return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code),
                                   error_message=None, node_id=resp.node_id, host=resp.host, port=resp.port)


API = group_api(ApiKey.FindCoordinator, (0, 4), FindCoordinatorRequest, FindCoordinatorResponse, _to_core,
                _to_struct)
