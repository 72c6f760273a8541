"""The recorded history of one simulation: every fetch, process, commit, ownership change,
rebalance transition and fault, in the order it happened.

Events are immutable named tuples with ``at_ms`` first (equal only to an event of
the same kind); :class:`History` keeps them in one list (``events``) and is what
the checker, and later the timelines and metrics, read.  Partitions are
:class:`~kgroup.values.TopicPartition`.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple, Type, TypeVar

from kgroup.values import TopicPartition

__all__ = ["Appended", "CommitAnswered", "CommitSent", "CoordinatorMoved", "FaultApplied", "Fetched",
           "GroupTypeChanged", "History", "MemberFailed", "MemberStopped", "OwnershipChanged", "Processed",
           "Resumed", "RollingRestartStep", "Transition"]

E = TypeVar("E")


class _Event(tuple):
    """What every event shares: an immutable tuple of its fields, ``at_ms`` first.

    Events were attrs frozen classes; a run records about 20,000 of them, and a tuple is built four
    times faster (issue 28).  Equality also compares the kind (a Fetched is never equal to a
    Processed of the same batch), as attrs' did.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and tuple.__eq__(self, other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(self)))


class _FaultApplied(NamedTuple):
    at_ms: int
    #: The schedule line (``crash m1 for 800 ms``), or ``heal ...`` for its undoing half.
    fault: str


class FaultApplied(_Event, _FaultApplied):
    __slots__ = ()


class _Appended(NamedTuple):
    at_ms: int
    partition: TopicPartition
    offset: int
    payload: str


class Appended(_Event, _Appended):
    """A producer's record the partition leader appended."""

    __slots__ = ()


class _Batch(NamedTuple):
    """Records ``[first_offset, end_offset)`` of one partition, as one member (in one generation) saw them."""

    at_ms: int
    member: str
    member_id: str
    generation: int
    partition: TopicPartition
    first_offset: int
    end_offset: int


class Fetched(_Event, _Batch):
    """A consumer's poll returned the batch (records below the high watermark)."""

    __slots__ = ()


class Processed(_Event, _Batch):
    """The application finished processing the batch; its position is ``end_offset``."""

    __slots__ = ()


class _Resumed(NamedTuple):
    at_ms: int
    member: str
    member_id: str
    generation: int
    partition: TopicPartition
    position: int
    #: When the OffsetFetch that answered it was sent.
    asked_at_ms: int


class Resumed(_Event, _Resumed):
    """A new owner learnt its starting position (the committed offset, or 0 with none)."""

    __slots__ = ()


class _CommitSent(NamedTuple):
    at_ms: int
    member: str
    member_id: str
    generation: int
    partition: TopicPartition
    offset: int
    #: The member's state and the group's, as the member saw them (for coverage).
    member_state: str


class CommitSent(_Event, _CommitSent):
    """An OffsetCommit request left the member (one per partition)."""

    __slots__ = ()


class _CommitAnswered(NamedTuple):
    at_ms: int
    member: str
    member_id: str
    generation: int
    partition: TopicPartition
    offset: int
    error: str


class CommitAnswered(_Event, _CommitAnswered):
    """The coordinator's answer reached the member; ``error`` is ``NONE`` for an accepted commit."""

    __slots__ = ()


class _OwnershipChanged(NamedTuple):
    at_ms: int
    member: str
    member_id: str
    generation: int
    state: str
    owned: frozenset
    eager: bool


class OwnershipChanged(_Event, _OwnershipChanged):
    """What a member owns changed (or its generation or state did)."""

    __slots__ = ()


class _MemberStopped(NamedTuple):
    at_ms: int
    member: str
    clean: bool


class MemberStopped(_Event, _MemberStopped):
    """A member's process stopped (``crash``; ``leave`` and ``bounce`` close cleanly first): from here
    it owns nothing, whatever its last :class:`OwnershipChanged` said."""

    __slots__ = ()


class _MemberFailed(NamedTuple):
    at_ms: int
    member: str
    error: str


class MemberFailed(_Event, _MemberFailed):
    """A member hit an error it cannot recover from (FATAL, e.g. KIP-848's UNRELEASED_INSTANCE_ID for a
    static member back before its previous process's session expired): the application exits and its
    supervisor restarts it (a :class:`MemberStopped` follows)."""

    __slots__ = ()


class _Transition(NamedTuple):
    at_ms: int
    machine: str
    machine_id: str
    old: str
    new: str


class Transition(_Event, _Transition):
    """A member's or group's state machine moved (from the process-wide transition sink)."""

    __slots__ = ()


class _CoordinatorMoved(NamedTuple):
    at_ms: int
    old_broker: Optional[int]
    new_broker: Optional[int]


class CoordinatorMoved(_Event, _CoordinatorMoved):
    __slots__ = ()


class _GroupTypeChanged(NamedTuple):
    at_ms: int
    group: str
    #: ``classic``, ``consumer`` or ``none`` (no group yet, or it was deleted).
    old: str
    new: str


class GroupTypeChanged(_Event, _GroupTypeChanged):
    """The coordinator's group became a group of another type (online migration, KIP-848); recorded only
    by runs with a rolling restart into the other protocol."""

    __slots__ = ()


class _RollingRestartStep(NamedTuple):
    at_ms: int
    member: str
    #: The protocol of the member's new process.
    protocol: str
    #: ``restart`` (its consumer closed now, the new process starts within the session timeout) or
    #: ``switch while down`` (it was down already: its pending restart starts the new version).
    action: str


class RollingRestartStep(_Event, _RollingRestartStep):
    __slots__ = ()


class History:
    """Append-only events of one run."""

    def __init__(self) -> None:
        self.events: List[Any] = []

    def record(self, event: Any) -> None:
        self.events.append(event)

    def of(self, kind: Type[E]) -> List[E]:
        return [e for e in self.events if type(e) is kind]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def format(self) -> str:
        return "\n".join(_line(e) for e in self.events)

    def counts(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for event in self.events:
            out[type(event).__name__] = out.get(type(event).__name__, 0) + 1
        return out


def _value(value: Any) -> str:
    if isinstance(value, frozenset):  # set order follows PYTHONHASHSEED; the history's text must not
        return "{" + ", ".join(str(v) for v in sorted(value)) + "}"
    return str(value)


def _line(event: Any) -> str:
    names: Tuple[str, ...] = event._fields[1:]
    fields = tuple(f"{name}={_value(value)}" for name, value in zip(names, event[1:]))
    return f"{event.at_ms:>7} ms  {type(event).__name__} " + " ".join(fields)
