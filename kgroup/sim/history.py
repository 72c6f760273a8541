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
           "GroupOffsetObserved", "GroupTypeChanged", "History", "MemberFailed", "MemberStopped",
           "OutputAppended", "OutputObserved", "OwnershipChanged", "Processed", "Resumed",
           "RollingRestartStep", "Transition", "TxnAborted", "TxnBegun", "TxnCommitted",
           "TxnCoordinatorMoved", "TxnEnding", "TxnOffsetsAnswered", "TxnOffsetsSent"]

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
    #: When the coordinator handled the request (-1: it never reached a broker).  The answer can come
    #: much later (a member frozen meanwhile reads it when it thaws): the checks order what the
    #: coordinator accepted by this, not by ``at_ms``.
    handled_ms: int


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


# -- exactly-once mode (kgroup.sim.eos): one application's transactions, and what a read_committed
# reader of the output saw.  ``txn`` labels a transaction: ``<member>.<incarnation>.<n>``.

class _TxnBegun(NamedTuple):
    at_ms: int
    member: str
    txn: str
    producer_id: int
    producer_epoch: int


class TxnBegun(_Event, _TxnBegun):
    """The application began a transaction for one batch (its producer id and epoch known)."""

    __slots__ = ()


class _OutputAppended(NamedTuple):
    at_ms: int
    member: str
    txn: str
    partition: TopicPartition
    offset: int
    source: TopicPartition
    source_offset: int


class OutputAppended(_Event, _OutputAppended):
    """An output record of ``txn`` (made from input ``source``@``source_offset``) the leader appended."""

    __slots__ = ()


class _TxnOffsetsSent(NamedTuple):
    at_ms: int
    member: str
    txn: str
    member_id: str
    generation: int
    partition: TopicPartition
    offset: int


class TxnOffsetsSent(_Event, _TxnOffsetsSent):
    """A TxnOffsetCommit of ``txn`` left the producer (one per partition), with the consumer's group
    metadata (KIP-447)."""

    __slots__ = ()


class _TxnOffsetsAnswered(NamedTuple):
    at_ms: int
    member: str
    txn: str
    error: str


class TxnOffsetsAnswered(_Event, _TxnOffsetsAnswered):
    __slots__ = ()


class _TxnEnding(NamedTuple):
    at_ms: int
    member: str
    txn: str
    commit: bool


class TxnEnding(_Event, _TxnEnding):
    """The application asked for EndTxn: commit (once, then retried until answered) or abort."""

    __slots__ = ()


class _TxnCommitted(NamedTuple):
    at_ms: int
    member: str
    txn: str


class TxnCommitted(_Event, _TxnCommitted):
    """EndTxn(commit) was answered NONE."""

    __slots__ = ()


class _TxnAborted(NamedTuple):
    at_ms: int
    member: str
    txn: str
    reason: str


class TxnAborted(_Event, _TxnAborted):
    """The application gave the transaction up before asking to commit it (refused, fenced, timed out)."""

    __slots__ = ()


class _OutputObserved(NamedTuple):
    at_ms: int
    partition: TopicPartition
    offset: int
    txn: str
    source: TopicPartition
    source_offset: int


class OutputObserved(_Event, _OutputObserved):
    """A read_committed reader of the output topic returned this record."""

    __slots__ = ()


class _GroupOffsetObserved(NamedTuple):
    at_ms: int
    partition: TopicPartition
    offset: int


class GroupOffsetObserved(_Event, _GroupOffsetObserved):
    """The group's committed offset of an input partition, as OffsetFetch served it, changed."""

    __slots__ = ()


class _TxnCoordinatorMoved(NamedTuple):
    at_ms: int
    old_broker: Optional[int]
    new_broker: Optional[int]


class TxnCoordinatorMoved(_Event, _TxnCoordinatorMoved):
    """The transaction coordinator of an application's transactional id moved (its broker failed)."""


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
