"""The coordinator-side group state machine: one enum, one table of legal previous states."""
from __future__ import annotations

import enum

from kgroup.core.fsm import check_table


class GroupState(enum.Enum):
    # Values are Kafka's state strings, as DescribeGroups / ListGroups carry them.
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def display_name(self) -> str:
        """Kafka's name for the state (ClassicGroupState), the one errors and traces show."""
        return self.value


S = GroupState

#: target state -> states it may be entered from (Kafka's ClassicGroupState).
LEGAL_PREVIOUS: dict[GroupState, frozenset] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}

check_table(GroupState, LEGAL_PREVIOUS)
