"""Seeds of the simulator hold every invariant: 150 in the default run, 10,000 with ``-m slow``.

A failing seed replays exactly: ``kgroup simulate --seed N --members 3 --partitions 6 --duration-ms 10000
--max-faults 5`` (it prints the violations and the shrunk schedule).
"""
import os

import pytest

import attrs

from kgroup.sim import SimConfig, run
from kgroup.sim.faults import DRAWN_FAULT_KINDS
from kgroup.sim.schedule import generate_schedule
from kgroup.sim.simulator import ASSIGNORS
from kgroup.sim.campaign import run_campaign, summary_table

#: Small groups and short schedules, so a few hundred seeds fit the default run (about 0.3 s a seed).
DEFAULT_CONFIG = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5)
DEFAULT_SEEDS = 150
CHUNK = 25
CAMPAIGN_SEEDS = 10_000


@pytest.mark.parametrize("first_seed", range(0, DEFAULT_SEEDS, CHUNK))
def test_seeds_hold_every_invariant(first_seed):
    failed = [v for v in (run(seed, DEFAULT_CONFIG) for seed in range(first_seed, first_seed + CHUNK))
              if not v.ok]
    assert not failed, "\n".join(v.describe() + "\n" + v.schedule.to_text() for v in failed)


def test_the_default_seeds_exercise_every_fault_and_assignor():
    kinds = {f.kind for seed in range(DEFAULT_SEEDS)
             for f in generate_schedule(seed, DEFAULT_CONFIG.fault_plan()).faults}
    assert kinds == set(DRAWN_FAULT_KINDS) - {"bounce"}  # bounces are the static members' fault
    assert {run(seed, attrs.evolve(DEFAULT_CONFIG, duration_ms=1, faults="none")).assignor
            for seed in range(20)} == set(ASSIGNORS)


@pytest.mark.slow
def test_ten_thousand_seeds(capsys):
    result = run_campaign(range(CAMPAIGN_SEEDS), DEFAULT_CONFIG, os.cpu_count())
    with capsys.disabled():
        print("\n" + summary_table(result))
    assert not result.failed, "\n".join(f"seed {o.seed}: {o.violations[:3]}" for o in result.failed[:10])


@pytest.mark.slow
def test_five_members_twelve_partitions_sixty_seconds():
    """The issue's throughput shape, 100 seeds (docs/simulator.md has the measured rate)."""
    result = run_campaign(range(100), SimConfig(), os.cpu_count())
    assert not result.failed, "\n".join(f"seed {o.seed}: {o.violations[:3]}" for o in result.failed[:10])
