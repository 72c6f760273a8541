"""DescribeGroups (API key 15), answered by the group coordinators."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.admin import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.api_key import ApiKey

from kgroup.core import messages as m
from kgroup.server.acl_operations import bit_set
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.group_answers import group_operations


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [m.DescribeGroupsRequest(tuple(req.groups))]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    group_cls = DescribeGroupsResponse.DescribedGroup
    member_cls = group_cls.DescribedGroupMember
    return DescribeGroupsResponse(version=version, throttle_time_ms=0, groups=[
        group_cls(version=version, error_code=int(g.error_code), group_id=g.group_id,
                  authorized_operations=(bit_set(group_operations(request, g.error_code))
                                         if version >= 3 else None),
                  group_state=g.group_state, protocol_type=g.protocol_type, protocol_data=g.protocol_data,
                  members=[
                      member_cls(version=version, member_id=x.member_id,
                                 group_instance_id=x.group_instance_id, client_id=x.client_id,
                                 client_host=x.client_host,
                                 member_metadata=x.member_metadata, member_assignment=x.member_assignment)
                      for x in g.members])
        for g in resp.groups])


API = group_api(ApiKey.DescribeGroups, (0, 5), DescribeGroupsRequest, DescribeGroupsResponse, _to_core,
                _to_struct)
