"""Shrinking a failing schedule: delta debugging (Zeller's ddmin) over its faults, then each fault
made smaller by its own kind.

A candidate still fails when a run of it (same seed, so the same application,
producer and network streams) reports a violation of one of the checks the
original run failed.  The result is 1-minimal: removing any single fault makes
the run pass.  Then each remaining fault is replaced by the smallest version its
kind offers (:meth:`~kgroup.sim.faults.FaultKind.shrink`: a shorter duration, a
smaller value) that still fails, and the faults are removed again if that made one
of them needless; until nothing changes or the runs run out.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import attrs

from kgroup.sim.schedule import Fault, Schedule
from kgroup.sim.simulator import SimConfig, Verdict, run

__all__ = ["ShrinkResult", "shrink"]


@attrs.frozen
class ShrinkResult:
    original: Schedule
    minimal: Schedule
    verdict: Verdict
    runs: int


def shrink(verdict: Verdict, config: Optional[SimConfig] = None, max_runs: int = 200,
           runner: Callable[[Schedule, SimConfig], Verdict] = run) -> ShrinkResult:
    """The smallest sub-schedule of ``verdict.schedule`` found that still fails one of its checks,
    with each of its faults as small as its kind could make it."""
    config = config or verdict.config
    checks = verdict.checks_failed()
    runs = 0
    last_failing = verdict

    def fails(faults: Sequence[Fault]) -> bool:
        nonlocal runs, last_failing
        runs += 1
        candidate = runner(verdict.schedule.with_faults(faults), config)
        if candidate.checks_failed() & checks:
            last_failing = candidate
            return True
        return False

    def remove_faults(faults: List[Fault]) -> List[Fault]:
        """ddmin: the complements of ever smaller chunks, while one still fails."""
        chunks = 2
        while len(faults) >= 2 and runs < max_runs:
            size = max(1, len(faults) // chunks)
            parts = [faults[i:i + size] for i in range(0, len(faults), size)]
            reduced = False
            for index in range(len(parts)):
                complement = [f for j, part in enumerate(parts) if j != index for f in part]
                if runs < max_runs and fails(complement):
                    faults, chunks, reduced = complement, max(chunks - 1, 2), True
                    break
            if not reduced:
                if size == 1:
                    break
                chunks = min(len(faults), chunks * 2)
        if len(faults) == 1 and runs < max_runs and fails([]):
            faults = []
        return faults

    def shrink_each(faults: List[Fault]) -> bool:
        """Each fault replaced by the first smaller version of it that still fails, again and again."""
        shrunk = False
        for index in range(len(faults)):
            smaller = True
            while smaller and runs < max_runs:
                smaller = False
                for candidate in faults[index].fault_kind.shrink(faults[index]):
                    trial = faults[:index] + [candidate] + faults[index + 1:]
                    if runs < max_runs and fails(trial):
                        faults[index], smaller, shrunk = candidate, True, True
                        break
        return shrunk

    faults = remove_faults(list(verdict.schedule.faults))
    while runs < max_runs and shrink_each(faults):
        faults = remove_faults(faults)
    return ShrinkResult(verdict.schedule, verdict.schedule.with_faults(faults), last_failing, runs)
