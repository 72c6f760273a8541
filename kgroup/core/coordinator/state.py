"""The coordinator-side group state machine: one enum, one table of legal previous states."""
from __future__ import annotations

import enum

from kgroup.core.fsm import check_table


class GroupState(enum.Enum):
    # Values are Kafka's state strings, as DescribeGroups / ListGroups carry them.
    Empty = "Empty"
    PreparingRebalance = "PreparingRebalance"
    CompletingRebalance = "CompletingRebalance"
    Stable = "Stable"
    Dead = "Dead"


S = GroupState

#: target state -> states it may be entered from (Kafka's ClassicGroupState).
LEGAL_PREVIOUS: dict[GroupState, frozenset] = {
    S.Empty: frozenset({S.PreparingRebalance}),
    S.PreparingRebalance: frozenset({S.Stable, S.CompletingRebalance, S.Empty}),
    S.CompletingRebalance: frozenset({S.PreparingRebalance}),
    S.Stable: frozenset({S.CompletingRebalance}),
    S.Dead: frozenset({S.Stable, S.PreparingRebalance, S.CompletingRebalance, S.Empty, S.Dead}),
}

check_table(GroupState, LEGAL_PREVIOUS)
