"""The recorded history of one simulation: every fetch, process, commit, ownership change,
rebalance transition and fault, in the order it happened.

Events are frozen values with ``at_ms`` first; :class:`History` keeps them in
one list (``events``) and is what the checker, and later the timelines and
metrics, read.  Partitions are :class:`~kgroup.values.TopicPartition`.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple, Type, TypeVar

import attrs

from kgroup.values import TopicPartition

__all__ = ["Appended", "CommitAnswered", "CommitSent", "CoordinatorMoved", "FaultApplied", "Fetched",
           "History", "MemberFailed", "MemberStopped", "OwnershipChanged", "Processed", "Resumed",
           "Transition"]

E = TypeVar("E")


@attrs.frozen
class FaultApplied:
    at_ms: int
    #: The schedule line (``crash m1 for 800 ms``), or ``heal ...`` for its undoing half.
    fault: str


@attrs.frozen
class Appended:
    """A producer's record the partition leader appended."""

    at_ms: int
    partition: TopicPartition
    offset: int
    payload: str


@attrs.frozen
class _AboutPartition:
    """Something one member (in one generation) did about one partition."""

    at_ms: int
    member: str
    member_id: str
    generation: int
    partition: TopicPartition


@attrs.frozen
class _Batch(_AboutPartition):
    """Records ``[first_offset, end_offset)`` of one partition, as one member saw them."""

    first_offset: int
    end_offset: int


@attrs.frozen
class Fetched(_Batch):
    """A consumer's poll returned the batch (records below the high watermark)."""


@attrs.frozen
class Processed(_Batch):
    """The application finished processing the batch; its position is ``end_offset``."""


@attrs.frozen
class Resumed(_AboutPartition):
    """A new owner learnt its starting position (the committed offset, or 0 with none)."""

    position: int
    #: When the OffsetFetch that answered it was sent.
    asked_at_ms: int


@attrs.frozen
class CommitSent(_AboutPartition):
    """An OffsetCommit request left the member (one per partition)."""

    offset: int
    #: The member's state and the group's, as the member saw them (for coverage).
    member_state: str


@attrs.frozen
class CommitAnswered(_AboutPartition):
    """The coordinator's answer reached the member; ``error`` is ``NONE`` for an accepted commit."""

    offset: int
    error: str


@attrs.frozen
class OwnershipChanged:
    """What a member owns changed (or its generation or state did)."""

    at_ms: int
    member: str
    member_id: str
    generation: int
    state: str
    owned: frozenset
    eager: bool


@attrs.frozen
class MemberStopped:
    """A member's process stopped (``crash``; ``leave`` and ``bounce`` close cleanly first): from here
    it owns nothing, whatever its last :class:`OwnershipChanged` said."""

    at_ms: int
    member: str
    clean: bool


@attrs.frozen
class MemberFailed:
    """A member hit an error it cannot recover from (FATAL, e.g. KIP-848's UNRELEASED_INSTANCE_ID for a
    static member back before its previous process's session expired): the application exits and its
    supervisor restarts it (a :class:`MemberStopped` follows)."""

    at_ms: int
    member: str
    error: str


@attrs.frozen
class Transition:
    """A member's or group's state machine moved (from the process-wide transition sink)."""

    at_ms: int
    machine: str
    machine_id: str
    old: str
    new: str


@attrs.frozen
class CoordinatorMoved:
    at_ms: int
    old_broker: Optional[int]
    new_broker: Optional[int]


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
    fields: Tuple[str, ...] = tuple(f"{a.name}={_value(getattr(event, a.name))}"
                                    for a in attrs.fields(type(event))[1:])
    return f"{event.at_ms:>7} ms  {type(event).__name__} " + " ".join(fields)
