"""KIP-848's server-side ``uniform`` assignor vs kgroup's client-side ``sticky``, same input, same run.

Two scenarios per size, identical subscriptions, and one at the target size with differing ones:

* **fresh**: nobody owns anything yet;
* **join**: one member joins a group that holds the ``uniform`` fresh assignment (both sides
  start from that same assignment: ``uniform`` reads it as each member's current target
  partitions, ``sticky`` as each member's owned partitions of generation 1);
* **mixed**: fresh, member ``i`` subscribing to every topic ``t`` with ``(t + i) % 3 != 0`` (three
  overlapping subscriptions: ``uniform``'s heterogeneous path, ``sticky``'s general one).

Only the ``assign`` call is timed (inputs are built beforehand, garbage collected before each
case).  1,000 members x 10,000 partitions runs in the default test run (once per case, timing
disabled, as a smoke test that also checks both answers); 2,000 x 1,000,000 is marked slow.
Full run, with the table of times and the ratio uniform / sticky at the end::

    python -m pytest benchmarks/bench_server_assignors.py --benchmark-enable -m "slow or not slow"
"""
from __future__ import annotations

import functools
import gc
import time
from typing import Callable, Mapping

import attrs
import pytest

from benchmarks._inputs import Size
from kgroup.assignors.sticky import StickyAssignor
from kgroup.assignors.server_base import AssignmentMember
from kgroup.assignors.uniform import UniformAssignor
from kgroup.values import Subscription, TopicPartition

#: The issue's size for server assignors: 1,000 members x 10,000 partitions (10 topics x 1,000).
TARGET = Size(1000, 10, 1000)
#: KIP-848's scale claim: 2,000 members x 1,000,000 partitions (100 topics x 10,000).
LARGE = Size(2000, 100, 10_000)
SIDES = ("uniform", "sticky")
SCENARIOS = ("fresh", "join", "mixed")
NEWCOMER = "consumer-99999"

Assigned = dict[str, frozenset[TopicPartition]]


@functools.lru_cache(maxsize=1)
def _group(size: Size) -> tuple[dict[str, int], tuple[str, ...], tuple[str, ...]]:
    partitions_per_topic = {f"topic-{t:03d}": size.partitions_per_topic for t in range(size.topics)}
    members = tuple(f"consumer-{m:05d}" for m in range(size.members))
    return partitions_per_topic, tuple(partitions_per_topic), members


@functools.lru_cache(maxsize=1)
def _uniform_fresh(size: Size) -> Assigned:
    """Where every "join" case starts: uniform's fresh answer (10 partitions per member, balanced)."""
    partitions_per_topic, topics, members = _group(size)
    return UniformAssignor().assign({m: AssignmentMember(m, topics) for m in members}, partitions_per_topic)


def _call(side: str, scenario: str, size: Size) -> Callable[[], Assigned]:
    """The timed call of one case, its input built here, before the clock starts."""
    partitions_per_topic, topics, members = _group(size)
    previous: Mapping[str, frozenset[TopicPartition]] = (
        _uniform_fresh(size) if scenario == "join" else {})
    ids = members + ((NEWCOMER,) if scenario == "join" else ())
    topics_of = {m: _mixed_topics(topics, index) if scenario == "mixed" else topics
                 for index, m in enumerate(ids)}
    if side == "uniform":
        uniform = UniformAssignor()
        assignment_members = {m: AssignmentMember(m, topics_of[m], previous.get(m, frozenset())) for m in ids}
        return lambda: uniform.assign(assignment_members, partitions_per_topic)
    sticky = StickyAssignor()
    subscriptions = {
        m: Subscription(topics, owned_partitions=sorted(previous[m]), generation_id=1) if m in previous
        else Subscription(topics_of[m]) for m in ids}

    def assign_sticky() -> Assigned:
        return {m: frozenset(a.partitions)
                for m, a in sticky.assign(partitions_per_topic, subscriptions).items()}
    return assign_sticky


def _mixed_topics(topics: tuple[str, ...], member_index: int) -> tuple[str, ...]:
    """Two thirds of the topics, three overlapping subscriptions across the group."""
    return tuple(topic for t, topic in enumerate(topics) if (t + member_index) % 3 != 0)


def _check(result: Assigned, scenario: str, size: Size) -> None:
    """Every partition once, balanced, each to a subscriber; after a join only the newcomer's share
    moved."""
    assert sum(len(p) for p in result.values()) == size.partitions
    assert len(frozenset().union(*result.values())) == size.partitions
    sizes = [len(p) for p in result.values()]
    assert max(sizes) - min(sizes) <= 1
    if scenario == "mixed":
        _, topics, members = _group(size)
        for index, member in enumerate(members):
            assert {tp.topic for tp in result[member]} <= set(_mixed_topics(topics, index))
    if scenario == "join":
        previous = _uniform_fresh(size)
        moved = sum(len(previous[m] - result[m]) for m in previous)
        assert moved == len(result[NEWCOMER]), "only the newcomer's partitions may move"


@attrs.define
class _Stopwatch:
    call: Callable[[], Assigned]
    best_s: float = float("inf")
    rounds: int = 0
    last: Assigned = attrs.field(factory=dict)

    def __call__(self) -> None:
        start = time.perf_counter()
        self.last = self.call()
        self.best_s = min(self.best_s, time.perf_counter() - start)
        self.rounds += 1


def _rounds(size: Size) -> int:
    """Best of 20 at the target size (a few ms to ~100 ms a call), of 3 at a million partitions."""
    return 3 if size == LARGE else 20


def _cases():
    for size, marks in ((TARGET, ()), (LARGE, (pytest.mark.slow,))):
        for scenario in SCENARIOS if size == TARGET else ("fresh", "join"):
            for side in SIDES:
                yield pytest.param(side, scenario, size, id=f"{side}-{scenario}-{size.label}", marks=marks)


@pytest.mark.parametrize("side, scenario, size", list(_cases()))
def test_server_assignor(benchmark, server_assignor_times, side, scenario, size):
    watch = _Stopwatch(_call(side, scenario, size))
    benchmark.group = f"server assignors {scenario} {size.label}"
    gc.collect()
    benchmark.pedantic(watch, rounds=_rounds(size), iterations=1, warmup_rounds=0)
    _check(watch.last, scenario, size)
    server_assignor_times[side, scenario, size.label] = (watch.best_s, watch.rounds)
