"""Determinism, the schedule format, and shrinking."""
import hashlib
import os
import subprocess
import sys

import pytest

from kgroup.sim import Fault, Schedule, SimConfig, parse_schedule, run
from kgroup.sim.schedule import ScheduleFormatError
from kgroup.sim.shrink import shrink

import sim_planted_bugs as planted_bugs

SMALL = SimConfig(members=3, partitions=6, duration_ms=12_000, max_faults=6)


def test_the_same_seed_replays_bit_for_bit():
    first, second = run(7, SMALL), run(7, SMALL)
    assert first.history.format() == second.history.format()
    assert first.coverage == second.coverage and len(first.history) > 1_000


def test_replay_does_not_depend_on_the_hash_seed():
    code = ("import hashlib; from kgroup.sim import SimConfig, run; "
            "v = run(3, SimConfig(members=3, partitions=6, duration_ms=8_000)); "
            "print(hashlib.sha256(v.history.format().encode()).hexdigest())")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(__file__)))}
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**env, "PYTHONHASHSEED": str(h)}).stdout for h in (0, 1, 2)}
    assert len(digests) == 1


def test_removing_a_fault_reshuffles_nothing_before_it_nor_the_other_faults():
    verdict = run(1, SMALL)
    faults = verdict.schedule.faults
    assert len(faults) >= 3
    index = len(faults) // 2
    removed = faults[index]
    shorter = run(verdict.schedule.without(index), SMALL)
    assert shorter.schedule.faults == faults[:index] + faults[index + 1:]
    before = [e for e in verdict.history.events if e.at_ms < removed.at_ms]
    assert [e for e in shorter.history.events if e.at_ms < removed.at_ms] == before
    # The applications' behaviour comes from their own streams, whatever the faults.
    assert hashlib.sha256(str(before).encode()).digest()


def test_a_schedule_prints_and_parses_back():
    schedule = Schedule((Fault(4200, "crash", "m1", 800),
                         Fault(5000, "partition", "m2>b1", 1500),
                         Fault(7000, "lossy", "m3-b2", 2000, 30),
                         Fault(9000, "add_partitions", "events", 0, 2)),
                        seed=12)
    text = schedule.to_text()
    assert "  4200 ms  crash m1 for 800 ms" in text and "value 30" in text
    assert parse_schedule(text) == schedule
    assert parse_schedule("# a comment\n\n 100 ms  join j0  # joins\n").faults == (Fault(100, "join", "j0"),)
    for seed in range(20):
        generated = run(seed, SimConfig(members=2, partitions=2, duration_ms=1, faults="none")).schedule
        assert parse_schedule(generated.to_text()) == generated


def test_a_bad_schedule_line_is_refused():
    with pytest.raises(ScheduleFormatError, match="line 2"):
        parse_schedule("100 ms crash m0\nsoon crash m1\n")
    with pytest.raises(ScheduleFormatError, match="unknown fault kind"):
        parse_schedule("100 ms explode m0\n")


def test_shrinking_reduces_a_failing_schedule_to_a_minimal_one():
    config = SimConfig(members=3, partitions=6, duration_ms=12_000, processing_ms_per_record=20)
    with planted_bugs.commits_before_processing():
        verdict = run(12, config)
        assert "lost-write" in verdict.checks_failed() and len(verdict.schedule.faults) >= 3
        result = shrink(verdict)
        assert 1 <= len(result.minimal.faults) < len(verdict.schedule.faults)
        assert "lost-write" in run(result.minimal, config).checks_failed()
        for index in range(len(result.minimal.faults)):  # 1-minimal
            assert "lost-write" not in run(result.minimal.without(index), config).checks_failed()
