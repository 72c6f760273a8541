"""Simulator throughput at issue 13's shape, and how it moves with what is simulated.

    python -m benchmarks.sim_throughput [seeds]     # default 20 seeds a row, one process

Prints a markdown table: seeds per CPU-second (``time.process_time``, so a loaded machine does not
hide the figure), scheduler instants a seed and CPU microseconds an instant for the default workload,
without faults, with sparser producers, with longer heartbeats, and both.
"""
from __future__ import annotations

import sys
import time
from typing import List, Tuple

import attrs

from kgroup.sim import SimConfig, run
from kgroup.testing.scheduler import EventScheduler

ISSUE_SHAPE = SimConfig(members=5, partitions=12, duration_ms=60_000)
ROWS: List[Tuple[str, SimConfig]] = [
    ("the defaults (heartbeat 200 ms, session 1 s, 2 producers x 5 records every 100 ms)", ISSUE_SHAPE),
    ("no faults", attrs.evolve(ISSUE_SHAPE, faults="none")),
    ("producers every 1,000 ms", attrs.evolve(ISSUE_SHAPE, produce_interval_ms=1_000)),
    ("heartbeat 1,000 ms, session 5 s", attrs.evolve(ISSUE_SHAPE, heartbeat_interval_ms=1_000,
                                                     session_timeout_ms=5_000)),
    ("both", attrs.evolve(ISSUE_SHAPE, produce_interval_ms=1_000, heartbeat_interval_ms=1_000,
                          session_timeout_ms=5_000)),
]


def main(argv: List[str]) -> int:
    seeds = int(argv[0]) if argv else 20
    instants = [0]
    instant = EventScheduler.instant

    def counted(self: EventScheduler) -> None:  # counting costs a call an instant, in every row alike
        instants[0] += 1
        instant(self)

    EventScheduler.instant = counted  # type: ignore[method-assign]
    print("| issue's shape, with | seeds per CPU-second | instants a seed | CPU us an instant | violated |")
    print("|---|---:|---:|---:|---:|")
    for label, config in ROWS:
        instants[0] = 0
        started = time.process_time()
        violated = sum(not run(seed, config).ok for seed in range(seeds))
        elapsed = time.process_time() - started
        print(f"| {label} | {seeds / elapsed:.2f} | {instants[0] / seeds:,.0f} | "
              f"{elapsed / instants[0] * 1e6:.0f} | {violated} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
