"""The consumer's side of a rebalance (Java ``ConsumerCoordinator.onJoinPrepare`` / ``onJoinComplete``).

Which partitions a member gives up before it rejoins, and what a
SyncGroup's assignment adds, revokes and asks of it (pure functions
returning frozen values); :class:`Ownership` holds the partitions and
tells the application when they change.  What the member joins with and
what the leader assigns are in ``leader.py``.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

import attrs

from kgroup.assignors import RebalanceProtocol
from kgroup.core.member.classic import codec
from kgroup.core.member.classic.rejoin import RejoinGate
from kgroup.core.member.shared.events import (
    Generation,
    MemberEvent,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.values import Assignment


@attrs.frozen
class AssignmentChange:
    """What a SyncGroup's assignment changes for the member that received it."""

    #: Everything the member owns now.
    owned: frozenset
    #: New to the member (``PartitionsAssigned.partitions``).
    added: frozenset
    #: Owned before, not any more (cooperative only: eager members own nothing when they join).
    revoked: frozenset
    #: The assignor's user data for this member (``PartitionsAssigned.user_data``).
    user_data: Optional[bytes]
    #: Why the member must rejoin at once (None: it need not).
    rejoin_reason: Optional[str]


def assignment_change(owned: frozenset, assignment: bytes, subscription: frozenset,
                      joined_topics: frozenset) -> AssignmentChange:
    """Compare a SyncGroup's ``assignment`` bytes with what the member ``owned``.

    ``joined_topics`` is the subscription the member joined with.  Raises
    KGroupError if the bytes do not decode.
    """
    decoded = codec.decode_assignment(assignment) if assignment else Assignment()
    new = frozenset(decoded.partitions)
    revoked = owned - new
    return AssignmentChange(new, new - owned, revoked, decoded.user_data,
                            _rejoin_reason(new, revoked, subscription, joined_topics))


def _rejoin_reason(new: frozenset, revoked: frozenset, subscription: frozenset,
                   joined_topics: frozenset) -> Optional[str]:
    if revoked:
        return "partitions were revoked (KIP-429 second round)"
    if joined_topics != subscription:
        return "subscription changed during the rebalance"
    if any(tp.topic not in subscription for tp in new):
        return "assigned a topic this member does not subscribe to"
    return None


def given_up_before_join(owned: frozenset, subscription: frozenset, protocol: RebalanceProtocol,
                         generation: Generation) -> Optional[Union[PartitionsLost, PartitionsRevoked]]:
    """What the member gives up before it rejoins (None: nothing).

    Everything it owns if its generation is gone (lost) or it is eager
    (revoked); a cooperative member revokes only the partitions of topics it
    no longer subscribes to and keeps the rest through the rebalance.
    """
    if not generation.is_valid:
        return PartitionsLost(owned) if owned else None
    if protocol is RebalanceProtocol.EAGER:
        gone = owned
    else:
        gone = frozenset(tp for tp in owned if tp.topic not in subscription)
    return PartitionsRevoked(gone) if gone else None


class Ownership:
    """The partitions the member owns, and the rebalance events that tell the application.

    Events go to ``emit`` (the member's ``EventQueue.append``); those the
    application must have seen before the member rejoins also gate the
    rejoin on them (``RejoinGate.gate_on``).
    """

    def __init__(self, emit: Callable[[MemberEvent], int], rejoin: RejoinGate) -> None:
        self._emit = emit
        self._rejoin = rejoin
        self.partitions: frozenset = frozenset()

    def give_up_before_join(self, subscription: frozenset, protocol: RebalanceProtocol,
                            generation: Generation) -> None:
        """Java ``onJoinPrepare``: revoke or lose what ``given_up_before_join`` says, before the JoinGroup."""
        gone = given_up_before_join(self.partitions, subscription, protocol, generation)
        if gone is not None:
            self._gate_on(gone)
            self.partitions -= gone.partitions

    def assign(self, change: AssignmentChange, generation: Generation) -> None:
        """Java ``onJoinComplete``: revoke what the new assignment took away, then assign it."""
        if change.revoked:
            self._gate_on(PartitionsRevoked(change.revoked))
        self.partitions = change.owned
        self._emit(PartitionsAssigned(change.added, change.owned, generation, change.user_data))

    def release(self, lost: bool) -> None:
        """Java ``onLeavePrepare``: give every partition up (``lost``: the generation is gone)."""
        if self.partitions:
            self._emit(PartitionsLost(self.partitions) if lost else PartitionsRevoked(self.partitions))
            self.partitions = frozenset()

    def _gate_on(self, event: Union[PartitionsLost, PartitionsRevoked]) -> None:
        """An event the application must see before the member rejoins."""
        self._rejoin.gate_on(self._emit(event))
