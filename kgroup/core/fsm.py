"""Table-driven state machines.

Each machine declares one enum and one table mapping every state to the set
of states it may be entered from; :class:`StateMachine.transition_to` is the
only way to move, and it rejects a move the table does not list with an
:class:`~kgroup.errors.IllegalStateTransition` naming both states.

Every transition is reported, after the state has changed, to the machine's
own ``observer`` (``(machine name, old, new)``, the shape of the coordinator's
``TransitionObserver``) and to every process-wide *transition sink*
(:func:`add_transition_sink`).  The sinks let one trace see the members, the
groups and the cluster's partitions and replicas without each owner
threading a callback through its constructor; they run on whatever thread
made the transition and must not raise.  The core stays sans-I/O: a sink gets
no time, a test's sink stamps entries with its own mock clock
(:class:`kgroup.testing.trace.Trace`).
"""
from __future__ import annotations

import contextlib
import enum
import weakref
from typing import Any, Callable, Generic, Iterator, Mapping, Optional, TypeVar

from kgroup.errors import IllegalStateTransition, state_display_name

S = TypeVar("S", bound=enum.Enum)

#: ``(machine name, old state, new state)``: a machine's own observer.
TransitionObserver = Callable[[str, Any, Any], None]
#: ``(machine, old state, new state)``: a process-wide sink (the machine itself, so a trace can
#: tell apart two machines of one name, e.g. two members of one group).
TransitionSink = Callable[["StateMachine", Any, Any], None]

# A tuple, replaced whole: a transition on another thread reads one consistent set of sinks.
_sinks: tuple = ()


def add_transition_sink(sink: TransitionSink) -> None:
    """Report every state machine's transitions to ``sink`` from now on."""
    global _sinks
    _sinks = _sinks + (sink,)


def remove_transition_sink(sink: TransitionSink) -> None:
    global _sinks
    _sinks = tuple(s for s in _sinks if s is not sink)


@contextlib.contextmanager
def transition_sink(sink: TransitionSink) -> Iterator[TransitionSink]:
    """``sink`` sees every transition made inside the ``with`` block."""
    add_transition_sink(sink)
    try:
        yield sink
    finally:
        remove_transition_sink(sink)


def check_table(states: type[S], legal_previous: Mapping[S, frozenset]) -> None:
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

    __slots__ = ("name", "state", "_legal_previous", "observer")

    def __init__(self, name: str, initial: S, legal_previous: Mapping[S, frozenset],
                 observer: Optional[TransitionObserver] = None) -> None:
        check_table(type(initial), legal_previous)
        self.name = name
        self.state = initial
        self._legal_previous = legal_previous
        self.observer = observer

    def can_transition_to(self, target: S) -> bool:
        return self.state in self._legal_previous[target]

    def transition_to(self, target: S) -> S:
        """Move to ``target``; return the previous state."""
        previous = self.state
        if previous not in self._legal_previous[target]:
            raise IllegalStateTransition(self.name, previous, target)
        self.state = target
        if self.observer is not None:
            self.observer(self.name, previous, target)
        for sink in _sinks:
            sink(self, previous, target)
        return previous

    def __repr__(self) -> str:
        return f"StateMachine({self.name!r}, {state_display_name(self.state)})"


class ValueMachine:
    """What a sink sees of a machine whose state lives in a frozen value (a KIP-848 coordinator's
    member): its name.  One object per name while anyone holds it, so a trace labels it once."""

    __slots__ = ("name", "__weakref__")

    def __init__(self, name: str) -> None:
        self.name = name


_value_machines: "weakref.WeakValueDictionary[str, ValueMachine]" = weakref.WeakValueDictionary()


def report_transition(name: str, previous: Any, target: Any) -> None:
    """Report a transition that a table check already allowed, made outside any :class:`StateMachine`
    (the state is a field of a frozen value), to every process-wide sink."""
    if not _sinks:
        return
    machine = _value_machines.get(name)
    if machine is None:
        machine = _value_machines[name] = ValueMachine(name)
    for sink in _sinks:
        sink(machine, previous, target)
