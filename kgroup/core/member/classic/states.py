"""The member's states and the one table of legal previous states."""
from __future__ import annotations

import enum

from kgroup.core.fsm import StateMachine


class ClassicMemberState(enum.Enum):
    #: No generation: never joined, left, or the generation was lost.
    UNJOINED = "unjoined"
    #: A JoinGroup is in flight (or being retried).
    PREPARING_REBALANCE = "preparing_rebalance"
    #: Joined; a SyncGroup is in flight.
    COMPLETING_REBALANCE = "completing_rebalance"
    #: Holds an assignment for the current generation.
    STABLE = "stable"
    #: Terminal: fenced, or an error the member cannot recover from.
    FATAL = "fatal"


_S = ClassicMemberState
_ANY_LIVE = frozenset({_S.UNJOINED, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.STABLE})

LEGAL_PREVIOUS: dict[ClassicMemberState, frozenset] = {
    _S.UNJOINED: frozenset({_S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.STABLE}),
    # COMPLETING -> PREPARING: the sync failed with REBALANCE_IN_PROGRESS and
    # the member rejoins keeping its generation.
    _S.PREPARING_REBALANCE: frozenset({_S.UNJOINED, _S.COMPLETING_REBALANCE, _S.STABLE}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.FATAL: _ANY_LIVE,
}


def new_member_state_machine(name: str) -> StateMachine[ClassicMemberState]:
    return StateMachine(name, ClassicMemberState.UNJOINED, LEGAL_PREVIOUS)
