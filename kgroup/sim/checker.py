"""The history checker: every guarantee of a consumer group, as checks over a recorded history.

Each check has a name (Jepsen's where Jepsen has one) and reports
:class:`Violation` values; a run is good when there are none.

During the run, after every instant (:class:`OwnershipChecker`):

- ``same-generation-owners``: two members own one partition in the same generation;
- ``eager-owns-during-rebalance``: an eager member owns partitions while its
  JoinGroup/SyncGroup is outstanding (it must revoke everything first);
- the overlaps the classic protocol allows (members of *different* generations
  owning one partition: one was cut off and has not yet learnt it lost it)
  are not violations; they are reported as :class:`Overlap` with durations.

Over the whole history (:func:`check_history`):

- ``offset-went-back``: per partition, accepted commits in the order the
  coordinator handled them are non-decreasing (not in the order their answers
  arrived: a member frozen after sending reads its answer only when it thaws);
- ``stale-generation-commit``: an accepted commit carries the generation its
  offsets were produced in, or its member kept the partition from that
  generation to the one it carried;
- ``acknowledged-commit-lost``: the committed offset at the end is the last
  acknowledged one or a commit whose answer never came (or was lost on the way back); and (checked by the
  simulator during the run) a new coordinator, once loaded after a move, serves
  every commit acknowledged before the move;
- ``duplicate``: a new owner resumed below an offset whose commit had been
  acknowledged before it asked (records processed twice outside the uncommitted window);
- ``poll-skip``: a new owner resumed at an offset nobody committed, or a
  consumer's next batch did not start where its last one ended;
- ``lost-write``: a record below the final high watermark that nobody processed
  although a later record of its partition was processed.

Once the group settled after the last fault (:func:`check_sticky_moves`, called by the simulator
with the live group's final assignment):

- ``needless-move`` (sticky and cooperative-sticky only; range and roundrobin promise no
  stickiness, and the check returns nothing for them): only the partitions that had to move
  moved.  Let ``G`` be the settled generation and ``M`` its members (member ids).  Walking back
  over the generations the history recorded (in the order they first appeared), the *reference*
  generation ``R`` is the last one whose members differ from ``M``, or in which a member owned a
  partition of a topic the settled group does not subscribe to (its subscription differed, and with
  it the balance the assignor aimed at), or which began (first recorded) no later than the last
  ``add_partitions`` fault: the state before the last change of membership, subscriptions or
  partition count; with none, the first generation recorded.  For each member
  ``x`` in both ``R`` (Stable there, ``S`` its assignment: what it owned when it became Stable in
  ``R``, before an eager member revokes it to rejoin) and ``G`` (owning ``F``), over the partitions ``T``
  of the final assignment (``N`` of them, ``|M|`` members): ``x`` had to give up at most what it
  held above the fair floor, ``max(0, |S & T| - N // |M|)``; losing more of ``S & T`` than that
  (``|(S & T) - F|`` larger) is a violation.  Partitions of a topic no longer subscribed, and
  members that left, restarted (new member id) or joined, are not judged; nor is a member seen
  without a generation after ``R`` began (it lost its partitions, fenced or expired, and rejoined
  claiming none: KIP-429's lost partitions, which no assignor can keep for it).

The simulator adds ``not-settled``, ``unbalanced`` and ``static-bounce-rebalanced``
(they need the live group, see :mod:`kgroup.sim.simulator`).

In exactly-once mode (:mod:`kgroup.sim.eos`; :data:`EOS_CHECKS`, :func:`check_exactly_once`), the checks
Jepsen's Kafka workload makes of transactions, over what a read_committed reader of the output
observed (``OutputObserved``) and the group's committed offsets as OffsetFetch served them
(``GroupOffsetObserved``), once every transaction is decided:

- ``aborted-read``: the reader returned an output record of a transaction its application never
  asked to commit (it aborted it, was fenced or crashed first: such a transaction can only abort);
- ``duplicate-output``: an input record's output appears more than once among committed outputs;
- ``offsets-outside-transaction``: the group's offset moved to a value no transaction asked to commit
  carried (a plain commit, or an aborted transaction's offsets), or pointed past an input record
  whose output was never committed, or (at the end) an input record's output is committed while
  the group's offset is not past it: offsets and outputs commit together or not at all.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import attrs

from kgroup.assignors import RebalanceProtocol
from kgroup.core.member import ClassicMemberState
from kgroup.sim.history import (
    CommitAnswered, CommitSent, CoordinatorMoved, FaultApplied, GroupOffsetObserved, History, MemberFailed,
    OutputObserved, OwnershipChanged, Processed, Resumed, Transition, TxnAborted, TxnCommitted,
    TxnCoordinatorMoved, TxnEnding, TxnOffsetsAnswered, TxnOffsetsSent,
)
from kgroup.values import TopicPartition

__all__ = ["CHECKS", "EOS_CHECKS", "STICKY_ASSIGNORS", "check_exactly_once", "Overlap", "OwnershipChecker",
           "Violation", "check_history",
           "check_sticky_moves", "coverage", "last_acknowledged"]

CHECKS = ("same-generation-owners", "eager-owns-during-rebalance", "offset-went-back",
          "stale-generation-commit", "acknowledged-commit-lost", "duplicate", "poll-skip", "lost-write",
          "not-settled", "unbalanced", "static-bounce-rebalanced", "needless-move")
#: The exactly-once mode's checks (:func:`check_exactly_once`).
EOS_CHECKS = ("aborted-read", "duplicate-output", "offsets-outside-transaction")
#: The assignors that promise stickiness (``needless-move`` judges only these).
STICKY_ASSIGNORS = ("sticky", "cooperative-sticky")

_IN_REBALANCE = (ClassicMemberState.COMPLETING_REBALANCE,)
#: Member states (classic, then KIP-848) between a member's join and its assignment's arrival.
_JOINING = ("PREPARING_REBALANCE", "COMPLETING_REBALANCE", "JOINING", "RECONCILING", "ACKNOWLEDGING")
#: Commit answers that say the member was fenced (classic generations, KIP-848 member epochs).
_FENCED_COMMIT = ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "STALE_MEMBER_EPOCH",
                  "FENCED_MEMBER_EPOCH")


@attrs.frozen
class Violation:
    check: str
    at_ms: int
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.at_ms} ms: {self.message}"


@attrs.frozen
class Overlap:
    """Two members of different generations owned ``partition`` at once (the classic protocol allows it)."""

    partition: TopicPartition
    members: Tuple[str, ...]
    start_ms: int
    end_ms: int

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


class OwnershipChecker:
    """Looks at every member after every instant; records ownership changes in the history."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.violations: List[Violation] = []
        self.overlaps: List[Overlap] = []
        self._last: Dict[str, tuple] = {}
        self._open: Dict[TopicPartition, Tuple[Tuple[str, ...], int]] = {}
        #: What the last full look saw (each member, its generation, state and owned set, by identity)
        #: and the violations it found: while nothing changes, the same ones hold at every instant.
        self._seen: Optional[list] = None
        #: The same, by member name.
        self._seen_by_name: Dict[str, tuple] = {}
        self._holding: List[Tuple[str, str]] = []

    def after_instant(self, now_ms: int, members: Iterable[Tuple[str, object]]) -> None:
        members = list(members)
        last = self._seen
        if last is not None and len(last) == len(members) and self._unchanged(last, members):
            # Nothing changed: no ownership change to record, no overlap opens or closes.
            if self._holding:
                self.violations.extend(Violation(check, now_ms, message) for check, message in self._holding)
            return
        self._seen = [(name, member, member.generation, member.state,  # type: ignore[attr-defined]
                       member.assignment) for name, member in members]  # type: ignore[attr-defined]
        self._seen_by_name = {entry[0]: entry for entry in self._seen}
        first = len(self.violations)
        self._look(now_ms, members)
        self._holding = [(v.check, v.message) for v in self.violations[first:]]

    def unchanged(self, members: Mapping[str, object], names: Iterable[str]) -> bool:
        """Whether each of ``names`` is in ``members`` as the same member, generation, state and owned
        set as at the last look (a driver that knows only these were touched need not look again)."""
        if self._seen is None or len(members) != len(self._seen):
            return False
        seen = self._seen_by_name
        for name in names:
            entry = seen.get(name)
            member = members.get(name)
            if (entry is None or member is None or entry[1] is not member
                    or entry[2] is not member.generation  # type: ignore[attr-defined]
                    or entry[3] is not member.state  # type: ignore[attr-defined]
                    or entry[4] is not member.assignment):  # type: ignore[attr-defined]
                return False
        return True

    @property
    def holding(self) -> bool:
        """Whether the last look found violations (they are repeated at every instant until a change)."""
        return bool(self._holding)

    @staticmethod
    def _unchanged(last: list, members: List[Tuple[str, object]]) -> bool:
        """Each member, its generation, state and owned set are the very objects of the last look."""
        for (name, member, generation, state, owned), (now_name, now_member) in zip(last, members):
            if (name != now_name or member is not now_member
                    or generation is not now_member.generation  # type: ignore[attr-defined]
                    or state is not now_member.state  # type: ignore[attr-defined]
                    or owned is not now_member.assignment):  # type: ignore[attr-defined]
                return False
        return True

    def _look(self, now_ms: int, members: List[Tuple[str, object]]) -> None:
        owners: Dict[TopicPartition, List[Tuple[str, int]]] = {}
        for name, member in members:
            generation = member.generation  # type: ignore[attr-defined]
            state = member.state  # type: ignore[attr-defined]
            owned = member.assignment  # type: ignore[attr-defined]
            # A KIP-848 member has no ``protocol``: it revokes incrementally, like a cooperative one.
            eager = getattr(member, "protocol", None) is RebalanceProtocol.EAGER
            key = (generation, state, owned)
            if self._last.get(name) != key:
                self._last[name] = key
                self.history.record(OwnershipChanged(now_ms, name, generation.member_id,
                                                     generation.generation_id, state.name, owned, eager))
            if eager and owned and state in _IN_REBALANCE:
                self.violations.append(Violation(
                    "eager-owns-during-rebalance", now_ms,
                    f"{name} (eager) owns {sorted(owned)} in state {state.name}"))
            for tp in owned:
                owners.setdefault(tp, []).append((name, generation.generation_id))
        for tp, held in owners.items():
            if len(held) < 2:
                continue
            # A member with no generation (-1: it left, or was expired, and has not yet polled to learn
            # it lost its partitions) shares no generation with anyone.
            generations = [g for _n, g in held if g >= 0]
            if len(set(generations)) < len(generations):
                self.violations.append(Violation("same-generation-owners", now_ms,
                                                 f"{tp} owned by {sorted(held)} in one generation"))
            names = tuple(sorted(n for n, _g in held))
            if tp not in self._open:
                self._open[tp] = (names, now_ms)
        for tp in [tp for tp in self._open if len(owners.get(tp, ())) < 2]:
            names, start_ms = self._open.pop(tp)
            self.overlaps.append(Overlap(tp, names, start_ms, now_ms))

    def forget(self, name: str) -> None:
        self._last.pop(name, None)
        self._seen = None
        self._seen_by_name = {}

    def close(self, now_ms: int) -> None:
        for tp, (names, start_ms) in self._open.items():
            self.overlaps.append(Overlap(tp, names, start_ms, now_ms))
        self._open.clear()


# -- the history checks ---------------------------------------------------------------------------

def check_history(history: History, final_committed: Dict[TopicPartition, int],
                  final_logs: Dict[TopicPartition, Sequence[str]]) -> List[Violation]:
    """Every check over the whole history; ``final_logs`` holds each partition's records below its HW."""
    out: List[Violation] = []
    out += check_offsets_monotonic(history)
    out += check_commit_generations(history)
    out += check_acknowledged_commits_survive(history, final_committed)
    out += check_resumes(history)
    out += check_batches_follow(history)
    out += check_lost_writes(history, final_logs)
    return out


def _accepted(history: History) -> List[CommitAnswered]:
    """Accepted commits in the order the coordinator handled them; answers of one instant keep their
    order of arrival (one link's answers arrive in the order it handled them)."""
    accepted = [e for e in history.of(CommitAnswered) if e.error == "NONE"]
    accepted.sort(key=_handled_ms)
    return accepted


def _handled_ms(commit: CommitAnswered) -> int:
    return commit.handled_ms


def check_offsets_monotonic(history: History) -> List[Violation]:
    out: List[Violation] = []
    last: Dict[TopicPartition, CommitAnswered] = {}
    for commit in _accepted(history):
        before = last.get(commit.partition)
        if before is not None and commit.offset < before.offset:
            out.append(Violation("offset-went-back", commit.at_ms,
                                 f"committed offset of {commit.partition} went back from {before.offset} "
                                 f"({before.member}) to {commit.offset} ({commit.member})"))
        last[commit.partition] = commit
    return out


def _owners_by_generation(history: History) -> Dict[Tuple[TopicPartition, int], str]:
    owner_in: Dict[Tuple[TopicPartition, int], str] = {}
    for change in history.of(OwnershipChanged):
        if change.generation >= 0:
            for tp in change.owned:
                owner_in.setdefault((tp, change.generation), change.member_id)
    return owner_in


def check_commit_generations(history: History) -> List[Violation]:
    """An accepted commit was made in the generation it carried, or its member kept the partition
    from the generation it made it in to that one (a cooperative member commits what it revokes in
    the new generation; nobody else owned the partition in between)."""
    produced_in: Dict[Tuple[str, TopicPartition, int], Set[int]] = {}
    for event in history.events:
        if type(event) is Processed:
            produced_in.setdefault((event.member_id, event.partition, event.end_offset), set()).add(
                event.generation)
        elif type(event) is Resumed:
            produced_in.setdefault((event.member_id, event.partition, event.position), set()).add(
                event.generation)
    owner_in = _owners_by_generation(history)
    # Generation numbers restart when a group is created anew: an empty classic group that a
    # consumer-protocol member joins is replaced by a new consumer group at epoch 1 (Kafka's
    # GroupMetadataManager deletes it), and the reverse.  So whom else owned the partition in a later
    # generation counts only from when the member itself began to own it in the generation it made the
    # offsets in: an owner of the same number before that belongs to an earlier group.
    owners_since: Dict[Tuple[TopicPartition, int], List[Tuple[int, str]]] = {}
    began: Dict[Tuple[str, TopicPartition, int], int] = {}
    for change in history.of(OwnershipChanged):
        if change.generation >= 0:
            for tp in change.owned:
                owners_since.setdefault((tp, change.generation), []).append((change.at_ms, change.member_id))
                began.setdefault((change.member_id, tp, change.generation), change.at_ms)

    def first_owner(tp: TopicPartition, generation: int, since_ms: int, default: str) -> str:
        return next((owner for at_ms, owner in owners_since.get((tp, generation), ()) if at_ms >= since_ms),
                    default)

    def kept(member_id: str, tp: TopicPartition, made_in: int, generation: int) -> bool:
        since_ms = began.get((member_id, tp, made_in), 0)
        return made_in < generation and all(first_owner(tp, g, since_ms, member_id) == member_id
                                            for g in range(made_in + 1, generation + 1))

    out: List[Violation] = []
    for commit in _accepted(history):
        made_in = produced_in.get((commit.member_id, commit.partition, commit.offset), set())
        generation = commit.generation
        if generation in made_in or any(kept(commit.member_id, commit.partition, g, generation)
                                        for g in made_in):
            continue
        first = min(made_in, default=generation)
        owners = {g: owner_in.get((commit.partition, g)) for g in range(first, generation + 1)}
        out.append(Violation("stale-generation-commit", commit.at_ms,
                             f"{commit.member} committed {commit.partition}@{commit.offset} as generation "
                             f"{generation}, but made it in generation(s) {sorted(made_in)}; the owners "
                             f"were {owners}"))
    return out


def last_acknowledged(history: History) -> Dict[TopicPartition, int]:
    """The highest offset acknowledged so far per partition."""
    out: Dict[TopicPartition, int] = {}
    for commit in _accepted(history):
        out[commit.partition] = max(out.get(commit.partition, -1), commit.offset)
    return out


def check_acknowledged_commits_survive(history: History,
                                       final_committed: Dict[TopicPartition, int]) -> List[Violation]:
    last: Dict[TopicPartition, CommitAnswered] = {}
    for commit in _accepted(history):
        last[commit.partition] = commit
    # A commit whose answer was lost on the way back (TRANSPORT) may or may not have been applied:
    # like one never answered, it may be what the coordinator holds at the end.
    answered = {(e.member, e.partition, e.offset) for e in history.of(CommitAnswered)
                if e.error != "TRANSPORT"}
    unanswered: Dict[TopicPartition, Set[int]] = {}
    for sent in history.of(CommitSent):
        if (sent.member, sent.partition, sent.offset) not in answered:
            unanswered.setdefault(sent.partition, set()).add(sent.offset)
    out: List[Violation] = []
    for tp, commit in last.items():
        final = final_committed.get(tp)
        if final != commit.offset and final not in unanswered.get(tp, ()):
            out.append(Violation("acknowledged-commit-lost", commit.at_ms,
                                 f"{tp}: {commit.member}'s commit of {commit.offset} was acknowledged, "
                                 f"the committed offset at the end is {final}"))
    return out


def check_resumes(history: History) -> List[Violation]:
    """A new owner starts at the committed offset: not below one acknowledged before it asked
    (``duplicate``), not at one nobody committed (``poll-skip``)."""
    out: List[Violation] = []
    acknowledged: Dict[TopicPartition, List[Tuple[int, int]]] = {}
    committed_any: Dict[TopicPartition, Set[int]] = {}
    for event in history.events:
        kind = type(event)
        if kind is CommitAnswered and event.error == "NONE":
            acknowledged.setdefault(event.partition, []).append((event.at_ms, event.offset))
        elif kind is CommitSent or kind is TxnOffsetsSent:
            committed_any.setdefault(event.partition, set()).add(event.offset)
        elif kind is Resumed:
            floor = max((offset for at_ms, offset in acknowledged.get(event.partition, ())
                         if at_ms < event.asked_at_ms), default=0)
            if event.position < floor:
                out.append(Violation("duplicate", event.at_ms,
                                     f"{event.member} resumed {event.partition} at {event.position}, below "
                                     f"the offset {floor} committed (and acknowledged) before it asked: "
                                     f"records {event.position}..{floor - 1} are processed again"))
            elif event.position and event.position not in committed_any.get(event.partition, ()):
                out.append(Violation("poll-skip", event.at_ms,
                                     f"{event.member} resumed {event.partition} at {event.position}, an "
                                     "offset nobody committed"))
    return out


def check_batches_follow(history: History) -> List[Violation]:
    """Within one ownership (from a resume on), each processed batch starts where the last ended."""
    out: List[Violation] = []
    position: Dict[Tuple[str, TopicPartition], int] = {}
    for event in history.events:
        kind = type(event)
        if kind is Resumed:
            position[(event.member, event.partition)] = event.position
        elif kind is Processed:
            key = (event.member, event.partition)
            expected = position.get(key)
            if expected is not None and event.first_offset != expected:
                out.append(Violation("poll-skip", event.at_ms,
                                     f"{event.member} processed {event.partition} from {event.first_offset}, "
                                     f"its position was {expected}"))
            position[key] = event.end_offset
    return out


def check_lost_writes(history: History, final_logs: Dict[TopicPartition, Sequence[str]]) -> List[Violation]:
    processed: Dict[TopicPartition, List[Tuple[int, int]]] = {}
    for event in history.of(Processed):
        processed.setdefault(event.partition, []).append((event.first_offset, event.end_offset))
    # Exactly-once mode: a record whose output is committed was processed, whether or not its
    # application lived to learn its transaction committed.
    for seen in history.of(OutputObserved):
        processed.setdefault(seen.source, []).append((seen.source_offset, seen.source_offset + 1))
    out: List[Violation] = []
    for tp, ranges in processed.items():
        ranges.sort()
        reached = 0
        missing: List[Tuple[int, int]] = []
        for first, end in ranges:
            if first > reached:
                missing.append((reached, first))
            reached = max(reached, end)
        records = final_logs.get(tp, ())
        for first, end in missing:
            if first < len(records):
                out.append(Violation("lost-write", 0,
                                     f"{tp}: records {first}..{end - 1} (e.g. {records[first]!r}) were never "
                                     f"processed, though later records up to {reached - 1} were"))
    return out


def check_exactly_once(history: History, final_committed: Dict[TopicPartition, int]) -> List[Violation]:
    """The exactly-once checks (module doc); ``final_committed``: the group's offsets once every
    transaction is decided."""
    asked_to_commit = {e.txn for e in history.of(TxnEnding) if e.commit}
    aborted_because = {e.txn: e.reason for e in history.of(TxnAborted)}
    out: List[Violation] = []
    outputs: Dict[Tuple[TopicPartition, int], List[OutputObserved]] = {}
    for seen in history.of(OutputObserved):
        if seen.txn not in asked_to_commit:
            why = aborted_because.get(seen.txn, "its application stopped before asking")
            out.append(Violation("aborted-read", seen.at_ms,
                                 f"read_committed returned {seen.partition}@{seen.offset} (the output of "
                                 f"{seen.source}@{seen.source_offset}) of {seen.txn}, which was never asked "
                                 f"to commit ({why})"))
        outputs.setdefault((seen.source, seen.source_offset), []).append(seen)
    for (source, offset), seen_all in sorted(outputs.items()):
        if len(seen_all) > 1:
            out.append(Violation("duplicate-output", seen_all[1].at_ms,
                                 f"{source}@{offset} has {len(seen_all)} committed outputs: "
                                 + ", ".join(f"{s.partition}@{s.offset} ({s.txn})" for s in seen_all)))
    # Offsets each transaction asked to commit carried, per input partition.
    carried: Dict[TopicPartition, Set[int]] = {}
    for sent in history.of(TxnOffsetsSent):
        if sent.txn in asked_to_commit:
            carried.setdefault(sent.partition, set()).add(sent.offset)
    with_output: Dict[TopicPartition, Set[int]] = {}
    for source, offset in outputs:
        with_output.setdefault(source, set()).add(offset)

    #: Per input partition, the first offset without a committed output.
    first_without: Dict[TopicPartition, int] = {}
    for tp, done in with_output.items():
        first = 0
        while first in done:
            first += 1
        first_without[tp] = first

    for observed in history.of(GroupOffsetObserved):
        tp, offset = observed.partition, observed.offset
        if offset > 0 and offset not in carried.get(tp, ()):
            out.append(Violation("offsets-outside-transaction", observed.at_ms,
                                 f"the group's offset of {tp} moved to {offset}, which no transaction asked "
                                 "to commit carried (a plain commit, or an aborted transaction's)"))
            continue
        missing = first_without.get(tp, 0)
        if missing < offset:
            out.append(Violation("offsets-outside-transaction", observed.at_ms,
                                 f"the group's offset of {tp} is {offset}, past {tp}@{missing} whose output "
                                 "was never committed"))
    for tp, done in sorted(with_output.items()):
        committed = final_committed.get(tp, 0)
        beyond = sorted(o for o in done if o >= committed)
        if beyond:
            out.append(Violation("offsets-outside-transaction", 0,
                                 f"{tp}@{beyond[0]}'s output is committed ({len(beyond)} such), but the "
                                 f"group's offset stayed at {committed}"))
    return out


def _names(partitions: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions)) + "]"


def check_sticky_moves(history: History, assignor: str, final: Mapping[str, Tuple[str, int, frozenset]],
                       at_ms: int) -> List[Violation]:
    """``needless-move`` (see the module's docstring); ``final`` maps each member's name to its
    member id, generation and owned partitions once the group settled."""
    if assignor not in STICKY_ASSIGNORS or not final:
        return []
    settled = {member_id for member_id, _g, _owned in final.values()}
    final_generation = next(iter(final.values()))[1]
    partitions = frozenset().union(*(owned for _id, _g, owned in final.values()))
    topics = {tp.topic for tp in partitions}
    order: List[int] = []
    members: Dict[int, Set[str]] = {}
    #: Generations in which a member owned a partition of a topic the settled group does not
    #: subscribe to (its subscription differed, so did the balance the assignor aimed at), or that
    #: began before the topic last grew.
    changed: Set[int] = set()
    stable: Dict[int, Dict[str, frozenset]] = {}
    began: Dict[int, int] = {}
    #: When each member (by name) was seen without a generation: it lost its partitions (KIP-429's
    #: "lost": fenced or expired) and rejoined claiming nothing, so no assignor owes it stickiness.
    reset_at: Dict[str, List[int]] = {}
    #: Generations that began before the topic last grew: balance was over fewer partitions then.
    grown_at = max((e.at_ms for e in history.of(FaultApplied) if e.fault.startswith("add_partitions")),
                   default=-1)
    for change in history.of(OwnershipChanged):
        if change.generation < 0:
            reset_at.setdefault(change.member, []).append(change.at_ms)
            continue
        if change.generation == final_generation:
            continue
        if change.generation not in members:
            began[change.generation] = change.at_ms
            order.append(change.generation)
            if change.at_ms <= grown_at:
                changed.add(change.generation)
            members[change.generation] = set()
            stable[change.generation] = {}
        members[change.generation].add(change.member_id)
        if any(tp.topic not in topics for tp in change.owned):
            changed.add(change.generation)
        if change.state == "STABLE":  # its assignment: an eager member revokes it later in the generation
            stable[change.generation].setdefault(change.member_id, change.owned)
    if not order:
        return []
    reference = order[0]
    for generation in reversed(order):
        if members[generation] != settled or generation in changed:
            reference = generation
            break
    floor = len(partitions) // len(final)
    out: List[Violation] = []
    for name, (member_id, _generation, owned) in sorted(final.items()):
        before = stable[reference].get(member_id)
        if before is None or any(at_ms > began[reference] for at_ms in reset_at.get(name, ())):
            continue
        held = before & partitions
        lost = held - owned
        allowed = max(0, len(held) - floor)
        if len(lost) > allowed:
            out.append(Violation("needless-move", at_ms,
                                 f"{assignor}: {name} owned {_names(held)} in generation {reference} (before "
                                 f"the last change of membership, subscriptions or partitions) and "
                                 f"{_names(owned)} once settled in generation {final_generation}; balance "
                                 f"({len(partitions)} partitions, {len(final)} members) required it to give "
                                 f"up at most {allowed}, it lost {_names(lost)}"))
    return out


# -- coverage ---------------------------------------------------------------------------------------

def coverage(history: History, overlaps: Sequence[Overlap]) -> Dict[str, int]:
    """How often each interesting state was reached in this run."""
    counts: Dict[str, int] = {}

    def count(key: str, by: int = 1) -> None:
        counts[key] = counts.get(key, 0) + by

    joining: Set[str] = set()
    group_state: Optional[str] = None
    for event in history.events:
        kind = type(event)
        if kind is Transition:
            count(f"{event.machine}:{event.new}")
            if event.machine == "member":
                if event.new in _JOINING:
                    joining.add(event.machine_id)
                else:
                    joining.discard(event.machine_id)
            elif event.machine == "group":
                group_state = event.new
        elif kind is CommitSent:
            if event.member_state != "STABLE" or group_state not in (None, "STABLE"):
                count("commit during rebalance")
        elif kind is CommitAnswered:
            if event.error in _FENCED_COMMIT:
                count("commit fenced")
            elif event.error == "REBALANCE_IN_PROGRESS":
                count("commit refused: rebalance in progress")
        elif kind is CoordinatorMoved:
            count("coordinator moved")
            if joining:
                count("coordinator moved during join")
        elif kind is FaultApplied:
            count("fault " + event.fault.split()[0])
        elif kind is MemberFailed:
            count("member failed, restarted")
        elif kind is TxnCoordinatorMoved:
            count("txn coordinator moved")
        elif kind is TxnCommitted:
            count("txn committed")
        elif kind is TxnAborted:
            count("txn aborted")
        elif kind is TxnOffsetsAnswered and event.error in _FENCED_COMMIT:
            count("txn offsets fenced (KIP-447)")
    count("classic overlaps", len(overlaps))
    return counts
