"""Group membership messages: Java ``AbstractCoordinator``'s half of the protocol.

The JoinGroup, SyncGroup, Heartbeat and LeaveGroup requests the member
sends, and the checks a successful JoinGroup or SyncGroup answer must pass
before the member acts on it.  Pure functions of the config, the
generation and the answer: ``member.py`` decides when each request goes
out and what a failed check does.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.classic import codec
from kgroup.core.member.classic.config import MemberConfig
from kgroup.core.member.shared.events import Generation
from kgroup.errors import GroupMemberError, KGroupError, ProtocolError
from kgroup.values import Subscription


def join_request(config: MemberConfig, member_id: str, subscription_for: Callable[[Any], Subscription],
                 reason: str) -> m.JoinGroupRequest:
    """A JoinGroup offering one protocol per assignor (most preferred first), each with its subscription."""
    protocols = tuple(m.JoinGroupProtocol(a.name, codec.encode_subscription(subscription_for(a)))
                      for a in config.assignors)
    return m.JoinGroupRequest(
        group_id=config.group_id, member_id=member_id, session_timeout_ms=config.session_timeout_ms,
        rebalance_timeout_ms=config.effective_rebalance_timeout_ms,
        group_instance_id=config.group_instance_id, protocols=protocols,
        reason=reason or None, client_id=config.client_id,
    )


def sync_request(config: MemberConfig, joined: m.JoinGroupResponse, assignments: tuple) -> m.SyncGroupRequest:
    """The SyncGroup completing the join ``joined`` answered (``assignments``: the leader's, else none)."""
    return m.SyncGroupRequest(
        config.group_id, joined.generation_id, joined.member_id, config.group_instance_id,
        m.CONSUMER_PROTOCOL_TYPE, joined.protocol_name, assignments)


def heartbeat_request(config: MemberConfig, generation: Generation) -> m.HeartbeatRequest:
    return m.HeartbeatRequest(config.group_id, generation.generation_id, generation.member_id,
                              config.group_instance_id)


def leave_request(config: MemberConfig, member_id: str, reason: str) -> m.LeaveGroupRequest:
    identity = m.MemberIdentity(member_id, config.group_instance_id, reason)
    return m.LeaveGroupRequest(config.group_id, (identity,))


def join_answer_error(state: object, response: m.JoinGroupResponse) -> Optional[KGroupError]:
    """Why the member may not join with a successful JoinGroup answer (None: it may).

    A :class:`ProtocolError` is a broker bug, not a generation: joining it
    would let the member heartbeat and commit as generation -1 (a simple
    consumer), so the member records it and joins again.  A
    :class:`GroupMemberError` is another protocol type's group (KIP-559,
    Java ``AbstractCoordinator.JoinGroupResponseHandler``): fatal.
    """
    if response.generation_id < 0 or not response.member_id:
        return ProtocolError(state, response, "a successful JoinGroup response must carry a generation "
                             f"and a member id (got {response.generation_id}, {response.member_id!r})")
    if not _is_consumer_protocol(response.protocol_type):
        return GroupMemberError(f"join answered with protocol type {response.protocol_type!r}",
                                ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    return None


def check_sync_answer(response: m.SyncGroupResponse, generation: Generation) -> None:
    """A successful SyncGroup answer must name the join's protocol and the consumer protocol type
    (KIP-559, as the join); raises GroupMemberError if it does not."""
    if (response.protocol_name and generation.protocol_name
            and response.protocol_name != generation.protocol_name
            or not _is_consumer_protocol(response.protocol_type)):
        raise GroupMemberError("sync answered with a different protocol than the join",
                               ErrorCode.INCONSISTENT_GROUP_PROTOCOL)


def _is_consumer_protocol(protocol_type: Optional[str]) -> bool:
    """Older brokers do not say (None); a newer one must say ``consumer``."""
    return protocol_type in (None, m.CONSUMER_PROTOCOL_TYPE)
