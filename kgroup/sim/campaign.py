"""Many seeds of the simulator, in worker processes: the engine behind ``kgroup campaign`` and
``kgroup compare``.

The pool (:func:`run_jobs`) is the only concurrency of :mod:`kgroup.sim`; each run is one seed (or one
schedule with its seed) under one :class:`SimConfig`, alone in one process, deterministically, and
comes back as a small :class:`SeedOutcome` with its :class:`~kgroup.sim.metrics.RunMetrics`.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.pool import Pool
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import attrs

from kgroup.errors import ConfigError
from kgroup.sim.metrics import RunMetrics, run_metrics
from kgroup.sim.schedule import Schedule
from kgroup.sim.simulator import SimConfig, run

__all__ = ["CampaignInterrupted", "CampaignResult", "CampaignSummary", "Job", "SeedOutcome", "run_campaign",
           "run_jobs", "summary_table"]

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


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) while :func:`run_jobs` ran: every worker process is stopped by then.  ``result``
    holds the runs that finished, in the jobs' order; ``planned`` is how many there were."""

    def __init__(self, result: CampaignResult, planned: int) -> None:
        super().__init__(f"interrupted after {len(result.outcomes)} of {planned} runs")
        self.result = result
        self.planned = planned


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
    ``progress(done, total, failed)`` once before the first and after each.  The outcomes come back in
    the jobs' order.  Ctrl-C raises :class:`CampaignInterrupted` with the runs finished so far, after
    stopping the workers (they ignore SIGINT themselves, so only this process reports it)."""
    if workers is not None and workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    workers = workers or os.cpu_count() or 1
    started = time.perf_counter()
    outcomes: Dict[int, SeedOutcome] = {}
    failed = 0

    def collect(index: int, outcome: SeedOutcome) -> None:
        nonlocal failed
        outcomes[index] = outcome
        failed += not outcome.ok
        if progress is not None:
            progress(len(outcomes), len(jobs), failed)

    try:
        if progress is not None:
            progress(0, len(jobs), 0)
        if workers == 1:
            for index, job in enumerate(jobs):
                collect(index, run_one(job))
        else:
            with _pool(workers) as pool:
                # One job a chunk: a run takes tens of milliseconds or more, so the messages cost little,
                # and progress moves from the first run on (chunks of jobs / (workers x 8) kept a
                # 10,000-seed campaign silent for minutes).
                for index, outcome in pool.imap_unordered(_run_indexed, enumerate(jobs), chunksize=1):
                    collect(index, outcome)
    except KeyboardInterrupt:
        done = CampaignResult(tuple(outcomes[i] for i in sorted(outcomes)), time.perf_counter() - started,
                              workers)
        raise CampaignInterrupted(done, len(jobs)) from None
    return CampaignResult(tuple(outcomes[i] for i in range(len(jobs))), time.perf_counter() - started,
                          workers)


def _ignore_interrupts() -> None:
    """A pool worker's initializer: Ctrl-C reaches the whole process group, and the parent alone
    answers it (it terminates the pool), so a worker neither dies with a traceback nor reports."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _pool(workers: int) -> Pool:
    """A pool whose workers ignore SIGINT.

    While the workers are forked, SIGINT is blocked in this thread, so each worker starts with it held
    back until its initializer ignores it; and a Ctrl-C that meanwhile reaches another thread of this
    process (a library's, such as tqdm's monitor) is only recorded, then raised once the pool exists,
    so that the caller's handler can stop a whole pool, never half of one."""
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        return multiprocessing.Pool(workers, initializer=_ignore_interrupts)
    interrupted: List[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool = multiprocessing.Pool(workers, initializer=_ignore_interrupts)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if interrupted and callable(previous):
        try:
            previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
        except BaseException:
            pool.terminate()
            raise
    return pool


def _run_indexed(indexed: Tuple[int, Job]) -> Tuple[int, SeedOutcome]:
    index, job = indexed
    return index, run_one(job)


@attrs.frozen
class CampaignSummary:
    """What a campaign's summary reports, however it ran (a local pool, or Spark aggregating its rows:
    ``kgroup_spark.campaign``)."""

    #: assignor -> (seeds, faults, seeds with violations).
    per_assignor: Dict[str, Tuple[int, int, int]]
    cpu_s: float
    elapsed_s: float
    #: Processes (local) or Spark task slots that ran the seeds.
    workers: int
    config: Optional[SimConfig]
    coverage: Dict[str, int]
    where: str = "process(es)"

    @classmethod
    def of(cls, result: CampaignResult) -> "CampaignSummary":
        rows: Dict[str, Tuple[int, int, int]] = {}
        for outcome in result.outcomes:
            seeds, faults, violated = rows.get(outcome.assignor, (0, 0, 0))
            rows[outcome.assignor] = (seeds + 1, faults + outcome.faults, violated + (not outcome.ok))
        config = result.outcomes[0].config if result.outcomes else None
        return cls(rows, result.cpu_s, result.elapsed_s, result.workers, config, result.coverage())

    @property
    def seeds(self) -> int:
        return sum(row[0] for row in self.per_assignor.values())

    @property
    def faults(self) -> int:
        return sum(row[1] for row in self.per_assignor.values())

    @property
    def violated(self) -> int:
        return sum(row[2] for row in self.per_assignor.values())

    def format(self) -> str:
        lines = [f"{'assignor':<20} {'seeds':>7} {'faults':>8} {'violated':>9}"]
        for assignor, (seeds, faults, violated) in sorted(self.per_assignor.items()):
            lines.append(f"{assignor:<20} {seeds:>7} {faults:>8} {violated:>9}")
        total = self.seeds
        rate = total / self.elapsed_s if self.elapsed_s else 0.0
        lines.append(f"{'total':<20} {total:>7} {self.faults:>8} {self.violated:>9}")
        lines.append(f"{total} seeds in {self.elapsed_s:.1f} s ({rate:.1f} seeds/s on {self.workers} "
                     f"{self.where}, {rate / self.workers:.1f} seeds/s per {self.where.split('(')[0]})")
        if self.cpu_s > 0:
            # What a campaign buys per unit of CPU, however loaded the machine: faults exercised.
            lines.append(f"{self.cpu_s:.1f} CPU-seconds: {self.faults / self.cpu_s:.1f} faults per "
                         f"CPU-second, {total / self.cpu_s:.2f} seeds per CPU-second")
        if self.config is not None:
            config = self.config
            lines.append(f"shape: --members {config.members} --partitions {config.partitions} --duration-ms "
                         f"{config.duration_ms} --max-faults {config.max_faults}"
                         f"{' --eos' if config.transactional else ''} (kgroup simulate --seed N "
                         f"takes the same flags to replay a seed)")
        lines.append("coverage: " + ", ".join(f"{k} {v}" for k, v in sorted(self.coverage.items())))
        return "\n".join(lines)


def summary_table(result: CampaignResult) -> str:
    return CampaignSummary.of(result).format()
