"""Simulator throughput at issue 13's shape: 5 members, 12 partitions, 60 simulated seconds a seed.

There is no peer to compare with in the same run (no Kafka client library ships a simulator); the
figure is seeds per CPU-second on one process (``time.process_time``: a shared machine does not hide
it), ``extra_info["seeds_per_cpu_s"]``; issue 28's goal is 5.  Before/after comparisons of
a speed-up also need ``python -m benchmarks.sim_digests`` to show nothing simulated changed.

    python -m pytest benchmarks/bench_sim.py --benchmark-enable -m "slow or not slow"
"""
import time

import pytest

from kgroup.sim import SimConfig, run

ISSUE_SHAPE = SimConfig(members=5, partitions=12, duration_ms=60_000)


def _run_seeds(count: int) -> int:
    return sum(run(seed, ISSUE_SHAPE).ok for seed in range(count))


def _measure(benchmark, count: int) -> None:
    started = time.process_time()
    assert benchmark.pedantic(_run_seeds, args=(count,), rounds=1, iterations=1) == count
    benchmark.extra_info["seeds_per_cpu_s"] = round(count / (time.process_time() - started), 2)


def test_sim_one_seed_of_the_issue_shape(benchmark):
    _measure(benchmark, 1)


@pytest.mark.slow
def test_sim_twenty_seeds_of_the_issue_shape(benchmark):
    _measure(benchmark, 20)


def test_sim_cpu_script_measures_the_issue_shape_without_a_data_path(tmp_path):
    """``python -m benchmarks.sim_cpu --shape issue-no-data``: the floor of the issue's shape (no
    producers) as the script measures it, one seed, in its own subprocess."""
    import os

    from benchmarks import sim_cpu

    assert sim_cpu.SHAPES["issue-no-data"][-1] == 0  # no producers
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rate, fault_rate, faults, cpu_s, violated = sim_cpu._round(here, sim_cpu.SHAPES["issue-no-data"], 0, 1)
    assert float(rate) > 0 and float(cpu_s) > 0 and int(faults) >= 0 and violated == "0"
