"""SyncGroup (API key 14), answered by the classic group coordinator."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import SyncGroupRequest, SyncGroupResponse

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    if version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return []  # the broker answers alone: both are mandatory from v5 (KIP-559)
    return [m.SyncGroupRequest(
        group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type if version >= 5 else None,
        protocol_name=req.protocol_name if version >= 5 else None,
        assignments=[m.SyncGroupAssignment(a.member_id, bytes(a.assignment)) for a in req.assignments])]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    if not parts:
        # KafkaApis.handleSyncGroupRequest refuses a v5+ request without protocol type and name before
        # the coordinator sees it (SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent).
        return SyncGroupResponse(version=version, throttle_time_ms=0,
                                 error_code=int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
                                 protocol_type=None, protocol_name=None, assignment=b"")
    (resp,) = parts
    return SyncGroupResponse(version=version, throttle_time_ms=0, error_code=int(resp.error_code),
                             protocol_type=resp.protocol_type, protocol_name=resp.protocol_name,
                             assignment=resp.assignment)


API = group_api(ApiKey.SyncGroup, (0, 5), SyncGroupRequest, SyncGroupResponse, _to_core, _to_struct)
