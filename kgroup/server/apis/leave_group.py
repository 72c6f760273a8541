"""LeaveGroup (API key 13), answered by the classic group coordinator."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import LeaveGroupRequest, LeaveGroupResponse

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    if version <= 2:
        members = [m.MemberIdentity(req.member_id)]
    else:
        members = [m.MemberIdentity(x.member_id, x.group_instance_id, x.reason if version >= 5 else None)
                   for x in req.members]
    return [m.LeaveGroupRequest(req.group_id, members)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    member = LeaveGroupResponse.MemberResponse
    code = resp.error_code
    if version <= 2 and code is ErrorCode.NONE and resp.members:
        # v0-v2 carry one member and no per-member errors: its error is the answer.
        code = resp.members[0].error_code
    return LeaveGroupResponse(
        version=version, throttle_time_ms=0, error_code=int(code),
        members=[member(version=version, member_id=x.member_id, group_instance_id=x.group_instance_id,
                        error_code=int(x.error_code)) for x in resp.members] if version >= 3 else [])


API = group_api(ApiKey.LeaveGroup, (0, 5), LeaveGroupRequest, LeaveGroupResponse, _to_core, _to_struct)
