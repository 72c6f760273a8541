"""JoinGroup (API key 11), answered by the classic group coordinator."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import JoinGroupRequest, JoinGroupResponse

from kgroup.core import messages as m
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout for both.
    rebalance_ms = req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms
    return [m.JoinGroupRequest(
        group_id=req.group_id, member_id=req.member_id, session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=rebalance_ms, group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type,
        protocols=[m.JoinGroupProtocol(p.name, bytes(p.metadata)) for p in req.protocols],
        reason=req.reason if version >= 8 else None, api_version=version)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    protocol_name = resp.protocol_name if resp.protocol_name is not None or version >= 7 else ""
    member = JoinGroupResponse.JoinGroupResponseMember
    return JoinGroupResponse(
        version=version, throttle_time_ms=0, error_code=int(resp.error_code),
        generation_id=resp.generation_id,
        protocol_type=resp.protocol_type, protocol_name=protocol_name, leader=resp.leader,
        skip_assignment=resp.skip_assignment, member_id=resp.member_id,
        members=[member(version=version, member_id=x.member_id, group_instance_id=x.group_instance_id,
                        metadata=x.metadata) for x in resp.members])


API = group_api(ApiKey.JoinGroup, (0, 9), JoinGroupRequest, JoinGroupResponse, _to_core, _to_struct)
