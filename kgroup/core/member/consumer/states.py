"""The KIP-848 member's states and the one table of legal previous states.

Kafka's ``org.apache.kafka.clients.consumer.internals.MemberState``, state for
state and row for row (its static block of ``previousValidStates``).  Kafka
also lets a state "move" to itself; :class:`~kgroup.core.fsm.StateMachine`
does that only where the table lists the state as its own previous state
(RECONCILING, as in Kafka), and the member never asks for another one.
"""
from __future__ import annotations

import enum

from kgroup.core.fsm import StateMachine


class ConsumerMemberState(enum.Enum):
    #: Not in the group and not trying to be: never subscribed, unsubscribed, or left.
    UNSUBSCRIBED = "unsubscribed"
    #: Sends the joining heartbeat (member epoch 0) and waits for its first answer.
    JOINING = "joining"
    #: Has a target assignment it does not own yet: commit, revoke, assign (callbacks).
    RECONCILING = "reconciling"
    #: Reconciled: the next heartbeat (sent at once) tells the coordinator what it owns now.
    ACKNOWLEDGING = "acknowledging"
    #: Owns its target assignment; heartbeats on the coordinator's interval.
    STABLE = "stable"
    #: FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: releases its partitions as lost, then rejoins.
    FENCED = "fenced"
    #: Leaving (unsubscribe, close): releases its partitions through the callbacks first.
    PREPARE_LEAVING = "prepare_leaving"
    #: The leave heartbeat (epoch -1, static -2) goes out next.
    LEAVING = "leaving"
    #: Terminal: an error the member cannot recover from.
    FATAL = "fatal"
    #: Left because the application stopped polling (max_poll_interval_ms); rejoins on its next poll.
    STALE = "stale"


_S = ConsumerMemberState

LEGAL_PREVIOUS: dict[ConsumerMemberState, frozenset] = {
    _S.STABLE: frozenset({_S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.RECONCILING: frozenset({_S.STABLE, _S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.ACKNOWLEDGING: frozenset({_S.RECONCILING}),
    _S.FATAL: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING,
                         _S.LEAVING, _S.UNSUBSCRIBED}),
    _S.FENCED: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING,
                          _S.LEAVING}),
    _S.JOINING: frozenset({_S.FENCED, _S.UNSUBSCRIBED, _S.STALE}),
    _S.PREPARE_LEAVING: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING,
                                   _S.UNSUBSCRIBED}),
    _S.LEAVING: frozenset({_S.PREPARE_LEAVING}),
    _S.UNSUBSCRIBED: frozenset({_S.PREPARE_LEAVING, _S.LEAVING, _S.FENCED}),
    _S.STALE: frozenset({_S.LEAVING}),
}

#: Kafka ``MemberState.canHandleNewAssignment``: the states RECONCILING may be entered from.
CAN_HANDLE_NEW_ASSIGNMENT = LEGAL_PREVIOUS[_S.RECONCILING]
#: Kafka ``AbstractMembershipManager.isNotInGroup``.
NOT_IN_GROUP = frozenset({_S.UNSUBSCRIBED, _S.FENCED, _S.FATAL, _S.STALE})
#: Kafka ``shouldSkipHeartbeat``: the same four states send no heartbeat.
SKIPS_HEARTBEAT = NOT_IN_GROUP
#: Kafka ``shouldHeartbeatNow``: these heartbeat without waiting for the interval.
HEARTBEATS_NOW = frozenset({_S.ACKNOWLEDGING, _S.LEAVING, _S.JOINING})
#: Kafka ``isLeavingGroup``.
LEAVING_GROUP = frozenset({_S.PREPARE_LEAVING, _S.LEAVING})


def new_consumer_member_state_machine(name: str) -> StateMachine[ConsumerMemberState]:
    return StateMachine(name, ConsumerMemberState.UNSUBSCRIBED, LEGAL_PREVIOUS)
