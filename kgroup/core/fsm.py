"""Table-driven state machines.

Each machine declares one enum and one table mapping every state to the set
of states it may be entered from; :class:`StateMachine.transition_to` is the
only way to move, and it rejects a move the table does not list with an
:class:`~kgroup.errors.IllegalStateTransition` naming both states.
"""
from __future__ import annotations

import enum
from typing import Generic, Mapping, TypeVar

from kgroup.errors import IllegalStateTransition

S = TypeVar("S", bound=enum.Enum)


def check_table(states: type[enum.Enum], legal_previous: Mapping[enum.Enum, frozenset]) -> None:
    """Fail fast (at import) if a table forgets a state or names a foreign one."""
    missing = set(states) - set(legal_previous)
    if missing:
        raise ValueError(f"{states.__name__} table has no row for {sorted(s.name for s in missing)}")
    for target, sources in legal_previous.items():
        for source in sources:
            if not isinstance(source, states):
                raise ValueError(f"{states.__name__} table row {target} names foreign state {source!r}")


class StateMachine(Generic[S]):
    """A current state plus the table that says where it may go."""

    __slots__ = ("name", "state", "_legal_previous")

    def __init__(self, name: str, initial: S, legal_previous: Mapping[S, frozenset]) -> None:
        check_table(type(initial), legal_previous)
        self.name = name
        self.state = initial
        self._legal_previous = legal_previous

    def can_transition_to(self, target: S) -> bool:
        return self.state in self._legal_previous[target]

    def transition_to(self, target: S) -> S:
        """Move to ``target``; return the previous state."""
        previous = self.state
        if previous not in self._legal_previous[target]:
            raise IllegalStateTransition(self.name, previous, target)
        self.state = target
        return previous

    def __repr__(self) -> str:
        return f"StateMachine({self.name!r}, {self.state.name})"
