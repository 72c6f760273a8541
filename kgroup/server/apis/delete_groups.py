"""DeleteGroups (API key 42), answered by the group coordinators."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.admin import DeleteGroupsRequest, DeleteGroupsResponse
from kafka.protocol.api_key import ApiKey

from kgroup.core import messages as m
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [m.DeleteGroupsRequest(tuple(req.groups_names))]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    result_cls = DeleteGroupsResponse.DeletableGroupResult
    return DeleteGroupsResponse(version=version, throttle_time_ms=0, results=[
        result_cls(version=version, group_id=r.group_id, error_code=int(r.error_code)) for r in resp.results])


API = group_api(ApiKey.DeleteGroups, (0, 2), DeleteGroupsRequest, DeleteGroupsResponse, _to_core, _to_struct)
