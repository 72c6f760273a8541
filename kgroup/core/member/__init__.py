"""The consumer-group members, sans-I/O: ``classic/`` (Kafka's ConsumerCoordinator semantics),
``consumer/`` (KIP-848, Kafka's ConsumerMembershipManager) and ``shared/`` (what both use: the
commit book, events, offsets, the request book and :class:`MemberContract`, the one contract
both members satisfy, so adapters never ask which one they drive).

Contract for adapters (kafka-python's ConsumerCoordinator, kgroup's runner), with the classic member::

    member = GroupMember(MemberConfig(group_id="g", assignors=("range",), ...), now_ms)
    member.subscribe(["orders"], now_ms)
    member.update_metadata({"orders": 6}, now_ms)        # whenever metadata changes

    # polling thread, every poll (and in the poll's wait loop):
    member.on_app_poll(now_ms, positions)                 # positions: {tp: next offset} or None
    for ev in member.take_events(): run listener callback  # outside the adapter's lock
    # any thread, under the adapter's one lock:
    for ob in member.outbound(now_ms):                    # Outbound(token, request, node_id)
        correlation = transport.send(ob.request, ob.node_id)   # node_id None: any broker
    member.on_response(token, response, now_ms)           # or on_transport_error(token, now_ms)
    member.get_timer()                                    # sleep at most until then
    member.close(now_ms, leave_group=None, positions=None)
    # then drive take_events / on_app_poll / outbound until member.closed (either member)

Ordering guarantees:
- A JoinGroup is emitted only after the revocation/lost events that precede
  it were taken with ``take_events()`` AND ``on_app_poll`` was called again
  (the adapter runs the callbacks in between), and after the pre-join
  auto-commit completed.  So callbacks never race the rejoin.
- Joins are prepared only from ``on_app_poll`` (the polling thread), as in
  Java; heartbeats, SyncGroup, commits and fetches go out from any
  ``outbound`` call, so a heartbeat thread keeps the member alive and
  completes a rebalance while the application is busy.

Requests the member emits: FindCoordinator (node None), JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch
(:mod:`kgroup.core.messages`).  Results come back as events:
``CommitCompleted(token, offsets, error)`` for ``commit_offsets`` and
``CommittedFetched(token, offsets, error)`` for ``fetch_committed`` (also
emitted automatically for newly assigned partitions when
``MemberConfig.fetch_committed_on_assignment``).
"""
from kgroup.core.member.classic.config import MemberConfig
from kgroup.core.member.classic.heartbeat import HeartbeatTimer
from kgroup.core.member.classic.member import GroupMember
from kgroup.core.member.classic.states import LEGAL_PREVIOUS, ClassicMemberState
from kgroup.core.member.shared.contract import MemberContract
from kgroup.core.member.shared.events import (
    CommitCompleted,
    CommittedFetched,
    FatalError,
    Generation,
    MemberEvent,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.core.member.shared.requests import Outbound

__all__ = [
    "ClassicMemberState",
    "CommitCompleted",
    "CommittedFetched",
    "FatalError",
    "Generation",
    "GroupMember",
    "HeartbeatTimer",
    "LEGAL_PREVIOUS",
    "MemberConfig",
    "MemberContract",
    "MemberEvent",
    "Outbound",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
]
