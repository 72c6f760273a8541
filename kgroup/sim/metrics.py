"""Metrics of one run, computed from its :class:`~kgroup.sim.history.History` alone (pure).

- ``rebalances``: generations formed (distinct generation ids, or KIP-848 member epochs, members
  reached);
- ``unowned_partition_ms``: summed over the partitions, the time from a partition's first
  appearance in the history (a record appended, or an owner) to the end of the run during which
  no running member owned it ("gaps where nobody consumed"); ``unowned_partition_seconds`` is the
  same in seconds;
- ``records_processed_twice``: records processed more than once (each extra time counts);
- ``group_types``: the coordinator's group types in the order the run saw them (``classic``,
  ``consumer``), recorded only by a run that migrates between the protocols (otherwise empty);
- ``recovery_ms``: for each fault (not its healing half) and each step of a rolling restart, the time
  from it until the group was Stable again, if the group became unstable before the next fault or
  step (0 if it never did; left out if it never became Stable again).  *Stable*: at least one member
  runs and every running member is Stable in one generation.

:func:`ownership_intervals` and :func:`member_states` are what the timelines draw.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import attrs

from kgroup.sim.history import (
    Appended, FaultApplied, GroupTypeChanged, History, MemberStopped, OwnershipChanged, Processed,
    RollingRestartStep,
)
from kgroup.values import TopicPartition

__all__ = ["Interval", "RunMetrics", "member_states", "ownership_intervals", "percentile", "run_metrics",
           "stable_intervals"]


@attrs.frozen
class Interval:
    """``label`` (a member's name, or a state) held ``[start_ms, end_ms)`` on ``row`` (a partition or a
    member)."""

    row: str
    label: str
    start_ms: int
    end_ms: int


@attrs.frozen
class RunMetrics:
    rebalances: int
    unowned_partition_ms: int
    records_processed_twice: int
    recovery_ms: Tuple[int, ...]
    faults: int
    end_ms: int
    group_types: Tuple[str, ...] = ()

    @property
    def final_group_type(self) -> str:
        """The group type the run ended with (``""``: not recorded)."""
        return self.group_types[-1] if self.group_types else ""

    @property
    def unowned_partition_seconds(self) -> float:
        return self.unowned_partition_ms / 1000


def _end(history: History, end_ms: Optional[int]) -> int:
    return end_ms if end_ms is not None else max((e.at_ms for e in history.events), default=0)


def _partition_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _partitions_first_seen(history: History) -> Dict[TopicPartition, int]:
    first: Dict[TopicPartition, int] = {}
    for event in history.events:
        if type(event) is Appended:
            first.setdefault(event.partition, event.at_ms)
        elif type(event) is OwnershipChanged:
            for tp in event.owned:
                first.setdefault(tp, event.at_ms)
    return first


def ownership_intervals(history: History, end_ms: Optional[int] = None) -> List[Interval]:
    """Who owned each partition when: one interval per (partition, member) ownership, in time order;
    two may overlap (the classic protocol's overlaps)."""
    end = _end(history, end_ms)
    owned: Dict[str, frozenset] = {}
    since: Dict[Tuple[TopicPartition, str], int] = {}
    out: List[Interval] = []

    def close(tp: TopicPartition, member: str, at_ms: int) -> None:
        start = since.pop((tp, member))
        if at_ms > start:
            out.append(Interval(_partition_name(tp), member, start, at_ms))

    for event in history.events:
        kind = type(event)
        if kind is OwnershipChanged or kind is MemberStopped:
            now = frozenset() if kind is MemberStopped else event.owned
            before = owned.get(event.member, frozenset())
            for tp in sorted(before - now):
                close(tp, event.member, event.at_ms)
            for tp in sorted(now - before):
                since[(tp, event.member)] = event.at_ms
            owned[event.member] = now
    for tp, member in sorted(since):
        close(tp, member, end)
    return sorted(out, key=lambda i: (i.start_ms, i.row, i.label))


def member_states(history: History, end_ms: Optional[int] = None) -> List[Interval]:
    """Each member's state over time (``STOPPED`` after its process stopped)."""
    end = _end(history, end_ms)
    current: Dict[str, Tuple[str, int]] = {}
    out: List[Interval] = []
    for event in history.events:
        kind = type(event)
        if kind is OwnershipChanged or kind is MemberStopped:
            state = "STOPPED" if kind is MemberStopped else event.state
            previous = current.get(event.member)
            if previous is not None and previous[0] == state:
                continue
            if previous is not None and event.at_ms > previous[1]:
                out.append(Interval(event.member, previous[0], previous[1], event.at_ms))
            current[event.member] = (state, event.at_ms)
    for member, (state, start) in sorted(current.items()):
        if end > start:
            out.append(Interval(member, state, start, end))
    return sorted(out, key=lambda i: (i.row, i.start_ms))


def stable_intervals(history: History, end_ms: Optional[int] = None) -> List[Tuple[int, int, int]]:
    """``(start_ms, end_ms, generation)`` while the group was Stable (see the module's docstring)."""
    end = _end(history, end_ms)
    states: Dict[str, Tuple[str, int]] = {}
    out: List[Tuple[int, int, int]] = []
    opened: Optional[Tuple[int, int]] = None
    events = history.events
    for index, event in enumerate(events):
        kind = type(event)
        if kind is OwnershipChanged:
            states[event.member] = (event.state, event.generation)
        elif kind is MemberStopped:
            states.pop(event.member, None)
        else:
            continue
        if index + 1 < len(events) and events[index + 1].at_ms == event.at_ms:
            continue  # judge an instant once all of its changes are in
        generations = {g for s, g in states.values() if s == "STABLE"}
        stable = bool(states) and all(s == "STABLE" for s, _g in states.values()) and len(generations) == 1
        if stable and opened is None:
            opened = (event.at_ms, generations.pop())
        elif not stable and opened is not None:
            out.append((opened[0], event.at_ms, opened[1]))
            opened = None
    if opened is not None:
        out.append((opened[0], max(end, opened[0]), opened[1]))
    return out


def _recoveries(history: History, end: int) -> Tuple[int, ...]:
    # A rolling restart's steps disrupt the group as faults do: each is a start of its own (otherwise
    # the rollout's rebalances would be charged to whichever fault came before them).
    faults = sorted([e.at_ms for e in history.of(FaultApplied) if not e.fault.startswith("heal ")]
                    + [e.at_ms for e in history.of(RollingRestartStep)])
    stable = stable_intervals(history, end)
    out: List[int] = []
    for index, at_ms in enumerate(faults):
        window_end = faults[index + 1] if index + 1 < len(faults) else end
        # The first moment at or after the fault when the group was not Stable.
        unstable_at: Optional[int] = at_ms
        for start, stop, _g in stable:
            if start <= unstable_at < stop:  # type: ignore[operator]
                unstable_at = stop if stop < end else None
                break
        if unstable_at is None or unstable_at >= window_end:
            out.append(0)
            continue
        again = next((start for start, _stop, _g in stable if start >= unstable_at), None)
        if again is not None:
            out.append(again - at_ms)
    return tuple(out)


def _processed_twice(history: History) -> int:
    ranges: Dict[TopicPartition, List[Tuple[int, int]]] = {}
    for event in history.of(Processed):
        ranges.setdefault(event.partition, []).append((event.first_offset, event.end_offset))
    twice = 0
    for spans in ranges.values():
        total = sum(end - first for first, end in spans)
        distinct: Set[int] = set()
        for first, end in spans:
            distinct.update(range(first, end))
        twice += total - len(distinct)
    return twice


def _unowned_ms(history: History, end: int) -> int:
    owned: Dict[str, List[Tuple[int, int]]] = {}
    for interval in ownership_intervals(history, end):
        owned.setdefault(interval.row, []).append((interval.start_ms, interval.end_ms))
    total = 0
    for tp, first in _partitions_first_seen(history).items():
        covered, reached = 0, first
        for start, stop in sorted(owned.get(_partition_name(tp), ())):
            start, stop = max(start, reached), min(stop, end)
            if stop > start:
                covered += stop - start
                reached = stop
        total += max(0, end - first) - covered
    return total


def run_metrics(history: History, end_ms: Optional[int] = None) -> RunMetrics:
    """The metrics of one run; ``end_ms`` defaults to the last event's time (pass the run's simulated
    time)."""
    end = _end(history, end_ms)
    generations = {e.generation for e in history.of(OwnershipChanged) if e.generation > 0}
    faults = sum(not e.fault.startswith("heal ") for e in history.of(FaultApplied))
    return RunMetrics(rebalances=len(generations), unowned_partition_ms=_unowned_ms(history, end),
                      records_processed_twice=_processed_twice(history),
                      recovery_ms=_recoveries(history, end), faults=faults, end_ms=end,
                      group_types=tuple(e.new for e in history.of(GroupTypeChanged)))


def percentile(values: Sequence[float], q: float) -> Optional[float]:
    """The ``q``-th percentile (0-100) by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]
