"""One stream of every state machine's transitions, stamped with the test's clock.

``with Trace(clock) as trace:`` installs a process-wide transition sink
(:func:`kgroup.core.fsm.transition_sink`), so it sees the members'
(``MemberState``), the coordinators' groups' (``GroupState``) and the
cluster's partitions' and replicas' (``PartitionState`` / ``ReplicaState``)
transitions in the order they happened, each as a :class:`TraceEntry`.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

import attrs

from kgroup.core.fsm import StateMachine, add_transition_sink, remove_transition_sink
from kgroup.errors import state_display_name

__all__ = ["Trace", "TraceEntry"]


@attrs.frozen
class TraceEntry:
    now_ms: int
    #: What kind of machine: its state enum's name without ``State``, lower case
    #: (``member``, ``group``, ``partition``, ``replica``, ``broker``).
    machine: str
    #: Which one: the machine's name, with ``#2``, ``#3``... for a second and third machine of
    #: the same name (members of one group share one name), numbered in order of first transition.
    machine_id: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return (f"{self.now_ms:>7} ms  {self.machine_id}: "
                f"{state_display_name(self.old)} -> {state_display_name(self.new)}")


def _kind(state: Any) -> str:
    name = type(state).__name__.removeprefix("Classic")  # ClassicMemberState traces as "member"
    return (name[:-len("State")] if name.endswith("State") and name != "State" else name).lower()


class Trace:
    """Records ``(now_ms, machine, id, old, new)`` for every transition while installed."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.entries: List[TraceEntry] = []
        self._lock = threading.Lock()
        # id(machine) -> (machine, label): the machine is kept so its id is never reused meanwhile.
        self._labels: Dict[int, Tuple[StateMachine, str]] = {}
        self._names_seen: Dict[str, int] = {}

    def __call__(self, machine: StateMachine, old: Any, new: Any) -> None:
        with self._lock:
            self.entries.append(TraceEntry(self.clock(), _kind(new), self._label(machine), old, new))

    def _label(self, machine: StateMachine) -> str:
        known = self._labels.get(id(machine))
        if known is not None:
            return known[1]
        count = self._names_seen.get(machine.name, 0) + 1
        self._names_seen[machine.name] = count
        label = machine.name if count == 1 else f"{machine.name}#{count}"
        self._labels[id(machine)] = (machine, label)
        return label

    # -- installing -----------------------------------------------------------------------------

    def start(self) -> "Trace":
        add_transition_sink(self)
        return self

    def stop(self) -> None:
        remove_transition_sink(self)

    def __enter__(self) -> "Trace":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- reading --------------------------------------------------------------------------------

    def of(self, machine: str, machine_id: Optional[str] = None) -> List[TraceEntry]:
        """The entries of one kind of machine (and of one machine, if named)."""
        return [e for e in self.entries
                if e.machine == machine and (machine_id is None or e.machine_id == machine_id)]

    def machines(self) -> set:
        return {e.machine for e in self.entries}

    def format(self) -> str:
        return "\n".join(str(e) for e in self.entries)
