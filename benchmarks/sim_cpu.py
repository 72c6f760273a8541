"""Seeds and faults per CPU-second of the simulator at one shape, optionally beside another checkout.

    python -m benchmarks.sim_cpu                                  # the issue's shape, 10 seeds, 3 rounds
    python -m benchmarks.sim_cpu --shape campaign --seeds 60      # kgroup campaign's default shape
    python -m benchmarks.sim_cpu --shape issue-no-data            # the issue's shape without a data path
    python -m benchmarks.sim_cpu --base /tmp/base                 # and a base checkout, alternating

CPU time (``time.process_time``) of each round, in a fresh subprocess so every round pays the same
first-call costs; with ``--base`` (a directory holding another ``kgroup`` package, e.g. from ``git
archive <commit> kgroup | tar -x -C /tmp/base``) the base and this checkout alternate round by round,
so a shared machine's load falls on both alike.  Issue 28's goal: 5 seeds per CPU-second at the
issue's shape.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Dict, List

#: (members, partitions, duration_ms, max_faults, producers).  ``issue-no-data``: the issue's shape
#: without producers, so without any data path (no appends, fetches, processing or commits): the
#: floor of what the group protocol alone costs at that shape (docs/simulator.md, seventh round).
SHAPES = {"issue": (5, 12, 60_000, 8, 2), "campaign": (3, 6, 10_000, 5, 2),
          "issue-no-data": (5, 12, 60_000, 8, 0)}

_ROUND = """
import sys, time
from kgroup.sim import SimConfig, run
members, partitions, duration_ms, max_faults, producers, first, seeds = map(int, sys.argv[1:8])
config = SimConfig(members=members, partitions=partitions, duration_ms=duration_ms, max_faults=max_faults,
                   producers=producers)
run(99, SimConfig(members=3, partitions=6, duration_ms=3000))  # imports and first-call costs, not timed
started = time.process_time()
faults = violated = 0
for seed in range(first, first + seeds):
    verdict = run(seed, config)
    faults += len(verdict.schedule.faults)
    violated += not verdict.ok
cpu_s = time.process_time() - started
print(f"{seeds / cpu_s:.2f} {faults / cpu_s:.1f} {faults} {cpu_s:.2f} {violated}")
"""


def _round(path: str, shape: tuple, first: int, seeds: int) -> List[str]:
    out = subprocess.run([sys.executable, "-c", _ROUND, *map(str, shape), str(first), str(seeds)],
                         env={**os.environ, "PYTHONPATH": path}, cwd=path, capture_output=True, text=True,
                         check=True)  # cwd too: ``python -c`` puts the working directory first on sys.path
    return out.stdout.split()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sim_cpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="issue")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", help="another checkout's directory, run alternately")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkouts: Dict[str, str] = {"this": here}
    if args.base:
        checkouts = {"base": args.base, "this": here}
    last = args.first_seed + args.seeds - 1
    print(f"shape {args.shape} {SHAPES[args.shape]}, seeds {args.first_seed}-{last}")
    print("| checkout | round | seeds per CPU-second | faults per CPU-second | faults | CPU s | violated "
          "|")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for number in range(1, args.rounds + 1):
        for name, path in checkouts.items():
            rate, fault_rate, faults, cpu_s, violated = _round(path, SHAPES[args.shape], args.first_seed,
                                                               args.seeds)
            print(f"| {name} | {number} | {rate} | {fault_rate} | {faults} | {cpu_s} | {violated} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
