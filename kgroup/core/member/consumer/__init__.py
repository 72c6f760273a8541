"""The member side of KIP-848, the "consumer" group protocol (``group_protocol="consumer"``), sans-I/O.

The coordinator assigns; the member heartbeats (ConsumerGroupHeartbeat),
reconciles what it is given incrementally - commit, revoke, assign, then
acknowledge in the next heartbeat - and follows the member epoch the
coordinator hands out.  Kafka's client is the model: ``ConsumerMembershipManager``,
``AbstractMembershipManager``, ``ConsumerHeartbeatRequestManager`` and
``CommitRequestManager`` (org.apache.kafka.clients.consumer.internals).

:class:`ConsumerProtocolMember` satisfies :class:`~kgroup.core.member.MemberContract`, as the
classic :class:`~kgroup.core.member.GroupMember` does, so the same runner, heartbeat thread and
transports drive it::

    member = ConsumerProtocolMember(ConsumerProtocolConfig(group_id="g"), now_ms, random_bytes=os.urandom)
    member.subscribe(["orders"], now_ms)
    # polling thread, every poll:
    member.on_app_poll(now_ms, positions)
    for ev in member.take_events(): run listener callback        # outside the adapter's lock
    # any thread, under the adapter's one lock:
    for ob in member.outbound(now_ms): transport.send(ob.request, ob.node_id)
    member.on_response(token, response, now_ms)                  # or on_transport_error(token, now_ms)
    member.get_timer()
    member.close(now_ms); drive outbound (and on_app_poll after running callbacks) until member.closed

Modules: ``states.py`` (Kafka's MemberState and its table), ``config.py``
(settings, and the classic ones this protocol rejects), ``member_id.py``
(KIP-1082 ids), ``local_assignment.py``, ``heartbeat_fields.py`` (full vs
incremental heartbeats), ``heartbeat_schedule.py`` (interval, backoff, poll
timer), ``heartbeat_errors.py`` (the error table), ``reconciliation.py``
(commit -> revoke -> assign as a table-checked machine), ``committer.py``
(commits with the member epoch), ``view.py`` (the member's state and what
an adapter reads), ``membership.py`` (joining, fencing, leaving, failing),
``reconciler.py`` (commit -> revoke -> assign -> acknowledge, driven from the
polls), ``member.py`` (the protocol: subscription, requests, heartbeats); each
builds on the one before it.  What it shares with the classic
member (request book, events, commit book, ``MemberBase``, ``CommitterBase``) is in
``kgroup/core/member/shared/``.
"""
from kgroup.core.member.consumer.config import (
    CLASSIC,
    CONSUMER,
    ConsumerProtocolConfig,
    check_group_protocol_settings,
    parse_group_protocol,
)
from kgroup.core.member.consumer.member import ConsumerProtocolMember
from kgroup.core.member.consumer.member_id import generate_member_id
from kgroup.core.member.consumer.reconciliation import ReconcileStep
from kgroup.core.member.consumer.states import LEGAL_PREVIOUS, ConsumerMemberState

__all__ = [
    "CLASSIC",
    "CONSUMER",
    "ConsumerMemberState",
    "ConsumerProtocolConfig",
    "ConsumerProtocolMember",
    "LEGAL_PREVIOUS",
    "ReconcileStep",
    "check_group_protocol_settings",
    "generate_member_id",
    "parse_group_protocol",
]
