"""Run the comparison without pytest and print the table.

    python -m benchmarks.run                    # every size (kafka-python's sticky: minutes)
    python -m benchmarks.run --max-members 300  # skip the 1,000-member target size
"""
from __future__ import annotations

import argparse
import sys

from benchmarks import _report
from benchmarks._inputs import SIZES
from benchmarks._measure import PRIOR_SIDE, SCENARIOS, SIDES, STRATEGIES, measure
from benchmarks.bench_assignors import _rounds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-members", type=int, default=max(s.members for s in SIZES))
    parser.add_argument("--strategy", action="append", choices=STRATEGIES, help="repeatable; default: all")
    args = parser.parse_args(argv)
    results = []
    for size in (s for s in SIZES if s.members <= args.max_members):
        for strategy in args.strategy or STRATEGIES:
            for scenario in SCENARIOS:
                # The peer first: its fresh answer is where both sides' "leave" cases start.
                for side in sorted(SIDES, key=lambda side: side != PRIOR_SIDE):
                    measurement, _ = measure(strategy, side, scenario, size, _rounds(strategy, side, size))
                    results.append(measurement)
                    print(
                        f"{strategy:>18} {scenario:>5} {size.label:>10} {side:>12}: "
                        f"{measurement.best_s * 1000:10.2f} ms",
                        file=sys.stderr,
                        flush=True,
                    )
    print(_report.table(results))
    for line in _report.targets(results):
        print(line)
    markdown, plot = _report.save(results)
    print(f"markdown table: {markdown}")
    print(f"plot: {plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
