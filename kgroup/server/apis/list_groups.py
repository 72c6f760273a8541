"""ListGroups (API key 16), answered by every group coordinator (v4: states filter, v5: types filter)."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.api_key import ApiKey

from kgroup.core import messages as m
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [m.ListGroupsRequest(tuple(req.states_filter or ()) if version >= 4 else (),
                                tuple(req.types_filter or ()) if version >= 5 else ())]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    group_cls = ListGroupsResponse.ListedGroup
    return ListGroupsResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code), groups=[
        group_cls(version=version, group_id=g.group_id, protocol_type=g.protocol_type,
                  group_state=g.group_state, group_type=g.group_type)
        for g in resp.groups])


API = group_api(ApiKey.ListGroups, (0, 5), ListGroupsRequest, ListGroupsResponse, _to_core, _to_struct)
