"""Simulator campaigns on Spark (``kgroup campaign --spark``): seeds spread over executors.

A local campaign (``kgroup.sim.campaign``) runs seeds in a process pool and keeps every
``SeedOutcome``; a million seeds outgrow one machine.  Here the seeds are split into many Spark
partitions (so progress moves task by task), each executor runs its seeds with ``mapPartitions``
and reduces each to one small row (seed, assignor, faults, violations, checks failed, coverage,
the whole-run digest, CPU seconds, three metrics: about 1 KB, where a verdict pickles to about
1 MB), the rows are written to Parquet, and the summary is aggregated by Spark from that Parquet:
the same table a local campaign prints (``CampaignSummary``).  Failing seeds come back to the
driver, which re-runs and shrinks them as a local campaign does.  A seed's digest is the one a
local run of that seed gives (the simulator is deterministic).

Executors run kgroup in the driver's Python (``kgroup_spark.register`` does the same for the data
source): on a real cluster, install the same kgroup on every worker (docs/simulator.md, *Campaigns
on Spark*).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

import attrs

from kgroup.sim.campaign import CampaignSummary
from kgroup.sim.metrics import run_metrics
from kgroup.sim.simulator import SimConfig, run

__all__ = ["CAMPAIGN_ROW_FIELDS", "SparkCampaign", "campaign_rows", "run_campaign_on_spark"]

#: The Parquet row of one seed (Spark DDL).  Violations keep the first few lines (a local campaign
#: prints three per failing seed; the driver re-runs a failing seed for the rest).
CAMPAIGN_ROW_FIELDS = (
    "seed BIGINT, assignor STRING, faults INT, violations ARRAY<STRING>, checks_failed ARRAY<STRING>, "
    "coverage MAP<STRING, INT>, digest STRING, cpu_s DOUBLE, rebalances INT, unowned_partition_ms BIGINT, "
    "records_processed_twice INT"
)
_VIOLATIONS_KEPT = 5
#: Seeds per Spark partition at most: a task is the unit progress moves by.
_SEEDS_PER_SLICE = 25


def campaign_rows(seeds: Iterable[int], config: SimConfig) -> Iterator[Tuple[Any, ...]]:
    """One row per seed, in the order of :data:`CAMPAIGN_ROW_FIELDS` (runs on an executor)."""
    for seed in seeds:
        started = time.process_time()
        verdict = run(seed, config)
        metrics = run_metrics(verdict.history, verdict.simulated_ms)
        yield (seed, verdict.assignor, len(verdict.schedule.faults),
               [str(v) for v in verdict.violations[:_VIOLATIONS_KEPT]], sorted(verdict.checks_failed()),
               dict(verdict.coverage), verdict.digest(), time.process_time() - started, metrics.rebalances,
               metrics.unowned_partition_ms, metrics.records_processed_twice)


@attrs.frozen
class SparkCampaign:
    summary: CampaignSummary
    #: Rows of the seeds that violated an invariant (first ``show`` by seed): seed, assignor,
    #: checks failed, violations.
    failed: Tuple[Tuple[int, str, Tuple[str, ...], Tuple[str, ...]], ...]
    parquet_path: str


def run_campaign_on_spark(spark: Any, seeds: range, config: SimConfig, parquet_path: str, show: int = 5,
                          progress: Optional[Callable[[int, int, int], None]] = None) -> SparkCampaign:
    """Run every seed on ``spark``'s executors, write one row per seed to ``parquet_path`` (replaced
    if it exists), and aggregate the summary from it.  ``progress(done, total, violated)`` is called
    from a watcher thread as tasks finish.  Interrupting (KeyboardInterrupt) cancels the Spark job."""
    from pyspark.sql import functions as F

    from kgroup_spark.datasource import use_the_drivers_python_for_workers

    context = spark.sparkContext
    use_the_drivers_python_for_workers(context)
    total = len(seeds)
    slices = max(1, min(total, max(context.defaultParallelism * 4, -(-total // _SEEDS_PER_SLICE))))
    done = context.accumulator(0)
    violated = context.accumulator(0)

    def run_slice(slice_seeds: Iterable[int]) -> Iterator[Tuple[Any, ...]]:
        rows = list(campaign_rows(slice_seeds, config))
        done.add(len(rows))
        violated.add(sum(1 for row in rows if row[3]))
        return iter(rows)

    frame = spark.createDataFrame(context.parallelize(seeds, slices).mapPartitions(run_slice),
                                  CAMPAIGN_ROW_FIELDS)
    started = time.perf_counter()
    watcher = _ProgressWatcher(progress, total, done, violated)
    watcher.start()
    try:
        frame.write.mode("overwrite").parquet(parquet_path)
    except KeyboardInterrupt:
        context.cancelAllJobs()
        raise
    finally:
        watcher.stop()
    elapsed_s = time.perf_counter() - started
    rows = spark.read.parquet(parquet_path)
    per_assignor = {
        row["assignor"]: (row["seeds"], int(row["faults"]), int(row["violated"]))
        for row in rows.groupBy("assignor").agg(
            F.count("*").alias("seeds"), F.sum("faults").alias("faults"),
            F.sum((F.size("violations") > 0).cast("int")).alias("violated")).collect()}
    cpu_s = rows.agg(F.sum("cpu_s")).first()[0] or 0.0
    coverage_rows = rows.select(F.explode("coverage")).groupBy("key").agg(F.sum("value").alias("total"))
    coverage = {row["key"]: int(row["total"]) for row in coverage_rows.collect()}
    failed = tuple(
        (row["seed"], row["assignor"], tuple(row["checks_failed"]), tuple(row["violations"]))
        for row in rows.where(F.size("violations") > 0).orderBy("seed").limit(show).collect())
    summary = CampaignSummary(per_assignor, cpu_s, elapsed_s, context.defaultParallelism, config, coverage,
                              where="Spark task slot(s)")
    return SparkCampaign(summary, failed, parquet_path)


class _ProgressWatcher:
    """Reports the accumulators' counts while the job runs (they grow as tasks finish)."""

    def __init__(self, progress: Optional[Callable[[int, int, int], None]], total: int, done: Any,
                 violated: Any) -> None:
        self._progress = progress
        self._total = total
        self._done = done
        self._violated = violated
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="kgroup-campaign-progress", daemon=True)

    def start(self) -> None:
        if self._progress is not None:
            self._progress(0, self._total, 0)
            self._thread.start()

    def _watch(self) -> None:
        reported: List[int] = [0]
        while not self._stopped.wait(0.2):
            self._report(reported)

    def _report(self, reported: List[int]) -> None:
        assert self._progress is not None
        done = self._done.value
        if done != reported[0]:
            reported[0] = done
            self._progress(done, self._total, self._violated.value)

    def stop(self) -> None:
        if self._progress is None:
            return
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()
        self._report([-1])
