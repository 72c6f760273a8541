"""Many seeds of the simulator, in worker processes: the engine behind ``kgroup campaign`` and
``kgroup compare``.

The pool (:func:`run_jobs`) is the only concurrency of :mod:`kgroup.sim`; each run is one seed (or one
schedule with its seed) under one :class:`SimConfig`, alone in one process, deterministically, and
comes back as a small :class:`SeedOutcome` with its :class:`~kgroup.sim.metrics.RunMetrics`.
"""
from __future__ import annotations

import multiprocessing
import os
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import attrs

from kgroup.sim.metrics import RunMetrics, run_metrics
from kgroup.sim.schedule import Schedule
from kgroup.sim.simulator import SimConfig, run

__all__ = ["CampaignResult", "Job", "SeedOutcome", "run_campaign", "run_jobs", "summary_table"]

#: One run: a seed (its own schedule) or a schedule (replayed with its seed's streams), and the config.
Job = Tuple[Union[int, Schedule], SimConfig]


@attrs.frozen
class SeedOutcome:
    seed: int
    assignor: str
    faults: int
    violations: Tuple[str, ...]
    checks_failed: Tuple[str, ...]
    coverage: Tuple[Tuple[str, int], ...]
    config: SimConfig
    metrics: RunMetrics
    #: CPU time the run took in its process (``time.process_time``: a shared machine does not hide it).
    cpu_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations


@attrs.frozen
class CampaignResult:
    outcomes: Tuple[SeedOutcome, ...]
    elapsed_s: float
    workers: int

    @property
    def failed(self) -> List[SeedOutcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def cpu_s(self) -> float:
        """CPU-seconds of the runs themselves, summed over the processes that ran them."""
        return sum(o.cpu_s for o in self.outcomes)

    @property
    def faults(self) -> int:
        return sum(o.faults for o in self.outcomes)

    def coverage(self) -> Dict[str, int]:
        totals: Dict[str, int] = {}
        for outcome in self.outcomes:
            for key, count in outcome.coverage:
                totals[key] = totals.get(key, 0) + count
        return totals


def run_one(job: Job) -> SeedOutcome:
    seed_or_schedule, config = job
    started = time.process_time()
    verdict = run(seed_or_schedule, config)
    metrics = run_metrics(verdict.history, verdict.simulated_ms)
    return SeedOutcome(verdict.seed, verdict.assignor, len(verdict.schedule.faults),
                       tuple(str(v) for v in verdict.violations), tuple(sorted(verdict.checks_failed())),
                       tuple(sorted(verdict.coverage.items())), config, metrics,
                       time.process_time() - started)


def run_campaign(seeds: Iterable[int], config: SimConfig, workers: Optional[int] = None,
                 progress: Optional[Callable[[int, int, int], None]] = None) -> CampaignResult:
    """Run every seed; ``progress(done, total, failed)`` after each."""
    return run_jobs([(seed, config) for seed in seeds], workers, progress)


def run_jobs(jobs: Sequence[Job], workers: Optional[int] = None,
             progress: Optional[Callable[[int, int, int], None]] = None) -> CampaignResult:
    """Run every job on ``workers`` processes (default ``os.cpu_count()``; 1 runs them here);
    ``progress(done, total, failed)`` after each.  The outcomes come back in the jobs' order."""
    workers = max(1, workers or os.cpu_count() or 1)
    started = time.perf_counter()
    outcomes: Dict[int, SeedOutcome] = {}
    failed = 0

    def collect(index: int, outcome: SeedOutcome) -> None:
        nonlocal failed
        outcomes[index] = outcome
        failed += not outcome.ok
        if progress is not None:
            progress(len(outcomes), len(jobs), failed)

    if workers == 1:
        for index, job in enumerate(jobs):
            collect(index, run_one(job))
    else:
        with multiprocessing.Pool(workers) as pool:
            chunksize = max(1, len(jobs) // (workers * 8))
            for index, outcome in pool.imap_unordered(_run_indexed, enumerate(jobs), chunksize=chunksize):
                collect(index, outcome)
    return CampaignResult(tuple(outcomes[i] for i in range(len(jobs))), time.perf_counter() - started,
                          workers)


def _run_indexed(indexed: Tuple[int, Job]) -> Tuple[int, SeedOutcome]:
    index, job = indexed
    return index, run_one(job)


def summary_table(result: CampaignResult) -> str:
    rows: Dict[str, List[int]] = {}
    for outcome in result.outcomes:
        row = rows.setdefault(outcome.assignor, [0, 0, 0])
        row[0] += 1
        row[1] += outcome.faults
        row[2] += not outcome.ok
    lines = [f"{'assignor':<20} {'seeds':>7} {'faults':>8} {'violated':>9}"]
    for assignor, (seeds, faults, violated) in sorted(rows.items()):
        lines.append(f"{assignor:<20} {seeds:>7} {faults:>8} {violated:>9}")
    total = len(result.outcomes)
    rate = total / result.elapsed_s if result.elapsed_s else 0.0
    lines.append(f"{'total':<20} {total:>7} {sum(r[1] for r in rows.values()):>8} {len(result.failed):>9}")
    lines.append(f"{total} seeds in {result.elapsed_s:.1f} s ({rate:.1f} seeds/s on {result.workers} "
                 f"process(es), {rate / result.workers:.1f} seeds/s per process)")
    cpu_s = result.cpu_s
    if cpu_s > 0:
        # What a campaign buys per unit of CPU, however loaded the machine: faults exercised.
        lines.append(f"{cpu_s:.1f} CPU-seconds: {result.faults / cpu_s:.1f} faults per CPU-second, "
                     f"{total / cpu_s:.2f} seeds per CPU-second")
    if result.outcomes:
        config = result.outcomes[0].config
        lines.append(f"shape: --members {config.members} --partitions {config.partitions} --duration-ms "
                     f"{config.duration_ms} --max-faults {config.max_faults} (kgroup simulate --seed N takes "
                     f"the same flags to replay a seed)")
    lines.append("coverage: " + ", ".join(f"{k} {v}" for k, v in sorted(result.coverage().items())))
    return "\n".join(lines)
