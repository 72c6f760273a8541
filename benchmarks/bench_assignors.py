"""Ours vs kafka-python 3.0: same groups, same run, fresh and after one member leaves.

Only the small size runs by default (once, as a smoke test that also
checks our answers); the rest is marked slow.  Full run:
``python -m pytest benchmarks/bench_assignors.py --benchmark-enable -m "slow or not slow"``
(results: ``docs/benchmarks.md``).
"""
from __future__ import annotations

import gc

import pytest

from benchmarks._inputs import SIZES, SMALL, Size
from benchmarks._measure import (
    PRIOR_SIDE,
    SCENARIOS,
    SIDES,
    STRATEGIES,
    Stopwatch,
    prepare,
    remember_fresh,
    summarize,
)
from kgroup.testing.conformance import check_balance, check_topic_balance, check_validity

_SLOW_KAFKA_PYTHON = ("sticky", "cooperative-sticky")


def _rounds(strategy: str, side: str, size: Size) -> int:
    """Timed calls per case (pedantic mode, no calibration); the table reports the fastest.

    Everything but kafka-python's sticky assignors takes at most ~20 ms a
    call, so it gets 50 rounds (the machine is shared and noisy: the best
    of many is the steadiest number).  kafka-python's sticky and
    cooperative-sticky take ~2 ms at 10 members, ~150 ms at 100, ~1.5 s
    at 300 and 15-20 s at 1,000 x 10,000: 5 rounds at 100 members, 3 from
    300 up (about 3 minutes of the full run at the target size).
    """
    if side == "kafka-python" and strategy in _SLOW_KAFKA_PYTHON:
        if size.members >= 300:
            return 3
        if size.members >= 100:
            return 5
    return 50


def _cases():
    for size in SIZES:
        for strategy in STRATEGIES:
            # The peer first: its fresh answer is the starting point of both sides' "leave" cases.
            for side in sorted(SIDES, key=lambda side: side != PRIOR_SIDE):
                marks = () if size == SMALL else (pytest.mark.slow,)
                yield pytest.param(strategy, side, size, id=f"{strategy}-{side}-{size.label}", marks=marks)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("strategy, side, size", list(_cases()))
def test_assign(benchmark, measurements, strategy, side, size, scenario):
    case = prepare(strategy, side, scenario, size)
    watch = Stopwatch(case.call)
    benchmark.group = f"{strategy} {scenario} {size.label}"
    gc.collect()  # don't bill this case for the garbage of the ones before it
    benchmark.pedantic(watch, rounds=_rounds(strategy, side, size), iterations=1, warmup_rounds=0)
    measurement, result = summarize(case, watch)
    remember_fresh(case, result)
    measurements.append(measurement)
    benchmark.extra_info.update(balance=measurement.balance, moved=measurement.moved)

    assert sum(len(partitions) for partitions in result.values()) == size.partitions
    if side != "kgroup":
        return
    check_validity(case.partitions_per_topic, case.subscriptions, watch.last)
    if strategy == "range":
        check_topic_balance(case.partitions_per_topic, case.subscriptions, watch.last)
    else:
        check_balance(case.partitions_per_topic, case.subscriptions, watch.last)
    if scenario == "leave" and strategy in ("sticky", "cooperative-sticky"):
        assert measurement.moved == 0, "only the leaver's partitions may move"
