"""One measurement: a strategy, a side (kgroup or kafka-python), a scenario, a size.

Inputs are built before the clock starts; only the ``assign`` call is
timed.  A "leave" case starts from kafka-python's fresh assignment of the
same strategy and size, for *both* sides (so both get the same input),
drops one member and has the others claim what they own, as a rejoining
group would.  The fresh assignment is cached, so a session pays for each
fresh run once.  For range and round-robin both libraries' fresh answers
are identical anyway; for the sticky ones they differ, and starting each
side from its own answer would time the two on different inputs.
"""
from __future__ import annotations

import gc
import time
from typing import Callable, Mapping, Optional

import attrs

from benchmarks import _kafka_python as kp
from benchmarks._inputs import Size, after_leave, group
from kgroup.assignors import get_assignor
from kgroup.values import TopicPartition

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
SIDES = ("kgroup", "kafka-python")
SCENARIOS = ("fresh", "leave")
#: Whose fresh assignment every "leave" case starts from (both sides): the
#: peer's, so the peer runs exactly the rebalance its own group would see.
PRIOR_SIDE = "kafka-python"

Partitions = dict[str, list[TopicPartition]]


@attrs.frozen
class Case:
    strategy: str
    side: str
    scenario: str
    size: Size
    partitions_per_topic: Mapping[str, int]
    subscriptions: Mapping
    #: Each member's partitions before the change ("leave" only).
    previous: Optional[Partitions]
    #: Calls the assignor once; the raw answer goes through ``normalize``.
    call: Callable[[], Mapping]
    normalize: Callable[[Mapping], Partitions]


@attrs.frozen
class Measurement:
    strategy: str
    side: str
    scenario: str
    size: Size
    #: Fastest of ``rounds`` timed calls.
    best_s: float
    rounds: int
    #: Largest minus smallest member size.
    balance: int
    #: Partitions that left a member still in the group ("leave" only).
    moved: Optional[int]


def _ours_normalize(result: Mapping) -> Partitions:
    return {member: list(a.partitions) for member, a in result.items()}


def _build(strategy: str, side: str, partitions_per_topic, subscriptions) -> tuple[Callable, Callable]:
    if side == "kgroup":
        assignor = get_assignor(strategy)
        return (lambda: assignor.assign(partitions_per_topic, subscriptions)), _ours_normalize
    cluster = kp.cluster_metadata(partitions_per_topic)
    members = kp.join_group_members(strategy, subscriptions)
    assignor = kp.new_assignor(strategy)
    return (lambda: assignor.assign(cluster, members)), kp.as_partitions


_fresh: dict[tuple, Partitions] = {}


def fresh_assignment(strategy: str, side: str, size: Size) -> Partitions:
    """The side's own fresh assignment of ``size`` (computed once per process)."""
    key = (strategy, side, size)
    if key not in _fresh:
        partitions_per_topic, subscriptions = group(size)
        call, normalize = _build(strategy, side, partitions_per_topic, subscriptions)
        _fresh[key] = normalize(call())
    return _fresh[key]


def remember_fresh(case: Case, result: Partitions) -> None:
    """Let a later "leave" case start from a fresh result already computed."""
    if case.scenario == "fresh":
        _fresh.setdefault((case.strategy, case.side, case.size), result)


def prepare(strategy: str, side: str, scenario: str, size: Size) -> Case:
    partitions_per_topic, subscriptions = group(size)
    previous = None
    if scenario == "leave":
        previous = fresh_assignment(strategy, PRIOR_SIDE, size)
        subscriptions = after_leave(subscriptions, previous)
    call, normalize = _build(strategy, side, partitions_per_topic, subscriptions)
    return Case(strategy, side, scenario, size, partitions_per_topic, subscriptions, previous, call,
                normalize)


def balance_of(result: Partitions) -> int:
    sizes = [len(partitions) for partitions in result.values()]
    return max(sizes) - min(sizes) if sizes else 0


def moved_count(previous: Partitions, result: Partitions) -> int:
    owner = {tp: member for member, partitions in result.items() for tp in partitions}
    return sum(
        1
        for member, partitions in previous.items()
        if member in result
        for tp in partitions
        if owner.get(tp) != member
    )


class Stopwatch:
    """Wraps a case's call, remembering each duration and the last answer."""

    def __init__(self, call: Callable[[], Mapping]) -> None:
        self.call = call
        self.durations_s: list[float] = []
        self.last = None

    def __call__(self):
        start = time.perf_counter()
        self.last = self.call()
        self.durations_s.append(time.perf_counter() - start)
        return self.last


def summarize(case: Case, watch: Stopwatch) -> tuple[Measurement, Partitions]:
    result = case.normalize(watch.last)
    moved = moved_count(case.previous, result) if case.previous is not None else None
    measurement = Measurement(
        strategy=case.strategy,
        side=case.side,
        scenario=case.scenario,
        size=case.size,
        best_s=min(watch.durations_s),
        rounds=len(watch.durations_s),
        balance=balance_of(result),
        moved=moved,
    )
    return measurement, result


def measure(strategy: str, side: str, scenario: str, size: Size,
            rounds: int) -> tuple[Measurement, Partitions]:
    """Time ``rounds`` calls without pytest (the ``python -m benchmarks.run`` path)."""
    case = prepare(strategy, side, scenario, size)
    watch = Stopwatch(case.call)
    gc.collect()  # as the pytest path does: no case pays for the garbage of the ones before it
    for _ in range(rounds):
        watch()
    measurement, result = summarize(case, watch)
    remember_fresh(case, result)
    return measurement, result
